/* Create, kill, pause, resume and deadlines of a sandbox (sandbox_ops.h). */
#include "util/clock.h"
#include "util/hex.h"
#include "daemon/sandboxes/sandbox_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "daemon/sandboxes/admission.h"
#include "daemon/common/fault.h"
#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/snapshots.h"
#include "daemon/sandboxes/quota.h"
#include "daemon/common/stats.h"
#include "daemon/sandboxes/sbx_metrics.h"
#include "daemon/sandboxes/sbx_mounts.h"
#include "daemon/sandboxes/sbx_network.h"
#include "daemon/sandboxes/sbx_store.h"
#include "daemon/store/store.h"
#include "daemon/sandboxes/templates.h"
#include "daemon/sandboxes/tpl_start.h"
#include "daemon/sandboxes/provision.h"
#include "daemon/sandboxes/sbx_envfile.h"
#include "runtime/net.h"
#include "util/slist.h"

#define ID_LEN 20          /* like E2B's ids: "i" + 19 of [a-z0-9] */
#define TOKEN_BYTES 32     /* access token: 64 hex chars */

static int fill_random(void *buf, size_t n, hu_err *err)
{
	if (getrandom(buf, n, 0) != (ssize_t)n)
		return hu_err_sys(err, "getrandom");
	return 0;
}

/* A fresh id: "i" + 19 characters of [a-z0-9], uniform (bytes >= 252 are
 * redrawn so that no character is likelier than another). */
static int new_id(struct hu_registry *reg, char *id, hu_err *err)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint8_t rnd[64];

	for (int attempt = 0; attempt < 8; attempt++) {
		size_t n = 0;
		id[n++] = 'i';
		while (n < ID_LEN) {
			if (fill_random(rnd, sizeof(rnd), err) < 0)
				return -1;
			for (size_t i = 0; i < sizeof(rnd) && n < ID_LEN; i++)
				if (rnd[i] < 252)
					id[n++] = alphabet[rnd[i] % 36];
		}
		id[n] = '\0';
		if (!hu_registry_get(reg, id))
			return 0;
	}
	return hu_err_set(err, -EEXIST, "could not draw a fresh sandbox id");
}

static int new_token(char *out, hu_err *err)
{
	return hu_random_hex(out, TOKEN_BYTES, err);
}

int64_t hu_sbx_idle_deadline(int32_t timeout_s)
{
	return timeout_s < 0 ? HU_NEVER_MS : hu_wall_ms() + (int64_t)timeout_s * 1000;
}

/* The deadline passed: the sandbox may have been busy meanwhile (touches
 * move end_at without re-arming, an open stream keeps it awake); otherwise
 * it pauses or dies, as its onTimeout says. */
static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct hu_sbx *s = arg;
	struct hu_daemon *d = hu_registry_daemon(s->reg);
	hu_err err;

	if (s->state != HU_SBX_RUNNING)
		return;
	if (s->end_at_ms > hu_wall_ms()) {
		hu_sbx_arm_deadline(s);
		return;
	}
	if (s->active) {
		s->end_at_ms = hu_sbx_idle_deadline(s->timeout_s > 0 ? s->timeout_s : 1);
		s->dirty = 1;
		hu_sbx_arm_deadline(s);
		return;
	}
	if (s->auto_pause) {
		if (hu_sbx_pause(d, s, !s->auto_pause_memory, &err) < 0)
			hu_log(HU_LOG_WARN, s->id, 0, "timeout pause: %s", err.msg);
		return;
	}
	/* many deadlines can fall in one loop iteration: none of these kills
	 * holds the loop while its init dies */
	hu_sbx_kill_async(d, s, "timeout reached", hu_sbx_killed_log, NULL);
}

void hu_sbx_arm_deadline(struct hu_sbx *s)
{
	int64_t left = s->end_at_ms - hu_wall_ms();
	struct timeval tv;

	if (s->end_at_ms >= HU_NEVER_MS) {
		evtimer_del(s->timer);
		return;
	}
	if (left < 0)
		left = 0;
	tv.tv_sec = (time_t)(left / 1000);
	tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
	evtimer_add(s->timer, &tv);
}

int hu_sbx_new_timer(struct hu_daemon *d, struct hu_sbx *s, hu_err *err)
{
	s->timer = evtimer_new(d->base, on_deadline, s);
	if (!s->timer)
		return hu_err_set(err, ENOMEM, "sandbox timer");
	return 0;
}

