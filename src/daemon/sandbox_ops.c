/* Create, kill, pause, resume and deadlines of a sandbox (sandbox_ops.h). */
#include "util/clock.h"
#include "util/hex.h"
#include "daemon/sandbox_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "daemon/sbx_network.h"
#include "daemon/store.h"

#define ID_LEN 20          /* like E2B's ids: "i" + 19 of [a-z0-9] */
#define TOKEN_BYTES 32     /* access token: 64 hex chars */

/* E2B template names hutch answers to, and the runtime template behind
 * each. Anything else is a 404, as E2B does for unknown templates. */
static const struct {
	const char *e2b;
	const char *runtime;
} templates[] = {
	{"base", "base"},
};

const char *hu_template_resolve(const char *template_id)
{
	for (size_t i = 0; i < sizeof(templates) / sizeof(templates[0]); i++)
		if (!strcmp(template_id, templates[i].e2b))
			return templates[i].runtime;
	return NULL;
}

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

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct hu_sbx *s = arg;
	hu_err err;

	/* onTimeout=pause and autoResume are stored for the lifecycle issue;
	 * until then the deadline kills, as E2B's default does. */
	if (hu_sbx_kill(hu_registry_daemon(s->reg), s, "timeout reached", &err) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "timeout kill: %s", err.msg);
}

/* (Re)start the deadline timer of a running sandbox at end_at. */
static void arm_deadline(struct hu_sbx *s)
{
	int64_t left = s->end_at_ms - hu_wall_ms();
	struct timeval tv;

	if (left < 0)
		left = 0;
	tv.tv_sec = (time_t)(left / 1000);
	tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
	evtimer_add(s->timer, &tv);
}

static void spec_from(const struct hu_daemon *d, const struct hu_sbx *s, const char *tpl,
		      struct hu_sandbox_spec *spec)
{
	hu_sandbox_spec_defaults(spec);
	snprintf(spec->id, sizeof(spec->id), "%s", s->id);
	snprintf(spec->template_name, sizeof(spec->template_name), "%s", tpl);
	spec->limits.memory_bytes = s->memory_bytes;
	spec->limits.cpu_millis = s->cpu_millis;
	if (d->cfg.default_pids)
		spec->limits.pids = d->cfg.default_pids;
	spec->disk_bytes = s->disk_bytes;
	spec->net.internet = s->internet;
	spec->net.rules = s->net_rules;
}

/* The daemon's view of a new sandbox, before anything runs. */
static int sbx_init(struct hu_daemon *d, const char *team, const struct hu_new_sandbox *req, struct hu_sbx *s,
		    hu_err *err)
{
	struct hu_sandbox_spec defaults;
	int32_t timeout = req->timeout_s ? req->timeout_s : (int32_t)d->cfg.default_timeout_s;

	hu_sandbox_spec_defaults(&defaults);
	if (new_id(d->reg, s->id, err) < 0 || new_token(s->access_token, err) < 0)
		return -1;
	snprintf(s->team, sizeof(s->team), "%s", team);
	snprintf(s->template_id, sizeof(s->template_id), "%s", req->template_id);
	s->state = HU_SBX_RUNNING;
	s->started_at_ms = hu_wall_ms();
	s->timeout_s = timeout;
	s->end_at_ms = s->started_at_ms + (int64_t)timeout * 1000;
	s->metadata = req->metadata ? json_incref(req->metadata) : json_object();
	s->env_vars = req->env_vars ? json_incref(req->env_vars) : json_object();
	s->auto_pause = req->auto_pause;
	s->auto_resume = req->auto_resume;
	s->allow_internet = req->allow_internet;
	if (hu_sbx_net_init(d, req, s, err) < 0)
		return -1;
	s->cpu_millis = d->cfg.default_cpu_millis ? d->cfg.default_cpu_millis : defaults.limits.cpu_millis;
	s->memory_bytes = d->cfg.default_memory_bytes ? d->cfg.default_memory_bytes : defaults.limits.memory_bytes;
	s->disk_bytes = d->cfg.default_disk_bytes ? d->cfg.default_disk_bytes : defaults.disk_bytes;
	s->timer = evtimer_new(d->base, on_deadline, s);
	if (!s->metadata || !s->env_vars || !s->timer)
		return hu_err_set(err, ENOMEM, "new sandbox");
	return 0;
}

