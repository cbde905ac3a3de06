/*
 * The lifecycle engine: the decisions a sandbox service makes on its own,
 * from its own state (docs/api.md "Lifecycle").
 *
 *   running --idle timeout--> paused (frozen) --release_after or memory
 *   pressure--> paused, memory released --reclaim.after--> deleted
 *
 * A once-a-second tick saves moved deadlines, releases memory and
 * reclaims; hu_lifecycle_adopt takes over, at start, what a previous
 * daemon left (running sandboxes keep running).
 */
#ifndef HUTCH_DAEMON_LIFECYCLE_H
#define HUTCH_DAEMON_LIFECYCLE_H

#include "daemon/core/daemon.h"
#include "daemon/sandboxes/registry.h"

/* Re-adopt every sandbox in the store: running ones keep running, paused
 * ones stay paused, deadlines continue from the stored endAt. Interrupted
 * creates and kills are finished; a sandbox whose init died meanwhile is
 * cleaned up and recorded as lost. Needs d->base, d->reg, d->rt, d->store. */
int hu_lifecycle_adopt(struct hu_daemon *d, hu_err *err);
/* Start / stop the tick (stop saves what is pending). */
int hu_lifecycle_start(struct hu_daemon *d, hu_err *err);
void hu_lifecycle_stop(struct hu_daemon *d);

/* The deadline a client sees as endAt: the idle deadline of a running
 * sandbox, the reclaim time of a paused one (HU_NEVER_MS: none). */
int64_t hu_lifecycle_end_at(const struct hu_daemon *d, const struct hu_sbx *s);
/* The same from a stored row (another node's sandbox, listed here). */
int64_t hu_lifecycle_row_end_at(const struct hu_daemon *d, const struct hu_sandbox_row *row);

/* A growing list of sandboxes (the tick's work lists, adoption's rows). */
struct hu_sbx_list {
	struct hu_sbx **v;
	size_t n, cap;
};
/* Append s; -1 (and s not added) when the list cannot grow. */
int hu_sbx_list_add(struct hu_sbx_list *l, struct hu_sbx *s);

/* Host memory pressure, as the settings define it: 1 and why, or 0. PSI
 * counts the host's own stalls only (host_pressure.h). */
int hu_lifecycle_under_pressure(struct hu_daemon *d, char *why, size_t n);

#endif
