/*
 * Warm pools: per template, a few sandboxes built ahead of time, so that a
 * create answers with one of them instead of building a sandbox while the
 * client waits.
 *
 * A pool sandbox is a real sandbox made with the template's settings (the
 * server's default limits, the default network, no mounts) and no
 * per-request state. It gets its final API id when it is built (a fresh
 * random id that nobody has seen), so taking it renames nothing: the
 * create copies the request's fields around it and stores it as running.
 * It is taken at most once: hu_pool_take removes it from the pool before
 * it returns, and nothing puts a sandbox back once a create has used it
 * (only a create refused before using it returns it, hu_pool_put_back).
 *
 * Pool sandboxes are not in the registry (the API does not list them and
 * the data plane cannot reach them), but they are in the store as
 * `creating` rows with no team, so a daemon killed with a full pool finds
 * them at its next start and removes them like any interrupted create. A
 * clean shutdown destroys them. They count against admission (a ready one:
 * the memory and pids it holds, like a frozen sandbox; one being built:
 * its limits, commit.h) and max_sandboxes; a create that would be
 * refused for capacity first makes the pools give way
 * (hu_pool_give_way).
 *
 * Each pool follows demand: its target is the recent peak of concurrent
 * creates of its template: runs of creates each within HU_POOL_BURST_MS of
 * the one before
 * (HU_POOL_DEMAND_BUCKETS of
 * HU_POOL_DEMAND_BUCKET_MS: five minutes), at least its configured size
 * and at most pool.max; when the peak leaves the window the pool shrinks
 * back, HU_POOL_SHRINK_PER_TICK sandboxes a second. What it may hold is
 * also bounded by the budget: a build starts only while admission would
 * admit it.
 *
 * Refill runs on the loop, off the request path: a timer starts at most
 * HU_POOL_FILL_MAX builds at once and only while admission would accept
 * one more sandbox and the host is not under memory pressure.
 */
#ifndef HUTCH_DAEMON_POOL_H
#define HUTCH_DAEMON_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/core/daemon.h"
#include "daemon/sandboxes/registry.h"

#define HU_POOL_FILL_MAX 1 /* pool builds in flight at once, all pools together */

#define HU_POOL_DEMAND_BUCKETS 30
#define HU_POOL_DEMAND_BUCKET_MS 10000
#define HU_POOL_SHRINK_PER_TICK 2

/* Recent demand: the size of each burst of creates, the peak of each
 * bucket. A burst is a run of creates each within HU_POOL_BURST_MS of the
 * one before: what a pool must hold because it had no quiet moment to
 * refill in (the refill waits for the same quiet, pool.c). A gap rather
 * than a fixed window: a burst of 50 concurrent SDK creates reaches a
 * loaded daemon spread over several hundred ms (the client, and the cold
 * creates the pool was short of, delay the later ones), which a 100 ms
 * window counted as 30-40 and the pool stayed short. Bursts a client makes
 * one after another, each after the pool had a quiet moment, do not add
 * up; a run is counted up to HU_POOL_DEMAND_RECENT. */
#define HU_POOL_BURST_MS 100
#define HU_POOL_DEMAND_RECENT 256 /* = the largest pool.max */
struct hu_pool_demand {
	int64_t last_ms; /* the latest create (0: none yet) */
	unsigned run;    /* creates in the burst it belongs to */
	struct {
		int64_t epoch; /* ms / HU_POOL_DEMAND_BUCKET_MS it belongs to */
		unsigned peak;
	} bucket[HU_POOL_DEMAND_BUCKETS];
};
/* One create of the template at now_ms; busy: other creates were still
 * being built (cold) when it came, so it belongs to their burst whatever
 * the gap (a loop busy with cold creates reads the next request late). */
void hu_pool_demand_note(struct hu_pool_demand *dm, int64_t now_ms, int busy);
/* The peak of the window that ends at now_ms (0: no creates in it). */
unsigned hu_pool_demand_peak(const struct hu_pool_demand *dm, int64_t now_ms);

/* A set of ready pool sandboxes of one template (the bookkeeping, no I/O:
 * unit-tested on its own). */
