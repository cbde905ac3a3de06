/* Warm pools (pool.h). */
#include "daemon/sandboxes/pool.h"

#include <event2/buffer.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/admission.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/sandboxes/sbx_metrics.h"
#include "daemon/common/stats.h"
#include "daemon/sandboxes/templates.h"
#include "daemon/sandboxes/tpl_start.h"
#include "daemon/sandboxes/sbx_store.h"
#include "daemon/store/store.h"
#include "util/clock.h"
#include "util/slist.h"

#define REFILL_RETRY_MS 1000 /* a refill that admission or pressure held back tries again */
#define REFILL_BUSY_MS 20     /* requests' creates in progress go first */
/* after a take: a burst of creates is rarely one request, and a build in
 * the middle of one takes the loop and a core from the creates still to
 * come; the same quiet as ends a burst (pool.h) */
#define REFILL_QUIET_MS HU_POOL_BURST_MS
/* but no later than this after the first take it waits for: a steady
 * stream of creates never leaves the quiet, and must not starve the pool */
#define REFILL_QUIET_MAX_MS 500
#define BUILD_TIMEOUT_S 15

/* ---- bookkeeping (no I/O) ------------------------------------------------ */

int hu_pool_set_push(struct hu_pool_set *ps, struct hu_sbx *s, hu_err *err)
{
	if (ps->n_ready == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 4;
		struct hu_sbx **v = realloc(ps->ready, cap * sizeof(*v));
		if (!v)
			return hu_err_set(err, ENOMEM, "pool of %s", ps->template_id);
		ps->ready = v;
		ps->cap = cap;
	}
	ps->ready[ps->n_ready++] = s;
	return 0;
}

/* The settings a pool sandbox was built with that a request must share. */
static int fits(const struct hu_sbx *p, const struct hu_sbx *want)
{
	return p->memory_bytes == want->memory_bytes && p->cpu_millis == want->cpu_millis &&
	       p->disk_bytes == want->disk_bytes && p->internet == want->internet;
}

static struct hu_sbx *remove_at(struct hu_pool_set *ps, size_t i)
{
	struct hu_sbx *s = ps->ready[i];
	memmove(&ps->ready[i], &ps->ready[i + 1], (ps->n_ready - i - 1) * sizeof(*ps->ready));
	ps->n_ready--;
	return s;
}

struct hu_sbx *hu_pool_set_take(struct hu_pool_set *ps, const struct hu_sbx *want)
{
	for (size_t i = ps->n_ready; i-- > 0;) {
		if (!fits(ps->ready[i], want))
			continue;
		ps->taken++;
		return remove_at(ps, i);
	}
	return NULL;
}

struct hu_sbx *hu_pool_set_pop_oldest(struct hu_pool_set *ps)
{
	return ps->n_ready ? remove_at(ps, 0) : NULL;
}

unsigned hu_pool_set_missing(const struct hu_pool_set *ps)
{
	size_t have = ps->n_ready + ps->filling;
	return have >= ps->target ? 0 : (unsigned)(ps->target - have);
}

void hu_pool_demand_note(struct hu_pool_demand *dm, int64_t now_ms, int busy)
{
	int64_t epoch = now_ms / HU_POOL_DEMAND_BUCKET_MS;
	unsigned i = (unsigned)(epoch % HU_POOL_DEMAND_BUCKETS);

	/* the same burst while the gap stays short (a clock that went back
	 * too: never a negative gap read as a long one) */
	if (dm->last_ms && (busy || now_ms - dm->last_ms < HU_POOL_BURST_MS))
		dm->run = dm->run < HU_POOL_DEMAND_RECENT ? dm->run + 1 : HU_POOL_DEMAND_RECENT;
	else
		dm->run = 1;
	dm->last_ms = now_ms;
	if (dm->bucket[i].epoch != epoch) {
		dm->bucket[i].epoch = epoch;
		dm->bucket[i].peak = 0;
	}
	if (dm->run > dm->bucket[i].peak)
		dm->bucket[i].peak = dm->run;
}