/* A create between hu_sandbox_create_start and _finish. */
struct hu_pending_create {
	struct hu_daemon *d;
	struct hu_sbx *s;
	struct event *ready;
	hu_sbx_created_fn done;
	void *arg;
	struct hu_pending_create *next;
};

#define CREATE_TIMEOUT_S 15

static void pending_unlink(struct hu_pending_create *pc)
{
	struct hu_pending_create **pp = &pc->d->creating;
	while (*pp && *pp != pc)
		pp = &(*pp)->next;
	if (*pp)
		*pp = pc->next;
	pc->d->n_creating--;
	event_free(pc->ready);
}

/* The sandbox built its root (or failed, or timed out): store it, register
 * it, arm its deadline, answer. */
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
	if (hu_store_sandbox_put(d->store, s, &err) < 0)
		goto fail_rt;
	if (hu_registry_add(d->reg, s, &err) < 0) {
		hu_store_sandbox_delete(d->store, s->id, &ignored);
		goto fail_rt;
	}
	arm_deadline(s);
	hu_log(HU_LOG_INFO, s->id, 0, "created for team %s from %s, timeout %d s", s->team, s->template_id,
	       s->timeout_s);
	pc->done(d, s, NULL, pc->arg);
	free(pc);
	return;
fail_rt:
	hu_sandbox_destroy(s->rt, &ignored);
	s->rt = NULL;
fail:
	hu_err_prefix(&err, "create sandbox");
	hu_sbx_free(s);
	pc->done(d, NULL, &err, pc->arg);
	free(pc);
}

int hu_sbx_create_async(struct hu_daemon *d, const char *team, const struct hu_new_sandbox *req,
			hu_sbx_created_fn done, void *arg, hu_err *err)
{
	const char *tpl = hu_template_resolve(req->template_id);
	struct hu_sandbox_spec spec;
	struct hu_pending_create *pc = NULL;
	struct hu_sbx *s;
	hu_err ignored;

	if (!tpl)
		return hu_err_set(err, -ENOENT, "template '%s' not found (this server provides: base)",
				  req->template_id);
	if (d->cfg.max_sandboxes && hu_registry_count(d->reg) + d->n_creating >= d->cfg.max_sandboxes)
		return hu_err_set(err, -EAGAIN, "this server runs its maximum of %u sandboxes", d->cfg.max_sandboxes);
	s = calloc(1, sizeof(*s));
	pc = calloc(1, sizeof(*pc));
	if (!s || !pc) {
		free(pc);
		free(s);
		return hu_err_set(err, ENOMEM, "new sandbox");
	}
	if (sbx_init(d, team, req, s, err) < 0)
		goto fail;
	spec_from(d, s, tpl, &spec);
	if (hu_sandbox_create_start(d->rt, &spec, &s->rt, err) < 0)
		goto fail;
	*pc = (struct hu_pending_create){.d = d, .s = s, .done = done, .arg = arg};
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
	hu_err_prefix(err, "create sandbox");
	hu_sbx_free(s);
	free(pc);
	return -1;
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
		hu_sbx_free(pc->s);
		hu_err_set(&err, ECANCELED, "the server is shutting down");
		pc->done(d, NULL, &err, pc->arg);
		free(pc);
	}
}

int hu_sbx_kill(struct hu_daemon *d, struct hu_sbx *s, const char *why, hu_err *err)
{
	hu_err e;
	int rc = 0;

	hu_log(HU_LOG_INFO, s->id, 0, "kill: %s", why);
	/* Unwatch first: destroying closes the pidfd the watch polls. */
	hu_registry_remove(d->reg, s);
	if (s->rt && hu_sandbox_destroy(s->rt, &e) < 0) {
		hu_log(HU_LOG_ERROR, s->id, 0, "%s", e.msg);
		*err = e;
		rc = -1;
	}
	s->rt = NULL;
	hu_http_forget_sandbox(d, s);
	if (hu_store_sandbox_delete(d->store, s->id, &e) < 0) {
		hu_log(HU_LOG_ERROR, s->id, 0, "%s", e.msg);
		if (rc == 0)
			*err = e;
		rc = -1;
	}
	hu_sbx_free(s);
	return rc;
}

