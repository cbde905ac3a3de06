/* The lifecycle engine (lifecycle.h). */
#include "daemon/sandboxes/lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/host_pressure.h"
#include "daemon/sandboxes/host_readings.h"
#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/common/stats.h"
#include "daemon/sandboxes/sbx_store.h"
#include "daemon/store/store.h"
#include "util/clock.h"

#define TICK_MS 1000
#define PRESSURE_RELEASES_PER_TICK 4 /* at most: each costs a kill and a wait */
#define LOST_KEEP_MS (7LL * 86400 * 1000)
#define LOST_PURGE_EVERY_TICKS 3600

/* ---- activity ------------------------------------------------------------ */

void hu_sbx_touch(struct hu_sbx *s)
{
	int64_t now = hu_wall_ms();

	s->last_active_ms = now;
	if (s->state != HU_SBX_RUNNING || s->timeout_s <= 0)
		return;
	int64_t end = now + (int64_t)s->timeout_s * 1000;
	/* the timer is not moved: when it fires early it re-arms itself at
	 * the new deadline (sandbox_ops.c), so a busy sandbox costs no timer
	 * work per request */
	if (end > s->end_at_ms) {
		s->end_at_ms = end;
		s->dirty = 1;
	}
}

void hu_sbx_stream_begin(struct hu_sbx *s)
{
	s->active++;
	hu_sbx_touch(s);
}

void hu_sbx_stream_end(struct hu_sbx *s)
{
	if (s->active)
		s->active--;
	hu_sbx_touch(s); /* the idle window starts when the work ends */
}

static int64_t end_at(const struct hu_daemon *d, enum hu_sbx_state state, int64_t end_at_ms, int64_t paused_at_ms,
		      int32_t reclaim_after_s)
{
	if (state != HU_SBX_PAUSED)
		return end_at_ms;
	int32_t after = reclaim_after_s ? reclaim_after_s : (int32_t)d->cfg.reclaim_after_s;
	return after < 0 ? HU_NEVER_MS : paused_at_ms + (int64_t)after * 1000;
}

int64_t hu_lifecycle_end_at(const struct hu_daemon *d, const struct hu_sbx *s)
{
	return end_at(d, s->state, s->end_at_ms, s->paused_at_ms, s->reclaim_after_s);
}

/* reclaim.after is the node's setting: the nodes of a cluster are expected
 * to share it (docs/operations.md "Several nodes") */
int64_t hu_lifecycle_row_end_at(const struct hu_daemon *d, const struct hu_sandbox_row *row)
{
	return end_at(d, row->state, row->end_at_ms, row->paused_at_ms, row->reclaim_after_s);
}

/* ---- memory pressure ------------------------------------------------------ */

struct psi_gather {
	struct hu_sbx_psi *v;
	size_t n, cap;
};

static int gather_psi(struct hu_sbx *s, void *arg)
{
	struct psi_gather *g = arg;
	struct hu_cgroup_stats st;
	uint64_t disk;
	hu_err ignored;

	if (s->state != HU_SBX_RUNNING || !s->rt || g->n == g->cap)
		return 0;
	double psi = hu_sandbox_memory_psi(s->rt);
	if (psi <= HU_PSI_STALL_MIN)
		return 0;
	int at_limit = hu_sandbox_stats(s->rt, &st, &disk, &ignored) == 0 && st.memory_limit &&
		       (double)st.memory_bytes >= HU_AT_LIMIT_SHARE * (double)st.memory_limit;
	g->v[g->n++] = (struct hu_sbx_psi){.some_avg10 = psi, .at_own_limit = at_limit};
	return 0;
}

int hu_lifecycle_under_pressure(struct hu_daemon *d, char *why, size_t n)
{
	const struct hu_config *cfg = &d->cfg;
	struct hu_host_readings host;
	hu_err ignored;

	if (hu_host_readings(&host, &ignored) < 0)
		return 0;
	uint64_t min = cfg->pressure_min_available ? cfg->pressure_min_available : host.mem_total / 20;
	if (host.mem_available < min) {
		snprintf(why, n, "MemAvailable %llu MiB is below %llu MiB", (unsigned long long)(host.mem_available >> 20),
			 (unsigned long long)(min >> 20));
		return 1;
	}
	double psi = host.psi_some_avg10;
	if (psi <= (double)cfg->pressure_psi_avg10)
		return 0;
	/* over the threshold host-wide: is it the host's, or sandboxes
	 * stalling at their own limits? (read only in this case) */
	struct psi_gather g = {.cap = d->reg ? hu_registry_count(d->reg) : 0};
	if (g.cap && (g.v = calloc(g.cap, sizeof(*g.v))))
		hu_registry_each(d->reg, gather_psi, &g);
	double own = hu_host_own_psi(psi, d->rt ? hu_runtime_sandboxes_memory_psi(d->rt) : -1, g.v, g.n);
	size_t self = 0;
	for (size_t i = 0; i < g.n; i++)
		self += g.v[i].at_own_limit;
	free(g.v);
	if (own <= (double)cfg->pressure_psi_avg10)
		return 0;
	if (self)
		snprintf(why, n, "memory PSI some avg10 %.1f%% host-wide, %.1f%% without the %zu sandbox(es) stalling at "
			 "their own memory limit, is above %u%%", psi, own, self, cfg->pressure_psi_avg10);
	else
		snprintf(why, n, "memory PSI some avg10 %.1f%% is above %u%%", psi, cfg->pressure_psi_avg10);
	return 1;
}

/* ---- the tick ------------------------------------------------------------- */