unsigned hu_pool_demand_peak(const struct hu_pool_demand *dm, int64_t now_ms)
{
	int64_t epoch = now_ms / HU_POOL_DEMAND_BUCKET_MS;
	unsigned peak = 0;

	for (unsigned i = 0; i < HU_POOL_DEMAND_BUCKETS; i++) {
		int64_t e = dm->bucket[i].epoch;
		/* a bucket of the window (a clock that went back keeps it too) */
		if (e > epoch - HU_POOL_DEMAND_BUCKETS && dm->bucket[i].peak > peak)
			peak = dm->bucket[i].peak;
	}
	return peak;
}

unsigned hu_pool_set_retarget(struct hu_pool_set *ps, unsigned max, int64_t now_ms)
{
	unsigned t = hu_pool_demand_peak(&ps->demand, now_ms);

	if (t < ps->floor)
		t = ps->floor;
	if (t > max && max >= ps->floor)
		t = max;
	ps->target = t;
	return t;
}

unsigned hu_pool_set_surplus(const struct hu_pool_set *ps)
{
	return ps->n_ready > ps->target ? (unsigned)(ps->n_ready - ps->target) : 0;
}

unsigned hu_pool_size_for(const struct hu_config *cfg, const char *template_id)
{
	for (unsigned i = 0; i < cfg->n_pool_sizes; i++)
		if (!strcmp(cfg->pool_sizes[i].template_id, template_id))
			return cfg->pool_sizes[i].size;
	return strcmp(template_id, "base") ? 0 : cfg->pool_size;
}

/* ---- the daemon's pools ---------------------------------------------------- */

/* A pool sandbox being built: its runtime's create, then (a template with
 * a start command or a readiness check) the start until the check passes. */
struct build {
	struct hu_pools *pools;
	struct hu_pool_set *ps;
	struct hu_sbx *s;
	struct event *ready;
	int starting; /* created; waiting for the template's start (tpl_start.h) */
	struct build *next;
};

struct hu_pools {
	struct hu_daemon *d;
	struct hu_pool_set *sets;
	size_t n_sets;
	struct build *building;
	unsigned n_building; /* in the create phase (HU_POOL_FILL_MAX bounds them); starting ones wait apart */
	struct event *refill; /* the refill step: soon after a take, and every REFILL_RETRY_MS */
	int64_t quiet_since_ms; /* mono ms of the first take the refill waits quiet after (0: none) */
	int stopping;
};

static void schedule(struct hu_pools *pl, int64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	if (!pl->stopping)
		evtimer_add(pl->refill, &tv);
}

/* After a take: the refill waits for REFILL_QUIET_MS without one, and at
 * most REFILL_QUIET_MAX_MS from the first take it waited for. */
static void schedule_after_take(struct hu_pools *pl)
{
	int64_t now = hu_mono_ms();

	if (!pl->quiet_since_ms)
		pl->quiet_since_ms = now;
	int64_t left = pl->quiet_since_ms + REFILL_QUIET_MAX_MS - now;
	schedule(pl, left < REFILL_QUIET_MS ? (left > 0 ? left : 0) : REFILL_QUIET_MS);
}

/* Remove a pool sandbox: its processes and files, then its row. */
static void destroy(struct hu_daemon *d, struct hu_sbx *s)
{
	hu_err e;

	if (s->rt && hu_sandbox_destroy(s->rt, &e) < 0)
		hu_log(HU_LOG_WARN, s->id, 0, "pool sandbox: %s", e.msg);
	s->rt = NULL;
	if (hu_store_sandbox_delete(d->store, s->id, &e) < 0)
		hu_log(HU_LOG_WARN, s->id, 0, "pool sandbox: %s", e.msg);
	hu_sbx_free(s);
}

static void build_unlink(struct build *b)
{
	HU_SLIST_UNLINK(&b->pools->building, b);
	if (!b->starting)
		b->pools->n_building--;
	b->ps->filling--;
	if (b->ready)
		event_free(b->ready);
}

static void build_failed(struct build *b, const char *msg)
{
	struct hu_pools *pl = b->pools;

	hu_log(HU_LOG_WARN, b->s->id, 0, "pool sandbox of %s: %s", b->ps->template_id, msg);
	hu_stat_add(HU_STAT_POOL_FAILS, 1);
	destroy(pl->d, b->s);
	free(b);
	schedule(pl, REFILL_RETRY_MS); /* not in a tight loop */
}