struct hu_pool_set {
	char template_id[HU_ID_MAX];
	unsigned floor;       /* the configured size: kept whatever the demand */
	unsigned target;      /* wanted size: hu_pool_set_retarget */
	struct hu_pool_demand demand;
	unsigned filling;     /* builds in progress */
	struct hu_sbx **ready;
	size_t n_ready, cap;
	uint64_t taken, made; /* counters for /metrics */
};

/* Add a built sandbox to the ready list. */
int hu_pool_set_push(struct hu_pool_set *ps, struct hu_sbx *s, hu_err *err);
/* Remove and return the ready sandbox that fits (same memory, CPU, disk
 * and network as `want`), or NULL. The newest first: its pages are the
 * likeliest to be warm. */
struct hu_sbx *hu_pool_set_take(struct hu_pool_set *ps, const struct hu_sbx *want);
/* Remove and return any ready sandbox (the oldest), or NULL. */
struct hu_sbx *hu_pool_set_pop_oldest(struct hu_pool_set *ps);
/* Builds to start now to reach target (ready + filling counted). */
unsigned hu_pool_set_missing(const struct hu_pool_set *ps);
/* target = the demand's peak, at least floor, at most max; returns it. */
unsigned hu_pool_set_retarget(struct hu_pool_set *ps, unsigned max, int64_t now_ms);
/* Ready sandboxes beyond target (what a shrink removes, oldest first). */
unsigned hu_pool_set_surplus(const struct hu_pool_set *ps);

/* The configured size of template_id's pool: pool.size.<template> if set,
 * else pool.size for `base`, else 0. */
unsigned hu_pool_size_for(const struct hu_config *cfg, const char *template_id);

/* Daemon side. hu_pool_start after adoption and the start-up sweep (the
 * pools fill from then on); hu_pool_stop at shutdown destroys every pool
 * sandbox and finishes builds in flight. */
int hu_pool_start(struct hu_daemon *d, hu_err *err);
void hu_pool_stop(struct hu_daemon *d);

/* Remove the ready pool sandboxes whose hutch-init has exited (the OOM
 * killer, an operator) and refill: the lifecycle tick calls it every second,
 * so a dead one neither waits for a take nor holds its files and cgroup. */
void hu_pool_reap_dead(struct hu_daemon *d);
/* Destroy the ready pool sandboxes of a template about to be deleted (they
 * hold its files mounted). Returns how many of its pool sandboxes are
 * still being built (the delete must wait for them). */
unsigned hu_pool_drop_template(struct hu_daemon *d, const char *template_id);
/* A ready sandbox for a create whose daemon view is `want` (template,
 * limits, network; no mounts), removed from its pool, or NULL. The caller
 * owns it from then on: it becomes the request's sandbox
 * (hu_pool_adopt_into) or is destroyed (hu_pool_discard). A refill is
 * scheduled either way. */
struct hu_sbx *hu_pool_take(struct hu_daemon *d, const struct hu_sbx *want);
/* Move pool sandbox p's id and runtime handle into s (the request's
 * sandbox, not yet stored), replace p's store row by nothing, free p. */
void hu_pool_adopt_into(struct hu_sbx *s, struct hu_sbx *p);
/* Return a taken pool sandbox that a create refused by admission never
 * used (its id and runtime untouched) to its pool; destroyed if the pool
 * is gone or full. */
void hu_pool_put_back(struct hu_daemon *d, struct hu_sbx *p);
/* Destroy a taken pool sandbox that will not be used. */
void hu_pool_discard(struct hu_daemon *d, struct hu_sbx *p);
/* Admission wants room: destroy one pool sandbox (the fullest pool's
 * oldest). 1 if one was destroyed, 0 if the pools hold none. */
int hu_pool_give_way(struct hu_daemon *d);
/* Pool sandboxes (ready and being built), and what they commit. */
unsigned hu_pool_count(const struct hu_daemon *d);
struct hu_commit_ledger;
void hu_pool_commitments(const struct hu_daemon *d, struct hu_commit_ledger *l);

/* GET /metrics: pool sizes, targets and demand peaks per template. */
struct evbuffer;
void hu_pool_render(const struct hu_daemon *d, struct evbuffer *out);

#endif
