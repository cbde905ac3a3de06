/*
 * The operations on a sandbox that the API handlers and the daemon's timers
 * share: create, kill, pause, resume and deadline changes. Each keeps the
 * three views of a sandbox in step: the runtime (processes), the store (the
 * source of truth on disk) and the registry (what this process holds).
 * A failed operation leaves all three as they were.
 */
#ifndef HUTCH_DAEMON_SANDBOX_OPS_H
#define HUTCH_DAEMON_SANDBOX_OPS_H

#include <stdint.h>

#include "daemon/api_json.h"
#include "daemon/daemon.h"
#include "daemon/registry.h"

/* The runtime template an E2B templateID names, or NULL if none (404). */
const char *hu_template_resolve(const char *template_id);

/* Create, start, store and register a sandbox for `team`; its deadline
 * timer is armed. The runtime's slow part (the sandbox building its root)
 * runs while the loop serves others: `done` is called from the loop with the
 * sandbox, or with NULL and the error. Returns -1 (and does not call done)
 * when the request fails at once: EAGAIN when the daemon is at
 * max_sandboxes, ENOENT for an unknown template. */
typedef void (*hu_sbx_created_fn)(struct hu_daemon *d, struct hu_sbx *s, const hu_err *err, void *arg);
int hu_sbx_create_async(struct hu_daemon *d, const char *team, const struct hu_new_sandbox *req,
			hu_sbx_created_fn done, void *arg, hu_err *err);
/* Daemon shutdown: creates still in progress are finished and destroyed;
 * their callbacks get ECANCELED. */
void hu_sbx_abort_creates(struct hu_daemon *d);

/* Destroy the sandbox and forget it: runtime, store row, registry entry,
 * then s itself. s is gone even when this returns -1 (the error says what
 * could not be cleaned up, for the log). `why` is logged. */
int hu_sbx_kill(struct hu_daemon *d, struct hu_sbx *s, const char *why, hu_err *err);

/* Freeze a running sandbox (EALREADY if paused). Its deadline stops: a
 * paused sandbox does not expire (until the lifecycle issue's reclaim). */
int hu_sbx_pause(struct hu_daemon *d, struct hu_sbx *s, hu_err *err);
/* Thaw a paused sandbox (EALREADY if running) with a new deadline of
 * now + timeout_s (0: the sandbox's own timeout). */
int hu_sbx_resume(struct hu_daemon *d, struct hu_sbx *s, int32_t timeout_s, hu_err *err);

/* end_at = now + timeout_s (0: the daemon's default); the window becomes
 * timeout_s. May shorten the deadline, as E2B's setTimeout does. */
int hu_sbx_set_timeout(struct hu_daemon *d, struct hu_sbx *s, int32_t timeout_s, hu_err *err);
/* end_at = max(end_at, now + seconds): refreshes and connect never shorten. */
int hu_sbx_extend(struct hu_daemon *d, struct hu_sbx *s, int32_t seconds, hu_err *err);

/* Kill every sandbox (daemon shutdown). Until re-adoption after a restart
 * exists (lifecycle issue), a sandbox left behind would be unreachable, so
 * the daemon destroys them on the way out; call before hu_registry_free. */
void hu_sbx_kill_all(struct hu_daemon *d, const char *why);

/* Does fn answer non-zero for any sandbox, registered or still being
 * created? (A volume in use cannot be deleted.) */
int hu_sbx_any(struct hu_daemon *d, int (*fn)(const struct hu_sbx *s, void *arg), void *arg);

#endif
