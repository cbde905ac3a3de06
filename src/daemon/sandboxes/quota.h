/*
 * Per-team quotas (config quota.sandboxes, quota.memory, quota.builds; the
 * same for every team, 0 = none). Admission control (admission.h) protects
 * the host; quotas keep one API key from taking all of it from the others.
 * Over quota is EAGAIN (429) with a message naming the quota and the use.
 */
#ifndef HUTCH_DAEMON_QUOTA_H
#define HUTCH_DAEMON_QUOTA_H

#include <stdint.h>

#include "daemon/core/daemon.h"

struct hu_team_use {
	unsigned sandboxes;     /* running, or being created */
	uint64_t memory_bytes;  /* limits of those holding memory (running, paused unreleased, creating) */
};

/* What `team` uses now (registry and creates in progress; no side effects). */
void hu_team_use(struct hu_daemon *d, const char *team, struct hu_team_use *use);

/* May `team` start one more sandbox of memory_bytes? 0, or -1 with EAGAIN. */
int hu_quota_check_sandbox(struct hu_daemon *d, const char *team, uint64_t memory_bytes, hu_err *err);

/* May paused sandbox s run again (it counts as one more running sandbox,
 * and its memory again if it was released)? */
struct hu_sbx;
int hu_quota_check_resume(struct hu_daemon *d, const struct hu_sbx *s, hu_err *err);

/* May `team`, with `running` builds in progress, start one more? */
int hu_quota_check_build(const struct hu_daemon *d, const char *team, unsigned running, hu_err *err);

#endif