void hu_sbx_runtime_spec(const struct hu_daemon *d, const struct hu_sbx *s, struct hu_sandbox_spec *spec)
{
	hu_sandbox_spec_defaults(spec);
	snprintf(spec->id, sizeof(spec->id), "%s", s->id);
	/* a template's id is its runtime name (templates.h) */
	snprintf(spec->template_name, sizeof(spec->template_name), "%s", s->template_id);
	spec->limits.memory_bytes = s->memory_bytes;
	spec->limits.cpu_millis = s->cpu_millis;
	if (d->cfg.default_pids)
		spec->limits.pids = d->cfg.default_pids;
	spec->disk_bytes = s->disk_bytes;
	spec->net.internet = s->internet;
	spec->net.rules = s->net_rules;
}

/* The daemon's view of a new sandbox, before anything runs. */
static int sbx_init(struct hu_daemon *d, const char *team, const struct hu_new_sandbox *req, const char *idem_key,
		    struct hu_sbx *s, hu_err *err)
{
	struct hu_sandbox_spec defaults;
	int32_t timeout = req->timeout_s ? req->timeout_s : (int32_t)d->cfg.default_timeout_s;

	hu_sandbox_spec_defaults(&defaults);
	if (new_id(d->reg, s->id, err) < 0 || new_token(s->access_token, err) < 0)
		return -1;
	snprintf(s->team, sizeof(s->team), "%s", team);
	snprintf(s->template_id, sizeof(s->template_id), "%s", req->template_id);
	snprintf(s->idem_key, sizeof(s->idem_key), "%s", idem_key ? idem_key : "");
	s->state = HU_SBX_CREATING;
	s->started_at_ms = hu_wall_ms();
	s->last_active_ms = s->started_at_ms;
	s->timeout_s = timeout;
	s->end_at_ms = hu_sbx_idle_deadline(timeout);
	s->metadata = req->metadata ? json_incref(req->metadata) : json_object();
	s->env_vars = req->env_vars ? json_incref(req->env_vars) : json_object();
	s->auto_pause = req->auto_pause;
	s->auto_pause_memory = req->auto_pause_memory;
	s->auto_resume = req->auto_resume;
	if (req->private_traffic && new_token(s->traffic_token, err) < 0)
		return -1;
	snprintf(s->mask_host, sizeof(s->mask_host), "%s", req->mask_host);
	s->reclaim_after_s = req->reclaim_after_s;
	s->allow_internet = req->allow_internet;
	if (hu_sbx_net_init(d, req, s, err) < 0)
		return -1;
	s->cpu_millis = d->cfg.default_cpu_millis ? d->cfg.default_cpu_millis : defaults.limits.cpu_millis;
	s->memory_bytes = d->cfg.default_memory_bytes ? d->cfg.default_memory_bytes : defaults.limits.memory_bytes;
	s->disk_bytes = d->cfg.default_disk_bytes ? d->cfg.default_disk_bytes : defaults.disk_bytes;
	if (!s->metadata || !s->env_vars)
		return hu_err_set(err, ENOMEM, "new sandbox");
	return hu_sbx_new_timer(d, s, err);
}

/* Someone else asking for the same sandbox (same Idempotency-Key) while it
 * is being created: answered when it is ready. */
struct create_waiter {
	hu_sbx_created_fn done;
	void *arg;
	struct create_waiter *next;
};

/* A create between hu_sandbox_create_start and _finish. */
struct hu_pending_create {
	struct hu_daemon *d;
	struct hu_sbx *s;
	struct event *ready;
	hu_sbx_created_fn done;
	void *arg;
	struct create_waiter *waiters;
	int64_t started_mono_ms; /* for the create latency histogram */
	int template_starts;     /* its template has a start command or a readiness check */
	struct hu_pending_create *next;
};

#define CREATE_TIMEOUT_S 15

static void pending_unlink(struct hu_pending_create *pc)
{
	HU_SLIST_UNLINK(&pc->d->creating, pc);
	pc->d->n_creating--;
	event_free(pc->ready);
}

/* Answer the creator and every waiter, then free pc. */
static void pending_done(struct hu_pending_create *pc, struct hu_sbx *s, const hu_err *err)
{
	struct hu_daemon *d = pc->d;

	pc->done(d, s, 1, err, pc->arg);
	while (pc->waiters) {
		struct create_waiter *w = pc->waiters;
		pc->waiters = w->next;
		w->done(d, s, 0, err, w->arg);
		free(w);
	}
	free(pc);
}

/* A sandbox whose runtime is ready becomes live: registered, its deadline
 * armed, counted. Its row says running already. */