static void pool_ready(struct build *b);

/* The template's start command ran and its readiness check passed (or not). */
static void on_started(void *arg, const hu_err *why)
{
	struct build *b = arg;

	build_unlink(b);
	if (why) {
		build_failed(b, why->msg);
		return;
	}
	pool_ready(b);
}

static void on_built(evutil_socket_t fd, short what, void *arg)
{
	struct build *b = arg;
	struct hu_pools *pl = b->pools;
	struct hu_sbx *s = b->s;
	hu_err err;

	if (hu_sandbox_create_finish(s->rt, &err) < 0) {
		build_unlink(b);
		s->rt = NULL; /* freed by finish */
		build_failed(b, err.msg);
		return;
	}
	/* a template with a start command: the sandbox waits here until its readiness check passes (a create
	 * that takes it then finds the server up), out of the create phase's limit */
	event_free(b->ready);
	b->ready = NULL;
	b->starting = 1;
	pl->n_building--;
	int rc = pl->stopping ? 0 : hu_tpl_start_sandbox(pl->d, s, on_started, b, &err);
	if (rc > 0) {
		schedule(pl, 0);
		return;
	}
	build_unlink(b);
	if (rc < 0) {
		build_failed(b, err.msg);
		return;
	}
	pool_ready(b);
}

static void pool_ready(struct build *b)
{
	struct hu_pools *pl = b->pools;
	struct hu_sbx *s = b->s;
	hu_err err;

	if (hu_pool_set_push(b->ps, s, &err) < 0) {
		hu_log(HU_LOG_WARN, s->id, 0, "%s", err.msg);
		destroy(pl->d, s);
	} else {
		/* idle until taken: it commits what it holds (commit.h) */
		hu_sbx_read_held(s);
		b->ps->made++;
		hu_stat_add(HU_STAT_POOL_BUILDS, 1);
	}
	free(b);
	schedule(pl, 0);
}

/* May one more sandbox of `mem` bytes exist now? Pool builds never take
 * the last of a budget from requests, and stop under memory pressure. */
static int room_for_one(struct hu_daemon *d, const struct hu_sbx *s)
{
	char why[160];
	hu_err ignored;

	if (hu_lifecycle_under_pressure(d, why, sizeof(why)))
		return 0;
	return hu_admission_check(d, s->memory_bytes, s->cpu_millis, &ignored) == 0;
}

/* Start building one sandbox for ps; 0 started, -1 not (err says why). */
static int build_one(struct hu_pools *pl, struct hu_pool_set *ps, hu_err *err)
{
	struct hu_daemon *d = pl->d;
	struct hu_sandbox_spec spec;
	struct hu_sbx *s;
	struct build *b = calloc(1, sizeof(*b));

	if (!b)
		return hu_err_set(err, ENOMEM, "pool build");
	if (hu_sbx_new_pooled(d, ps->template_id, &s, err) < 0) {
		free(b);
		return -1;
	}
	if (!room_for_one(d, s)) {
		hu_sbx_free(s);
		free(b);
		return hu_err_set(err, -EAGAIN, "no room");
	}
	/* the row first: a daemon killed from here on removes it at its next
	 * start (an interrupted create) */
	if (hu_sbx_store_put(d->store, s, err) < 0) {
		hu_sbx_free(s);
		free(b);
		return -1;
	}
	hu_sbx_runtime_spec(d, s, &spec);
	if (hu_sandbox_create_start(d->rt, &spec, &s->rt, err) < 0)
		goto fail;
	*b = (struct build){.pools = pl, .ps = ps, .s = s};
	b->ready = event_new(d->base, hu_sandbox_ready_fd(s->rt), EV_READ, on_built, b);
	struct timeval tv = {BUILD_TIMEOUT_S, 0};
	if (!b->ready || event_add(b->ready, &tv) < 0) {
		if (b->ready)
			event_free(b->ready);
		hu_err_set(err, ENOMEM, "watch a pool sandbox");
		goto fail;
	}
	b->next = pl->building;
	pl->building = b;
	pl->n_building++;
	ps->filling++;
	return 0;
fail:
	destroy(d, s);
	free(b);
	return -1;
}

