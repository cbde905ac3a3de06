/*
 * A node's copy of a template that was rebuilt under the same id on
 * another node (docs/operations.md "Several nodes"). The store records the
 * latest build of each id (its checksum and time): a copy with another
 * checksum and an older build time is stale, and the next create of the
 * template fetches the new build (template_fetch.h). The new copy takes
 * the id's place with two renames; the old one is set aside as
 * templates/.stale-<id>-<ms>, where the sandboxes that run on it (their
 * mounts hold it) keep it, and it is removed once no sandbox of the
 * template that started before <ms> is left.
 */
#ifndef HUTCH_DAEMON_CLUSTER_TEMPLATE_STALE_H
#define HUTCH_DAEMON_CLUSTER_TEMPLATE_STALE_H

#include <stddef.h>

#include "daemon/core/daemon.h"
#include "daemon/store/rows.h"
#include "template/template.h"

#define HU_TPL_STALE_PREFIX ".stale-"

/* Is the copy described by m older than the build the store records? 1
 * (*row filled: the record to fetch; free row->meta), 0 (it is current, it
 * was built here, or the store has no record or cannot be read now: the
 * copy serves). */
int hu_cluster_template_stale(struct hu_daemon *d, const struct hu_tpl_meta *m, struct hu_template_row *row);

/* templates_dir/id moves to templates_dir/.stale-<id>-<now ms> (its name
 * then in aside, cap n; "" when there was nothing to move). */
int hu_cluster_template_set_aside(const char *templates_dir, const char *id, char *aside, size_t n, hu_err *err);

/* Remove the set-aside copies that no sandbox runs on any more (from the
 * lease renewal, every 2 s; the removal runs off the loop). */
struct hu_cluster;
void hu_cluster_templates_sweep(struct hu_cluster *c);

#endif