static int go_live(struct hu_daemon *d, struct hu_sbx *s, int64_t started_mono_ms, enum hu_stat source,
		   hu_err *err)
{
	if (hu_registry_add(d->reg, s, err) < 0)
		return -1;
	hu_sbx_arm_deadline(s);
	hu_stat_add(HU_STAT_CREATES, 1);
	hu_stat_add(source, 1);
	hu_stat_observe(HU_HIST_CREATE, (double)(hu_mono_ms() - started_mono_ms) / 1000.0);
	hu_log(HU_LOG_INFO, s->id, 0, "created for team %s from %s%s, timeout %d s", s->team, s->template_id,
	       source == HU_STAT_CREATES_POOL ? " (warm pool)" : "", s->timeout_s);
	return 0;
}

/* A create waiting for its template's readiness check (tpl_start.h). The
 * sandbox is registered meanwhile and may die: it is found again by id. */
struct template_wait {
	struct hu_pending_create *pc;
	char id[HU_ID_MAX];
};

/* The prefix of a failed create. A full disk (ENOSPC from the layer's
 * subvolume, its setup or the store: 507) says where the space is missing,
 * so that an operator knows what to free. */
static void create_failed(const struct hu_daemon *d, hu_err *err)
{
	struct hu_storage_info st;

	if (err->code == ENOSPC) {
		hu_runtime_storage(d->rt, &st);
		hu_err_prefix(err, "no disk space for a new sandbox: the writable layers' file system (%s) is full; "
				   "delete sandboxes or snapshots, or give it more space",
			      st.image[0] ? st.image : st.root);
	}
	hu_err_prefix(err, "create sandbox");
}

static void template_ready(void *arg, const hu_err *why)
{
	struct template_wait *w = arg;
	struct hu_pending_create *pc = w->pc;
	struct hu_sbx *s = hu_registry_get(pc->d->reg, w->id);
	hu_err err, ignored;

	free(w);
	if (!why && s) {
		pending_done(pc, s, NULL);
		return;
	}
	if (why)
		err = *why;
	else
		hu_err_set(&err, -EIO, "the sandbox ended before it was ready");
	if (s)
		hu_sbx_kill(pc->d, s, "template readiness check failed", &ignored);
	create_failed(pc->d, &err);
	pending_done(pc, NULL, &err);
}

/* 0: nothing to wait for; 1: template_ready answers later; -1 (err set):
 * could not start. */
static int template_start(struct hu_pending_create *pc, hu_err *err)
{
	hu_err_clear(err);
	if (!pc->template_starts)
		return 0;
	struct template_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return hu_err_set(err, ENOMEM, "template start");
	w->pc = pc;
	snprintf(w->id, sizeof(w->id), "%s", pc->s->id);
	int rc = hu_tpl_start_sandbox(pc->d, pc->s, template_ready, w, err);
	if (rc <= 0)
		free(w);
	return rc;
}

/* The sandbox built its root (or failed, or timed out): store it as
 * running, register it, arm its deadline, answer. */
static void on_create_ready(evutil_socket_t fd, short what, void *arg)
{
	struct hu_pending_create *pc = arg;
	struct hu_daemon *d = pc->d;
	struct hu_sbx *s = pc->s;
	hu_err err = {0}, ignored;

	pending_unlink(pc);
	if (hu_sandbox_create_finish(s->rt, &err) < 0) {
		s->rt = NULL; /* freed by finish */
		goto fail;
	}
	hu_fault_point("create.started");
	s->state = HU_SBX_RUNNING;
	if (hu_sbx_store_put(d->store, s, &err) < 0)
		goto fail_rt;
	if (go_live(d, s, pc->started_mono_ms, HU_STAT_CREATES_COLD, &err) < 0)
		goto fail_rt;
	/* a template with a start command or a readiness check: answered
	 * when it is ready (template_ready) */
	if (template_start(pc, &err) != 0) {
		if (err.code) {
			hu_err ignored_kill;
			hu_sbx_kill(d, s, "template start failed", &ignored_kill);
			create_failed(pc->d, &err);
			pending_done(pc, NULL, &err);
		}
		return;
	}
	pending_done(pc, s, NULL);
	return;
fail_rt:
	hu_sandbox_destroy(s->rt, &ignored);
	s->rt = NULL;
fail:
	hu_store_sandbox_delete(d->store, s->id, &ignored);
	create_failed(pc->d, &err);
	hu_sbx_free(s);
	pending_done(pc, NULL, &err);
}