/* One refill step: start builds up to the concurrency limit, fullest need
 * first; come back when one finishes (or later, if held back). */
static void on_refill(evutil_socket_t fd, short what, void *arg)
{
	struct hu_pools *pl = arg;
	int held_back = 0;
	hu_err err;

	pl->quiet_since_ms = 0;
	/* a build takes the loop for a few ms: never while a request's create
	 * is in progress */
	if (pl->d->n_creating) {
		schedule(pl, REFILL_BUSY_MS);
		return;
	}
	for (size_t i = 0; i < pl->n_sets; i++)
		hu_pool_set_retarget(&pl->sets[i], pl->d->cfg.pool_max, hu_wall_ms());
	for (size_t i = 0; i < pl->n_sets && pl->n_building < HU_POOL_FILL_MAX; i++) {
		struct hu_pool_set *ps = &pl->sets[i];
		if (!hu_pool_set_missing(ps))
			continue;
		if (!hu_template_poolable(pl->d, ps->template_id)) {
			held_back = 1; /* not built (yet), or one with a start command: try again later */
			continue;
		}
		if (build_one(pl, ps, &err) < 0) {
			if (err.code != EAGAIN)
				hu_log(HU_LOG_WARN, NULL, 0, "pool of %s: %s", ps->template_id, err.msg);
			held_back = 1;
			continue;
		}
		i--; /* the same pool may need more */
	}
	if (held_back)
		schedule(pl, REFILL_RETRY_MS);
}

static int add_set(struct hu_pools *pl, const char *template_id, unsigned size, hu_err *err)
{
	if (!size)
		return 0;
	for (size_t i = 0; i < pl->n_sets; i++)
		if (!strcmp(pl->sets[i].template_id, template_id))
			return 0;
	struct hu_pool_set *v = realloc(pl->sets, (pl->n_sets + 1) * sizeof(*v));
	if (!v)
		return hu_err_set(err, ENOMEM, "pools");
	pl->sets = v;
	memset(&v[pl->n_sets], 0, sizeof(v[0]));
	snprintf(v[pl->n_sets].template_id, sizeof(v[0].template_id), "%s", template_id);
	v[pl->n_sets].floor = size;
	v[pl->n_sets].target = size;
	pl->n_sets++;
	return 0;
}

int hu_pool_start(struct hu_daemon *d, hu_err *err)
{
	struct hu_pools *pl = calloc(1, sizeof(*pl));

	if (!pl)
		return hu_err_set(err, ENOMEM, "pools");
	pl->d = d;
	d->pools = pl;
	if (add_set(pl, "base", hu_pool_size_for(&d->cfg, "base"), err) < 0)
		return -1;
	for (unsigned i = 0; i < d->cfg.n_pool_sizes; i++)
		if (add_set(pl, d->cfg.pool_sizes[i].template_id, d->cfg.pool_sizes[i].size, err) < 0)
			return -1;
	pl->refill = evtimer_new(d->base, on_refill, pl);
	/* the lowest priority: a build (a few ms of the loop) starts only when
	 * no request is waiting */
	if (!pl->refill || event_priority_set(pl->refill, HU_LOOP_PRIORITY_IDLE) < 0)
		return hu_err_set(err, ENOMEM, "pool refill timer");
	for (size_t i = 0; i < pl->n_sets; i++)
		hu_log(HU_LOG_INFO, NULL, 0, "warm pool of %s: %u sandboxes", pl->sets[i].template_id,
		       pl->sets[i].target);
	schedule(pl, 0);
	return 0;
}

