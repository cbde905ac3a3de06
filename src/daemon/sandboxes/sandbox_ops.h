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

#include "daemon/sandboxes/new_sandbox.h"
#include "daemon/core/daemon.h"
#include "daemon/sandboxes/registry.h"

/* Create, start, store and register a sandbox for `team`; its deadline
 * timer is armed. The runtime's slow part (the sandbox building its root)
 * runs while the loop serves others: `done` is called from the loop with the
 * sandbox, or with NULL and the error. With an Idempotency-Key that a live
 * sandbox of the team already carries, `done` gets that sandbox instead
 * (resumed if it was paused) with created = 0, possibly before this
 * returns; a create with the same key still in progress answers both when
 * it is ready. Returns -1 (and does not call done) when the request fails
 * at once: EAGAIN when the daemon is at max_sandboxes, ENOENT for an
 * unknown template. */
typedef void (*hu_sbx_created_fn)(struct hu_daemon *d, struct hu_sbx *s, int created, const hu_err *err,
				  void *arg);
int hu_sbx_create_async(struct hu_daemon *d, const char *team, const struct hu_new_sandbox *req,
			const char *idem_key, hu_sbx_created_fn done, void *arg, hu_err *err);
/* A sandbox for a warm pool (pool.h): the daemon's view of a create of
 * template_id with no request fields and no team, not stored, not built. */
int hu_sbx_new_pooled(struct hu_daemon *d, const char *template_id, struct hu_sbx **out, hu_err *err);
/* Memory and CPU (thousandths) that creates in progress will commit. */
void hu_sbx_pending_commitments(const struct hu_daemon *d, uint64_t *memory_bytes, uint64_t *cpu_millis);
/* Call fn for the sandbox of every create in progress. */
void hu_sbx_each_pending(const struct hu_daemon *d, void (*fn)(const struct hu_sbx *s, void *arg), void *arg);
/* Daemon shutdown: creates still in progress are finished and destroyed;
 * their callbacks get ECANCELED. */
void hu_sbx_abort_creates(struct hu_daemon *d);

/* Destroy the sandbox and forget it: runtime, store row, registry entry,
 * then s itself. s is gone even when this returns -1 (the error says what
 * could not be cleaned up, for the log). `why` is logged. (sbx_kill.c) */
int hu_sbx_kill(struct hu_daemon *d, struct hu_sbx *s, const char *why, hu_err *err);
/* The same without blocking the loop while init dies: s leaves the API at
 * once (registry, requests in flight), and `done` is called once the
 * teardown is complete, with NULL or what could not be cleaned up. */
typedef void (*hu_sbx_killed_fn)(struct hu_daemon *d, const hu_err *err, void *arg);
void hu_sbx_kill_async(struct hu_daemon *d, struct hu_sbx *s, const char *why, hu_sbx_killed_fn done, void *arg);
/* A hu_sbx_killed_fn for kills nobody waits for (timeouts, reclaims): a
 * teardown that left something behind is logged as a warning. */
void hu_sbx_killed_log(struct hu_daemon *d, const hu_err *err, void *arg);
/* Daemon shutdown: kills still waiting for an init to die are completed
 * (blocking, bounded by HU_SANDBOX_EXIT_WAIT_MS each). */
void hu_sbx_finish_kills(struct hu_daemon *d);

/* Freeze a running sandbox: CPU 0, memory kept, its deadline stops. With
 * release_memory (pause {"memory": false}, autoPauseMemory: false) its
 * memory is released right away (hu_sbx_release). EALREADY if paused
 * already (and released, when release_memory asks for that). */
int hu_sbx_pause(struct hu_daemon *d, struct hu_sbx *s, int release_memory, hu_err *err);
/* Memory release of a paused sandbox: every process ends, the files (its
 * writable layer) stay; a resume starts a fresh init over them. */
enum hu_release_reason {
	HU_RELEASE_ASKED,    /* the client asked (pause or resume without memory) */
	HU_RELEASE_IDLE,     /* paused longer than pause.release_after */
	HU_RELEASE_PRESSURE, /* the host is short of memory */
	HU_RELEASE_ROOM,     /* a create or resume needed its budget (commit.h) */
};
int hu_sbx_release(struct hu_daemon *d, struct hu_sbx *s, enum hu_release_reason reason, const char *why,
		   hu_err *err);
/* Resume a paused sandbox (EALREADY if running): thaw it, or restart its
 * init if its memory was released. The new deadline is now + timeout_s
 * (0: the sandbox's own window). */
int hu_sbx_resume(struct hu_daemon *d, struct hu_sbx *s, int32_t timeout_s, hu_err *err);

/* end_at = now + timeout_s (-1: never) and the window becomes timeout_s;
 * 0: end_at = now (the timeout action at once), the window unchanged. May
 * shorten the deadline, as E2B's setTimeout does. */
int hu_sbx_set_timeout(struct hu_daemon *d, struct hu_sbx *s, int32_t timeout_s, hu_err *err);
/* end_at = max(end_at, now + seconds): refreshes and connect never shorten. */
int hu_sbx_extend(struct hu_daemon *d, struct hu_sbx *s, int32_t seconds, hu_err *err);

/* now + timeout_s in unix ms, or HU_NEVER_MS for timeout -1. */
int64_t hu_sbx_idle_deadline(int32_t timeout_s);
/* s->timer for s (a new or an adopted sandbox), and (re)arming it at
 * end_at (no timer for HU_NEVER_MS). */
int hu_sbx_new_timer(struct hu_daemon *d, struct hu_sbx *s, hu_err *err);
void hu_sbx_arm_deadline(struct hu_sbx *s);
/* The runtime spec of s (create, and restarts over kept files). */
void hu_sbx_runtime_spec(const struct hu_daemon *d, const struct hu_sbx *s, struct hu_sandbox_spec *spec);

/* Does fn answer non-zero for any sandbox, registered or still being
 * created? (A volume in use cannot be deleted.) */
int hu_sbx_any(struct hu_daemon *d, int (*fn)(const struct hu_sbx *s, void *arg), void *arg);

#endif