static int same_key(const struct hu_sbx *s, const char *team, const char *key)
{
	return s->idem_key[0] && !strcmp(s->idem_key, key) && !strcmp(s->team, team);
}

struct idem_find {
	const char *team, *key;
	struct hu_sbx *found;
};

static int match_idem(struct hu_sbx *s, void *arg)
{
	struct idem_find *f = arg;
	if (!same_key(s, f->team, f->key))
		return 0;
	f->found = s;
	return 1;
}

/* An Idempotency-Key seen before: the sandbox it made (resumed if paused)
 * or a place in the queue of its create. 1 when handled, 0 when the key is
 * new, -1 on error. A scan of the live sandboxes: microseconds for
 * thousands, and only creates that carry a key pay it. */
static int create_by_key(struct hu_daemon *d, const char *team, const char *key, hu_sbx_created_fn done, void *arg,
			 hu_err *err)
{
	struct idem_find f = {.team = team, .key = key};

	for (struct hu_pending_create *pc = d->creating; pc; pc = pc->next) {
		if (!same_key(pc->s, team, key))
			continue;
		struct create_waiter *w = calloc(1, sizeof(*w));
		if (!w)
			return hu_err_set(err, ENOMEM, "wait for sandbox %s", pc->s->id);
		*w = (struct create_waiter){.done = done, .arg = arg, .next = pc->waiters};
		pc->waiters = w;
		hu_stat_add(HU_STAT_IDEMPOTENT_HITS, 1);
		return 1;
	}
	hu_registry_each(d->reg, match_idem, &f);
	if (!f.found)
		return 0;
	if (f.found->state == HU_SBX_PAUSED && hu_sbx_resume(d, f.found, 0, err) < 0)
		return -1;
	hu_sbx_touch(f.found);
	hu_stat_add(HU_STAT_IDEMPOTENT_HITS, 1);
	done(d, f.found, 0, NULL, arg);
	return 1;
}

/* Admission for s (max_sandboxes included); the warm pools give way (a
 * sandbox of theirs at a time) to a create that would otherwise be refused
 * for capacity, then frozen sandboxes are released (admission.h). */
static int admit(struct hu_daemon *d, const struct hu_sbx *s, hu_err *err)
{
	return hu_admit_with_room(d, s->team, NULL, s->memory_bytes, s->cpu_millis, err);
}

/* A create served by warm pool sandbox p (pool.h): the request's sandbox s
 * takes p's id and runtime, its row replaces p's, and it answers at once.
 * s is freed on failure. */
/* A warm create of a template with a start command, waiting for its envs
 * to be written into the sandbox (sbx_envfile.h); found again by id. */
struct envs_wait {
	struct hu_daemon *d;
	char id[HU_ID_MAX];
	hu_sbx_created_fn done;
	void *arg;
};

static void envs_written(void *arg, const hu_err *why)
{
	struct envs_wait *w = arg;
	struct hu_sbx *s = hu_registry_get(w->d->reg, w->id);
	hu_err err, ignored;

	if (!why && s) {
		w->done(w->d, s, 1, NULL, w->arg);
		free(w);
		return;
	}
	if (why)
		err = *why;
	else
		hu_err_set(&err, -EIO, "the sandbox ended before its envs were written");
	if (s)
		hu_sbx_kill(w->d, s, "its envs could not be written", &ignored);
	create_failed(w->d, &err);
	w->done(w->d, NULL, 1, &err, w->arg);
	free(w);
}