void hu_pool_stop(struct hu_daemon *d)
{
	struct hu_pools *pl = d->pools;
	hu_err ignored;

	if (!pl)
		return;
	pl->stopping = 1;
	/* builds waiting for their template's start end now (on_started destroys them) */
	hu_tpl_start_cancel_all(d);
	while (pl->building) {
		struct build *b = pl->building;
		build_unlink(b);
		if (!b->starting && hu_sandbox_create_finish(b->s->rt, &ignored) < 0)
			b->s->rt = NULL;
		destroy(d, b->s);
		free(b);
	}
	for (size_t i = 0; i < pl->n_sets; i++) {
		struct hu_sbx *s;
		while ((s = hu_pool_set_pop_oldest(&pl->sets[i])))
			destroy(d, s);
		free(pl->sets[i].ready);
	}
	if (pl->refill)
		event_free(pl->refill);
	free(pl->sets);
	free(pl);
	d->pools = NULL;
}

/* Has its hutch-init exited while it waited (the host's OOM killer, an
 * operator)? Its pidfd is readable then. */
static int dead(const struct hu_sbx *p)
{
	struct pollfd pfd = {.fd = hu_sandbox_pidfd(p->rt), .events = POLLIN};
	return pfd.fd < 0 || poll(&pfd, 1, 0) != 0;
}

struct hu_sbx *hu_pool_take(struct hu_daemon *d, const struct hu_sbx *want)
{
	struct hu_pools *pl = d->pools;

	if (!pl)
		return NULL;
	for (size_t i = 0; i < pl->n_sets; i++) {
		if (strcmp(pl->sets[i].template_id, want->template_id))
			continue;
		/* every create of the template is demand, served or not */
		hu_pool_demand_note(&pl->sets[i].demand, hu_wall_ms(), d->n_creating > 0);
		hu_pool_set_retarget(&pl->sets[i], d->cfg.pool_max, hu_wall_ms());
		struct hu_sbx *p;
		while ((p = hu_pool_set_take(&pl->sets[i], want)) && dead(p)) {
			hu_log(HU_LOG_WARN, p->id, 0, "pool sandbox of %s died while it waited; removed", want->template_id);
			hu_pool_discard(d, p);
		}
		schedule_after_take(pl);
		return p;
	}
	return NULL;
}

void hu_pool_adopt_into(struct hu_sbx *s, struct hu_sbx *p)
{
	memcpy(s->id, p->id, sizeof(s->id));
	s->rt = p->rt;
	p->rt = NULL;
	hu_sbx_free(p);
}

void hu_pool_put_back(struct hu_daemon *d, struct hu_sbx *p)
{
	struct hu_pools *pl = d->pools;
	hu_err ignored;

	for (size_t i = 0; pl && i < pl->n_sets; i++) {
		struct hu_pool_set *ps = &pl->sets[i];
		if (strcmp(ps->template_id, p->template_id))
			continue;
		if (ps->n_ready < ps->target && hu_pool_set_push(ps, p, &ignored) == 0) {
			ps->taken--;
			return;
		}
		break;
	}
	hu_pool_discard(d, p);
}

void hu_pool_discard(struct hu_daemon *d, struct hu_sbx *p)
{
	destroy(d, p);
	hu_stat_add(HU_STAT_POOL_DROPS, 1);
}

int hu_pool_give_way(struct hu_daemon *d)
{
	struct hu_pools *pl = d->pools;
	struct hu_pool_set *fullest = NULL;

	for (size_t i = 0; pl && i < pl->n_sets; i++)
		if (pl->sets[i].n_ready && (!fullest || pl->sets[i].n_ready > fullest->n_ready))
			fullest = &pl->sets[i];
	if (!fullest)
		return 0;
	hu_log(HU_LOG_INFO, NULL, 0, "pool of %s gives way to a create", fullest->template_id);
	hu_pool_discard(d, hu_pool_set_pop_oldest(fullest));
	/* it refills when admission has room again */
	schedule(pl, REFILL_RETRY_MS);
	return 1;
}