int hu_sbx_pause(struct hu_daemon *d, struct hu_sbx *s, hu_err *err)
{
	hu_err ignored;

	if (s->state == HU_SBX_PAUSED)
		return hu_err_set(err, -EALREADY, "sandbox %s is already paused", s->id);
	if (hu_sandbox_freeze(s->rt, err) < 0)
		return -1;
	s->state = HU_SBX_PAUSED;
	if (hu_store_sandbox_put(d->store, s, err) < 0) {
		s->state = HU_SBX_RUNNING;
		hu_sandbox_thaw(s->rt, &ignored);
		return -1;
	}
	evtimer_del(s->timer);
	hu_log(HU_LOG_INFO, s->id, 0, "paused");
	return 0;
}

int hu_sbx_resume(struct hu_daemon *d, struct hu_sbx *s, int32_t timeout_s, hu_err *err)
{
	int64_t old_end = s->end_at_ms;
	hu_err ignored;

	if (s->state == HU_SBX_RUNNING)
		return hu_err_set(err, -EALREADY, "sandbox %s is already running", s->id);
	if (hu_sandbox_thaw(s->rt, err) < 0)
		return -1;
	s->state = HU_SBX_RUNNING;
	s->end_at_ms = hu_wall_ms() + (int64_t)(timeout_s ? timeout_s : s->timeout_s) * 1000;
	if (hu_store_sandbox_put(d->store, s, err) < 0) {
		s->state = HU_SBX_PAUSED;
		s->end_at_ms = old_end;
		hu_sandbox_freeze(s->rt, &ignored);
		return -1;
	}
	arm_deadline(s);
	hu_log(HU_LOG_INFO, s->id, 0, "resumed");
	return 0;
}

/* Store a new deadline (and window) or leave both as they were. */
static int set_deadline(struct hu_daemon *d, struct hu_sbx *s, int64_t end_at_ms, int32_t timeout_s, hu_err *err)
{
	int64_t old_end = s->end_at_ms;
	int32_t old_timeout = s->timeout_s;

	s->end_at_ms = end_at_ms;
	s->timeout_s = timeout_s;
	if (hu_store_sandbox_put(d->store, s, err) < 0) {
		s->end_at_ms = old_end;
		s->timeout_s = old_timeout;
		return -1;
	}
	if (s->state == HU_SBX_RUNNING)
		arm_deadline(s);
	return 0;
}

int hu_sbx_set_timeout(struct hu_daemon *d, struct hu_sbx *s, int32_t timeout_s, hu_err *err)
{
	int32_t t = timeout_s ? timeout_s : (int32_t)d->cfg.default_timeout_s;
	return set_deadline(d, s, hu_wall_ms() + (int64_t)t * 1000, t, err);
}

int hu_sbx_extend(struct hu_daemon *d, struct hu_sbx *s, int32_t seconds, hu_err *err)
{
	int64_t end = hu_wall_ms() + (int64_t)seconds * 1000;
	if (end <= s->end_at_ms)
		return 0;
	return set_deadline(d, s, end, s->timeout_s, err);
}

static int take_first(struct hu_sbx *s, void *arg)
{
	*(struct hu_sbx **)arg = s;
	return 1;
}

void hu_sbx_kill_all(struct hu_daemon *d, const char *why)
{
	hu_err err;

	/* One at a time: killing changes the registry, so no iteration may be
	 * in progress (O(n * table) at shutdown, a few ms for thousands). */
	while (hu_registry_count(d->reg)) {
		struct hu_sbx *s = NULL;
		hu_registry_each(d->reg, take_first, &s);
		hu_sbx_kill(d, s, why, &err);
	}
}