static int create_warm(struct hu_daemon *d, struct hu_sbx *s, struct hu_sbx *p, int template_starts,
		       hu_sbx_created_fn done, void *arg, int64_t t0, hu_err *err)
{
	hu_err ignored;

	hu_pool_adopt_into(s, p);
	s->state = HU_SBX_RUNNING;
	/* the pool builds with no egress rules; the request's are one
	 * nftables transaction on the live sandbox */
	if (s->internet && (s->net_rules.n_allow || s->net_rules.n_deny) &&
	    hu_net_update(d->rt, s->id, &s->net_rules, err) < 0)
		goto fail;
	/* one transaction: the pool's row (no team, `creating`) goes, the
	 * request's comes */
	if (hu_store_begin(d->store, err) < 0)
		goto fail;
	if (hu_store_sandbox_delete(d->store, s->id, err) < 0 || hu_sbx_store_put(d->store, s, err) < 0) {
		hu_store_commit(d->store, &ignored);
		goto fail;
	}
	if (hu_store_commit(d->store, err) < 0 || go_live(d, s, t0, HU_STAT_CREATES_POOL, err) < 0)
		goto fail;
	if (template_starts) {
		/* its start command runs since the pool built it: it learns the create's envs now */
		struct envs_wait *w = calloc(1, sizeof(*w));
		if (!w || hu_sbx_envfile_write(d, s, envs_written, w, err) < 0) {
			if (!w)
				hu_err_set(err, ENOMEM, "the sandbox's envs");
			free(w);
			hu_sbx_kill(d, s, "its envs could not be written", &ignored);
			create_failed(d, err);
			return -1;
		}
		*w = (struct envs_wait){.d = d, .done = done, .arg = arg};
		snprintf(w->id, sizeof(w->id), "%s", s->id);
		return 0;
	}
	done(d, s, 1, NULL, arg);
	return 0;
fail:
	hu_sandbox_destroy(s->rt, &ignored);
	s->rt = NULL;
	hu_store_sandbox_delete(d->store, s->id, &ignored);
	create_failed(d, err);
	hu_sbx_free(s);
	return -1;
}