void hu_pool_reap_dead(struct hu_daemon *d)
{
	struct hu_pools *pl = d->pools;
	int reaped = 0;

	for (size_t i = 0; pl && i < pl->n_sets; i++) {
		struct hu_pool_set *ps = &pl->sets[i];
		for (size_t j = ps->n_ready; j-- > 0;) {
			if (!dead(ps->ready[j]))
				continue;
			struct hu_sbx *p = remove_at(ps, j);
			hu_log(HU_LOG_WARN, p->id, 0, "pool sandbox of %s died while it waited; removed", ps->template_id);
			hu_pool_discard(d, p);
			reaped = 1;
		}
	}
	/* demand that left the window: the surplus goes, oldest first, a few
	 * a second (each is a kill); demand that grew: the refill builds */
	for (size_t i = 0; pl && i < pl->n_sets; i++) {
		struct hu_pool_set *ps = &pl->sets[i];
		hu_pool_set_retarget(ps, d->cfg.pool_max, hu_wall_ms());
		unsigned drop = hu_pool_set_surplus(ps);
		if (drop > HU_POOL_SHRINK_PER_TICK)
			drop = HU_POOL_SHRINK_PER_TICK;
		for (unsigned k = 0; k < drop; k++)
			destroy(d, hu_pool_set_pop_oldest(ps));
		hu_stat_add(HU_STAT_POOL_SHRINKS, drop);
		if (hu_pool_set_missing(ps))
			reaped = 1;
	}
	if (reaped)
		schedule(pl, 0);
}

unsigned hu_pool_drop_template(struct hu_daemon *d, const char *template_id)
{
	struct hu_pools *pl = d->pools;

	for (size_t i = 0; pl && i < pl->n_sets; i++) {
		struct hu_pool_set *ps = &pl->sets[i];
		if (strcmp(ps->template_id, template_id))
			continue;
		struct hu_sbx *p;
		while ((p = hu_pool_set_pop_oldest(ps)))
			hu_pool_discard(d, p);
		schedule(pl, REFILL_RETRY_MS);
		return ps->filling;
	}
	return 0;
}

unsigned hu_pool_count(const struct hu_daemon *d)
{
	unsigned n = 0;

	for (size_t i = 0; d->pools && i < d->pools->n_sets; i++)
		n += (unsigned)d->pools->sets[i].n_ready + d->pools->sets[i].filling;
	return n;
}

void hu_pool_commitments(const struct hu_daemon *d, struct hu_commit_ledger *l)
{
	const struct hu_pools *pl = d->pools;

	for (size_t i = 0; pl && i < pl->n_sets; i++)
		for (size_t j = 0; j < pl->sets[i].n_ready; j++)
			hu_ledger_add(l, pl->sets[i].ready[j], HU_CS_POOL, d->cfg.default_pids);
	for (const struct build *b = pl ? pl->building : NULL; b; b = b->next)
		hu_ledger_add(l, b->s, HU_CS_CREATING, d->cfg.default_pids);
}

void hu_pool_render(const struct hu_daemon *d, struct evbuffer *o)
{
	const struct hu_pools *pl = d->pools;

	evbuffer_add_printf(o, "# HELP hutch_pool_sandboxes Warm pool sandboxes per template: ready, being built, "
			       "the target (demand, between the configured size and pool.max) and the configured size.\n# TYPE hutch_pool_sandboxes gauge\n");
	for (size_t i = 0; pl && i < pl->n_sets; i++) {
		const struct hu_pool_set *ps = &pl->sets[i];
		evbuffer_add_printf(o,
				    "hutch_pool_sandboxes{template=\"%s\",state=\"ready\"} %zu\n"
				    "hutch_pool_sandboxes{template=\"%s\",state=\"building\"} %u\n"
				    "hutch_pool_sandboxes{template=\"%s\",state=\"target\"} %u\n"
				    "hutch_pool_sandboxes{template=\"%s\",state=\"floor\"} %u\n",
				    ps->template_id, ps->n_ready, ps->template_id, ps->filling, ps->template_id, ps->target,
				    ps->template_id, ps->floor);
	}
	evbuffer_add_printf(o, "# HELP hutch_pool_demand_peak Warm pools: the most concurrent creates of a template "
			       "(a burst: each within 100 ms of the one before) over the last five minutes (what the target follows).\n"
			       "# TYPE hutch_pool_demand_peak gauge\n");
	for (size_t i = 0; pl && i < pl->n_sets; i++) {
		const struct hu_pool_set *ps = &pl->sets[i];
		evbuffer_add_printf(o, "hutch_pool_demand_peak{template=\"%s\"} %u\n", ps->template_id,
				    hu_pool_demand_peak(&ps->demand, hu_wall_ms()));
	}
}
