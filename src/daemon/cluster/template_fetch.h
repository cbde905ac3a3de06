/*
 * Templates reach every node of a cluster (docs/operations.md "Several
 * nodes"). A template built on a node is recorded in the store with the
 * checksum of its transfer stream (template.h hu_tpl_export, taken at build
 * time) once the node publishes it with its lease. Placement prefers the
 * nodes that have a create's template; when none of them has room it picks
 * another, which fetches the template before it creates:
 *
 *   GET /cluster/templates/<id>       (from a node that has it)
 *   X-Hutch-Forwarded: <proof>        (forward_auth.h: cluster.secret's HMAC
 *                                      over the method and target, fresh)
 *   200, application/x-tar            (the transfer stream, chunked)
 *
 * The fetching node writes the stream to a private file beside its
 * templates while it hashes it, compares the hash with the store's
 * checksum, and only then unpacks it (in a thread, off the event loop)
 * through the template writer that every archive goes through (template.h
 * hu_tpl_import_tar: names resolved beneath the tree, no "..", no absolute
 * paths, caps) into a staged directory that is renamed into place. Any
 * failure (the node unreachable, a truncated or corrupt stream, a checksum
 * that does not match, a refused entry) removes what was written and
 * answers the create with the reason. The creates that wait for one
 * template share its one fetch.
 */
#ifndef HUTCH_DAEMON_CLUSTER_TEMPLATE_FETCH_H
#define HUTCH_DAEMON_CLUSTER_TEMPLATE_FETCH_H

#include <stdbool.h>

#include "daemon/core/daemon.h"
#include "daemon/http/request.h"

#define HU_TPL_FETCH_PATH "/cluster/templates/"
#define HU_TPL_FETCH_TIMEOUT_S 60    /* without a byte from the sending node */
#define HU_TPL_FETCH_LOG_BYTES (64u << 20) /* a progress line every 64 MiB */

/* A create of template_id is about to be made here: 0 when the template is
 * here, or when the store does not record it (the create goes on and
 * answers as it would), 1 when r is answered or held: the template is
 * being fetched, and then `create` runs with r (or r is answered with why
 * the fetch failed); the reservation `placement` ("" for none) is ended
 * either way. */
int hu_cluster_template_fetch(struct hu_req *r, const char *template_id, hu_handler create, const char *placement);

/* GET /cluster/templates/<id> from another node (forwarded: its proof was
 * checked); anyone else is refused (403). */
void hu_cluster_template_serve(struct hu_req *r, bool forwarded);

/* After a renewal: record in the store the templates of this node that it
 * has not recorded yet (those built here have a checksum). */
struct hu_cluster;
void hu_cluster_templates_publish(struct hu_cluster *c);

/* End the fetches in flight (at shutdown: their requests are gone). */
void hu_cluster_template_fetch_abort_all(struct hu_cluster *c);

#endif