int hu_sbx_list_add(struct hu_sbx_list *l, struct hu_sbx *s)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void *grown = realloc(l->v, cap * sizeof(*l->v));
		if (!grown)
			return -1;
		l->v = grown;
		l->cap = cap;
	}
	l->v[l->n++] = s;
	return 0;
}

struct tick_work {
	struct hu_daemon *d;
	int64_t now;
	struct hu_sbx_list save, reclaim, release, holding; /* holding: paused, memory kept */
};

static int classify(struct hu_sbx *s, void *arg)
{
	struct tick_work *w = arg;
	const struct hu_config *cfg = &w->d->cfg;

	/* a list that cannot grow misses a sandbox: the next tick gets it */
	if (s->dirty)
		hu_sbx_list_add(&w->save, s);
	if (s->state != HU_SBX_PAUSED)
		return 0;
	int64_t reclaim_at = hu_lifecycle_end_at(w->d, s);
	if (reclaim_at != HU_NEVER_MS && w->now >= reclaim_at)
		hu_sbx_list_add(&w->reclaim, s);
	else if (!s->released && cfg->release_after_s &&
		 w->now - s->paused_at_ms >= (int64_t)cfg->release_after_s * 1000)
		hu_sbx_list_add(&w->release, s);
	else if (!s->released)
		hu_sbx_list_add(&w->holding, s);
	return 0;
}

static int by_last_active(const void *a, const void *b)
{
	const struct hu_sbx *x = *(struct hu_sbx *const *)a, *y = *(struct hu_sbx *const *)b;
	return x->last_active_ms < y->last_active_ms ? -1 : x->last_active_ms > y->last_active_ms;
}

/* Deadlines moved by activity reach the store in one transaction. */
static void save_moved(struct hu_daemon *d, struct hu_sbx_list *l)
{
	hu_err err;

	if (!l->n)
		return;
	if (hu_store_begin(d->store, &err) < 0) {
		hu_log(HU_LOG_WARN, NULL, 0, "save deadlines: %s", err.msg);
		return;
	}
	for (size_t i = 0; i < l->n; i++) {
		if (hu_sbx_store_put(d->store, l->v[i], &err) < 0) {
			hu_log(HU_LOG_WARN, l->v[i]->id, 0, "save deadline: %s", err.msg);
			continue;
		}
		l->v[i]->dirty = 0;
	}
	if (hu_store_commit(d->store, &err) < 0) {
		hu_log(HU_LOG_WARN, NULL, 0, "save deadlines: %s", err.msg);
		for (size_t i = 0; i < l->n; i++)
			l->v[i]->dirty = 1;
	}
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
	struct hu_daemon *d = arg;
	struct tick_work w = {.d = d, .now = hu_wall_ms()};
	char why[160];
	hu_err err;

	hu_registry_each(d->reg, classify, &w);
	save_moved(d, &w.save);
	for (size_t i = 0; i < w.reclaim.n; i++) {
		struct hu_sbx *s = w.reclaim.v[i];
		snprintf(why, sizeof(why), "reclaimed: paused since %lld s", (long long)((w.now - s->paused_at_ms) / 1000));
		hu_stat_add(HU_STAT_RECLAIMS, 1);
		hu_sbx_kill_async(d, s, why, hu_sbx_killed_log, NULL);
	}
	for (size_t i = 0; i < w.release.n; i++) {
		if (hu_sbx_release(d, w.release.v[i], HU_RELEASE_IDLE, "paused longer than pause.release_after", &err) < 0)
			hu_log(HU_LOG_WARN, w.release.v[i]->id, 0, "%s", err.msg);
	}
	if (w.holding.n && hu_lifecycle_under_pressure(d, why, sizeof(why))) {
		qsort(w.holding.v, w.holding.n, sizeof(*w.holding.v), by_last_active);
		for (size_t i = 0; i < w.holding.n && i < PRESSURE_RELEASES_PER_TICK; i++) {
			char reason[200];
			snprintf(reason, sizeof(reason), "memory pressure: %s", why);
			if (hu_sbx_release(d, w.holding.v[i], HU_RELEASE_PRESSURE, reason, &err) < 0)
				hu_log(HU_LOG_WARN, w.holding.v[i]->id, 0, "%s", err.msg);
		}
	}
	hu_pool_reap_dead(d);
	if (++d->lifecycle_ticks % LOST_PURGE_EVERY_TICKS == 0 &&
	    hu_store_lost_purge(d->store, w.now - LOST_KEEP_MS, &err) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "%s", err.msg);
	free(w.save.v);
	free(w.reclaim.v);
	free(w.release.v);
	free(w.holding.v);
}

int hu_lifecycle_start(struct hu_daemon *d, hu_err *err)
{
	struct timeval every = {TICK_MS / 1000, (TICK_MS % 1000) * 1000};

	d->lifecycle_tick = event_new(d->base, -1, EV_PERSIST, tick, d);
	if (!d->lifecycle_tick || event_add(d->lifecycle_tick, &every) < 0)
		return hu_err_set(err, ENOMEM, "lifecycle timer");
	return 0;
}

static int collect_dirty(struct hu_sbx *s, void *arg)
{
	if (s->dirty)
		hu_sbx_list_add(arg, s);
	return 0;
}

void hu_lifecycle_stop(struct hu_daemon *d)
{
	struct hu_sbx_list dirty = {0};

	if (d->lifecycle_tick)
		event_free(d->lifecycle_tick);
	d->lifecycle_tick = NULL;
	if (!d->reg || !d->store)
		return;
	hu_registry_each(d->reg, collect_dirty, &dirty);
	save_moved(d, &dirty);
	free(dirty.v);
}