int hu_sbx_new_pooled(struct hu_daemon *d, const char *template_id, struct hu_sbx **out, hu_err *err)
{
	struct hu_new_sandbox req = {.allow_internet = -1, .auto_pause_memory = 1};
	struct hu_sbx *s = calloc(1, sizeof(*s));

	if (!s)
		return hu_err_set(err, ENOMEM, "pool sandbox");
	snprintf(req.template_id, sizeof(req.template_id), "%s", template_id);
	struct hu_tpl_meta tpl;
	if (hu_template_lookup(d, NULL, template_id, &tpl, err) < 0) {
		free(s);
		return -1;
	}
	/* no team: the row is nobody's until a create takes it; the
	 * template's limits, as a cold create from it gets them (a take
	 * matches limits) */
	int inited = sbx_init(d, "", &req, NULL, s, err) == 0 && hu_template_apply(&tpl, s, err) == 0;
	hu_tpl_meta_free(&tpl);
	if (!inited || hu_sbx_mounts_build(d, s, NULL, err) < 0) {
		hu_sbx_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

int hu_sbx_create_async(struct hu_daemon *d, const char *team, const struct hu_new_sandbox *req,
			const char *idem_key, hu_sbx_created_fn done, void *arg, hu_err *err)
{
	struct hu_tpl_meta tpl;
	struct hu_sandbox_spec spec;
	struct hu_pending_create *pc = NULL;
	struct hu_snapshot_row snap;
	struct hu_new_sandbox on_snap;
	struct hu_sbx *s;
	hu_err ignored;
	int stored = 0;

	/* a snapshot's id or name: its template below, its files on top */
	int from_snap = hu_snapshot_lookup(d, team, req->template_id, 1, &snap, &ignored) == 0;
	if (from_snap) {
		on_snap = *req;
		snprintf(on_snap.template_id, sizeof(on_snap.template_id), "%s", snap.template_id);
		req = &on_snap;
	}
	if (hu_template_lookup(d, team, req->template_id, &tpl, err) < 0) {
		hu_err busy;
		/* one the daemon is still building says so (503, Retry-After) */
		if (err->code == ENOENT && hu_provision_check(d, req->template_id, &busy) < 0)
			*err = busy;
		return -1;
	}
	if (idem_key && *idem_key) {
		int rc = create_by_key(d, team, idem_key, done, arg, err);
		if (rc != 0) {
			hu_tpl_meta_free(&tpl);
			return rc < 0 ? -1 : 0;
		}
	}
	int64_t t0 = hu_mono_ms();
	s = calloc(1, sizeof(*s));
	pc = calloc(1, sizeof(*pc));
	if (!s || !pc) {
		free(pc);
		free(s);
		hu_tpl_meta_free(&tpl);
		return hu_err_set(err, ENOMEM, "new sandbox");
	}
	struct hu_sbx_rt_mounts rm;
	int inited = sbx_init(d, team, req, idem_key, s, err) == 0 && hu_template_apply(&tpl, s, err) == 0;
	int template_starts = tpl.start_cmd[0] || tpl.ready_cmd[0];
	hu_tpl_meta_free(&tpl);
	if (inited && from_snap) {
		/* the size of the sandbox the files came from: they fit */
		s->cpu_millis = snap.cpu_millis;
		s->memory_bytes = snap.memory_bytes;
		s->disk_bytes = snap.disk_bytes;
	}
	if (!inited || hu_sbx_mounts_build(d, s, req->mounts, err) < 0)
		goto fail;
	/* a warm pool sandbox when one fits (mounts are made with a sandbox:
	 * those creates are built cold) */
	/* a pool sandbox has an empty layer: not for a snapshot's files */
	struct hu_sbx *warm = json_array_size(s->mounts) || from_snap ? NULL : hu_pool_take(d, s);
	/* before anything is built: a refused create leaves nothing behind */
	if (hu_quota_check_sandbox(d, team, s->memory_bytes, err) < 0 || admit(d, s, err) < 0) {
		if (warm)
			hu_pool_put_back(d, warm);
		hu_sbx_free(s);
		free(pc);
		return -1;
	}
	if (warm) {
		free(pc);
		return create_warm(d, s, warm, template_starts, done, arg, t0, err);
	}
	/* the intent first: a daemon killed from here on finds the row at its
	 * next start and removes whatever the runtime had built */
	if (hu_sbx_store_put(d->store, s, err) < 0)
		goto fail;
	stored = 1;
	hu_fault_point("create.stored");
	if (hu_sbx_runtime_mounts(d, s, &rm, err) < 0)
		goto fail;
	hu_sbx_runtime_spec(d, s, &spec);
	spec.mounts = rm.spec;
	spec.n_mounts = rm.n;
	if (from_snap)
		snprintf(spec.from_snapshot, sizeof(spec.from_snapshot), "%s", snap.id);
	int started = hu_sandbox_create_start(d->rt, &spec, &s->rt, err);
	hu_sbx_rt_mounts_close(&rm); /* the sandbox holds its own clones now */
	if (started < 0)
		goto fail;
	*pc = (struct hu_pending_create){
		.d = d, .s = s, .done = done, .arg = arg, .started_mono_ms = t0, .template_starts = template_starts};
	pc->ready = event_new(d->base, hu_sandbox_ready_fd(s->rt), EV_READ, on_create_ready, pc);
	struct timeval tv = {CREATE_TIMEOUT_S, 0};
	if (!pc->ready || event_add(pc->ready, &tv) < 0) {
		hu_err_set(err, ENOMEM, "watch the new sandbox");
		if (pc->ready)
			event_free(pc->ready);
		hu_sandbox_destroy(s->rt, &ignored);
		s->rt = NULL;
		goto fail;
	}
	pc->next = d->creating;
	d->creating = pc;
	d->n_creating++;
	return 0;
fail:
	if (stored)
		hu_store_sandbox_delete(d->store, s->id, &ignored);
	create_failed(d, err);
	hu_sbx_free(s);
	free(pc);
	return -1;
}

void hu_sbx_pending_commitments(const struct hu_daemon *d, uint64_t *memory_bytes, uint64_t *cpu_millis)
{
	for (const struct hu_pending_create *pc = d->creating; pc; pc = pc->next) {
		*memory_bytes += pc->s->memory_bytes;
		*cpu_millis += pc->s->cpu_millis;
	}
}

void hu_sbx_each_pending(const struct hu_daemon *d, void (*fn)(const struct hu_sbx *s, void *arg), void *arg)
{
	for (const struct hu_pending_create *pc = d->creating; pc; pc = pc->next)
		fn(pc->s, arg);
}

void hu_sbx_abort_creates(struct hu_daemon *d)
{
	hu_err err, ignored;

	while (d->creating) {
		struct hu_pending_create *pc = d->creating;
		pending_unlink(pc);
		if (hu_sandbox_create_finish(pc->s->rt, &ignored) == 0)
			hu_sandbox_destroy(pc->s->rt, &ignored);
		pc->s->rt = NULL;
		hu_store_sandbox_delete(d->store, pc->s->id, &ignored);
		hu_sbx_free(pc->s);
		hu_err_set(&err, ECANCELED, "the server is shutting down");
		pending_done(pc, NULL, &err);
	}
}

/* Save s, or put the fields a failed save must not leave changed back. */
static int save(struct hu_daemon *d, struct hu_sbx *s, hu_err *err)
{
	if (hu_sbx_store_put(d->store, s, err) < 0)
		return -1;
	s->dirty = 0;
	return 0;
}

static const enum hu_stat release_stat[] = {
	[HU_RELEASE_ASKED] = HU_STAT_RELEASE_ASKED,
	[HU_RELEASE_IDLE] = HU_STAT_RELEASE_IDLE,
	[HU_RELEASE_PRESSURE] = HU_STAT_RELEASE_PRESSURE,
	[HU_RELEASE_ROOM] = HU_STAT_RELEASE_ROOM,
};

int hu_sbx_release(struct hu_daemon *d, struct hu_sbx *s, enum hu_release_reason reason, const char *why,
		   hu_err *err)
{
	if (s->state != HU_SBX_PAUSED || s->released)
		return hu_err_set(err, -EALREADY, "sandbox %s is not a paused sandbox holding memory", s->id);
	/* init is stopped on purpose: its exit must not read as a death */
	hu_registry_unwatch(d->reg, s);
	if (hu_sandbox_stop(s->rt, err) < 0) {
		hu_err_prefix(err, "release the memory of sandbox %s", s->id);
		return -1;
	}
	hu_fault_point("release.stopped");
	s->released = 1;
	if (save(d, s, err) < 0)
		return -1; /* the next start sees a paused sandbox without init: released */
	s->held_memory_bytes = 0;
	s->held_pids = 0;
	hu_stat_add(HU_STAT_RELEASES, 1);
	hu_stat_add(release_stat[reason], 1);
	hu_log(HU_LOG_INFO, s->id, 0, "memory released (%s): processes stopped, files kept", why);
	return 0;
}

int hu_sbx_pause(struct hu_daemon *d, struct hu_sbx *s, int release_memory, hu_err *err)
{
	hu_err ignored;

	if (s->state == HU_SBX_PAUSED) {
		if (release_memory && !s->released)
			return hu_sbx_release(d, s, HU_RELEASE_ASKED, "pause without memory", err);
		return hu_err_set(err, -EALREADY, "sandbox %s is already paused", s->id);
	}
	if (hu_sandbox_freeze(s->rt, err) < 0)
		return -1;
	hu_fault_point("pause.frozen");
	/* from now on it commits what it holds (commit.h) */
	hu_sbx_read_held(s);
	s->state = HU_SBX_PAUSED;
	s->paused_at_ms = hu_wall_ms();
	s->pauses++;
	if (save(d, s, err) < 0) {
		s->state = HU_SBX_RUNNING;
		s->paused_at_ms = 0;
		hu_sandbox_thaw(s->rt, &ignored);
		return -1;
	}
	evtimer_del(s->timer);
	hu_stat_add(HU_STAT_PAUSES, 1);
	hu_log(HU_LOG_INFO, s->id, 0, "paused");
	if (release_memory)
		return hu_sbx_release(d, s, HU_RELEASE_ASKED, "pause without memory", err);
	return 0;
}

/* A sandbox whose memory was released gets a fresh init over its files. */
static int restart_init(struct hu_daemon *d, struct hu_sbx *s, hu_err *err)
{
	struct hu_sandbox_spec spec;
	struct hu_sbx_rt_mounts rm;

	/* the same volumes and host mounts, opened again from the stored list */
	if (hu_sbx_runtime_mounts(d, s, &rm, err) < 0)
		return -1;
	hu_sbx_runtime_spec(d, s, &spec);
	spec.mounts = rm.spec;
	spec.n_mounts = rm.n;
	int rc = hu_sandbox_restart(s->rt, &spec, err);
	hu_sbx_rt_mounts_close(&rm);
	if (rc < 0)
		return -1;
	if (hu_registry_watch(d->reg, s, err) < 0) {
		hu_err ignored;
		hu_sandbox_stop(s->rt, &ignored);
		return -1;
	}
	return 0;
}

static void restarted_template_ready(void *arg, const hu_err *why)
{
	char *id = arg;

	if (why)
		hu_log(HU_LOG_WARN, id, 0, "template start command after a cold boot: %s", why->msg);
	else
		hu_log(HU_LOG_INFO, id, 0, "template start command after a cold boot: ready");
	free(id);
}

/* A fresh init runs none of the sandbox's processes: its template's start
 * command runs again, as at create. The resume does not wait for the
 * readiness check (resumes are answered at once, and a data-plane request
 * may be the one resuming); a failure is logged, the sandbox kept. */
static void restart_template_start(struct hu_daemon *d, struct hu_sbx *s)
{
	hu_err err;
	char *id = strdup(s->id);

	if (!id) {
		hu_log(HU_LOG_WARN, s->id, 0, "template start command after a cold boot: out of memory");
		return;
	}
	int rc = hu_tpl_start_sandbox(d, s, restarted_template_ready, id, &err);
	if (rc < 0)
		hu_log(HU_LOG_WARN, s->id, 0, "template start command after a cold boot: %s", err.msg);
	if (rc <= 0)
		free(id);
}

int hu_sbx_resume(struct hu_daemon *d, struct hu_sbx *s, int32_t timeout_s, hu_err *err)
{
	int64_t old_end = s->end_at_ms, old_paused = s->paused_at_ms;
	int was_released = s->released;
	int64_t t0 = hu_mono_ms();
	hu_err ignored;

	if (s->state == HU_SBX_RUNNING)
		return hu_err_set(err, -EALREADY, "sandbox %s is already running", s->id);
	if (hu_quota_check_resume(d, s, err) < 0)
		return -1;
	/* a resume is admitted like a create: its full limits back, frozen
	 * sandboxes released for it if need be; refused whole, before
	 * anything changed, with 503 and Retry-After */
	if (hu_admit_with_room(d, s->team, s, s->memory_bytes, s->cpu_millis, err) < 0) {
		if (err->code == EAGAIN)
			err->code = ENOMEM;
		hu_err_prefix(err, "resume sandbox %s", s->id);
		return -1;
	}
	if (s->released ? restart_init(d, s, err) < 0 : hu_sandbox_thaw(s->rt, err) < 0)
		return -1;
	s->state = HU_SBX_RUNNING;
	s->released = 0;
	s->paused_at_ms = 0;
	s->last_active_ms = hu_wall_ms();
	s->end_at_ms = hu_sbx_idle_deadline(timeout_s ? timeout_s : s->timeout_s);
	if (save(d, s, err) < 0) {
		s->state = HU_SBX_PAUSED;
		s->end_at_ms = old_end;
		s->paused_at_ms = old_paused;
		if (was_released) {
			hu_registry_unwatch(d->reg, s);
			hu_sandbox_stop(s->rt, &ignored);
			s->released = 1;
		} else {
			hu_sandbox_freeze(s->rt, &ignored);
		}
		return -1;
	}
	hu_sbx_arm_deadline(s);
	hu_stat_add(HU_STAT_RESUMES, 1);
	hu_stat_observe(HU_HIST_RESUME, (double)(hu_mono_ms() - t0) / 1000.0);
	hu_log(HU_LOG_INFO, s->id, 0, "resumed%s", was_released ? " with a fresh init (memory had been released)" : "");
	if (was_released)
		restart_template_start(d, s);
	return 0;
}

/* Store a new deadline (and window) or leave both as they were. */
static int set_deadline(struct hu_daemon *d, struct hu_sbx *s, int64_t end_at_ms, int32_t timeout_s, hu_err *err)
{
	int64_t old_end = s->end_at_ms;
	int32_t old_timeout = s->timeout_s;

	s->end_at_ms = end_at_ms;
	s->timeout_s = timeout_s;
	if (save(d, s, err) < 0) {
		s->end_at_ms = old_end;
		s->timeout_s = old_timeout;
		return -1;
	}
	if (s->state == HU_SBX_RUNNING)
		hu_sbx_arm_deadline(s);
	return 0;
}

int hu_sbx_set_timeout(struct hu_daemon *d, struct hu_sbx *s, int32_t timeout_s, hu_err *err)
{
	/* 0 is E2B's "time out now" (the SDKs' set_timeout(0) forces the
	 * timeout action at once); the idle window stays what it was, for a
	 * sandbox that the action pauses and that is resumed later */
	if (timeout_s == 0)
		return set_deadline(d, s, hu_wall_ms(), s->timeout_s, err);
	return set_deadline(d, s, hu_sbx_idle_deadline(timeout_s), timeout_s, err);
}

int hu_sbx_extend(struct hu_daemon *d, struct hu_sbx *s, int32_t seconds, hu_err *err)
{
	int64_t end = hu_sbx_idle_deadline(seconds);
	s->last_active_ms = hu_wall_ms();
	if (end <= s->end_at_ms)
		return 0;
	return set_deadline(d, s, end, s->timeout_s, err);
}
struct any_ctx {
	int (*fn)(const struct hu_sbx *s, void *arg);
	void *arg;
	int found;
};

static int any_step(struct hu_sbx *s, void *arg)
{
	struct any_ctx *c = arg;
	return c->found = c->fn(s, c->arg);
}

int hu_sbx_any(struct hu_daemon *d, int (*fn)(const struct hu_sbx *s, void *arg), void *arg)
{
	struct any_ctx c = {fn, arg, 0};

	for (struct hu_pending_create *pc = d->creating; pc; pc = pc->next)
		if (fn(pc->s, arg))
			return 1;
	hu_registry_each(d->reg, any_step, &c);
	return c.found;
}
