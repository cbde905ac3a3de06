/* A template's start command and readiness check (tpl_start.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/initconn.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/templates.h"
#include "daemon/sandboxes/tpl_start.h"
#include "runtime/initclient.h"
#include "util/slist.h"

#define READY_POLL_MS 200
#define ENV_MAX 256

enum phase { PH_START, PH_READY, PH_WAIT };

struct tpl_start {
	struct hu_daemon *d;
	struct hu_initconn *conn;
	struct event *poll, *deadline;
	hu_tpl_start_fn done;
	void *arg;
	enum phase phase;
	uint32_t req;
	char start_cmd[HU_TPL_CMD_MAX], ready_cmd[HU_TPL_CMD_MAX];
	char user[HU_TPL_USER_MAX], cwd[HU_TPL_CWD_MAX];
	char *envv[ENV_MAX];
	size_t envc;
	uint32_t timeout_s;
	struct tpl_start *next; /* d->tpl_starts */
};

static void ts_free(struct tpl_start *t)
{
	HU_SLIST_UNLINK(&t->d->tpl_starts, t);
	if (t->conn)
		hu_initconn_free(t->conn);
	if (t->poll)
		event_free(t->poll);
	if (t->deadline)
		event_free(t->deadline);
	for (size_t i = 0; i < t->envc; i++)
		free(t->envv[i]);
	free(t);
}

static void finish(struct tpl_start *t, const hu_err *err)
{
	hu_tpl_start_fn done = t->done;
	void *arg = t->arg;
	ts_free(t);
	done(arg, err);
}

static void fail(struct tpl_start *t, const char *what, const char *why)
{
	hu_err err;
	hu_err_set(&err, -EIO, "template %s: %s", what, why);
	finish(t, &err);
}

/* SPAWN `sh -c cmd`; the reply frames carry t->req */
static int spawn(struct tpl_start *t, const char *cmd, const char *tag, hu_err *err)
{
	const char *argv[] = {"/bin/sh", "-c", cmd};
	struct hu_spawn_req req = {
		.argv = argv, .argc = 3, .envv = (const char *const *)t->envv, .envc = t->envc,
		.cwd = t->cwd[0] ? t->cwd : NULL, .user = t->user, .tag = tag,
	};
	struct hu_buf b = {0};
	t->req = hu_initconn_next_id(t->conn);
	int rc = hu_init_build_spawn(&b, t->req, &req, err);
	if (rc == 0)
		rc = hu_initconn_send(t->conn, &b, err);
	hu_buf_free(&b);
	return rc;
}

static void run_ready(struct tpl_start *t)
{
	hu_err err;
	if (!t->ready_cmd[0]) {
		finish(t, NULL);
		return;
	}
	t->phase = PH_READY;
	if (spawn(t, t->ready_cmd, NULL, &err) < 0)
		fail(t, "readiness check", err.msg);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
	run_ready(arg);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct tpl_start *t = arg;
	char why[96];
	snprintf(why, sizeof(why), "did not pass within %u s", t->timeout_s);
	fail(t, "readiness check", why);
}

static void on_frame(struct hu_initconn *c, const struct hu_frame_hdr *hdr, const uint8_t *payload, void *arg)
{
	struct tpl_start *t = arg;
	struct hu_init_event ev;
	hu_err err;

	if (hu_init_parse_event(hdr, payload, &ev, &err) < 0) {
		fail(t, "start", err.msg);
		return;
	}
	if (ev.id != t->req)
		return; /* the start command's output and exit, after it was spawned */
	if (ev.type == HU_MSG_ERROR) {
		hu_init_parse_error(payload, hdr->len, &err);
		fail(t, t->phase == PH_START ? "start command" : "readiness check", err.msg);
		return;
	}
	if (t->phase == PH_START && ev.type == HU_MSG_SPAWNED) {
		run_ready(t);
		return;
	}
	if (t->phase == PH_READY && ev.type == HU_MSG_EXIT) {
		if (ev.exited && ev.exit_code == 0 && ev.signum == 0) {
			finish(t, NULL);
			return;
		}
		t->phase = PH_WAIT;
		struct timeval tv = {0, READY_POLL_MS * 1000};
		evtimer_add(t->poll, &tv);
	}
}

static void on_close(struct hu_initconn *c, const hu_err *why, void *arg)
{
	fail(arg, "start", why && why->msg[0] ? why->msg : "the sandbox's init went away");
}

int hu_tpl_start(struct hu_daemon *d, struct hu_sbx *s, const struct hu_tpl_meta *m, hu_tpl_start_fn done, void *arg,
		 hu_err *err)
{
	struct tpl_start *t = calloc(1, sizeof(*t));
	const char *k;
	json_t *v;

	if (!t)
		return hu_err_set(err, ENOMEM, "template start");
	*t = (struct tpl_start){.d = d, .done = done, .arg = arg,
				.timeout_s = m->ready_timeout_s ? m->ready_timeout_s : HU_TPL_READY_TIMEOUT_S};
	snprintf(t->start_cmd, sizeof(t->start_cmd), "%s", m->start_cmd);
	snprintf(t->ready_cmd, sizeof(t->ready_cmd), "%s", m->ready_cmd);
	snprintf(t->user, sizeof(t->user), "%s", m->user[0] ? m->user : "user");
	snprintf(t->cwd, sizeof(t->cwd), "%s", m->cwd);
	json_object_foreach(s->env_vars, k, v) {
		if (t->envc == ENV_MAX)
			break;
		if (asprintf(&t->envv[t->envc], "%s=%s", k, json_string_value(v)) < 0) {
			ts_free(t);
			return hu_err_set(err, ENOMEM, "template start");
		}
		t->envc++;
	}
	t->poll = evtimer_new(d->base, on_poll, t);
	t->deadline = evtimer_new(d->base, on_deadline, t);
	struct timeval tv = {t->timeout_s, 0};
	if (!t->poll || !t->deadline || evtimer_add(t->deadline, &tv) < 0 ||
	    hu_initconn_open(d->base, hu_sandbox_socket(s->rt), on_frame, on_close, t, &t->conn, err) < 0) {
		ts_free(t);
		return err->code ? -1 : hu_err_set(err, ENOMEM, "template start");
	}
	t->next = d->tpl_starts;
	d->tpl_starts = t;
	if (t->start_cmd[0]) {
		t->phase = PH_START;
		if (spawn(t, t->start_cmd, "template-start", err) < 0) {
			ts_free(t);
			return -1;
		}
		return 0;
	}
	/* only a readiness check: its first run, from the loop */
	t->phase = PH_WAIT;
	struct timeval now = {0, 0};
	evtimer_add(t->poll, &now);
	return 0;
}

int hu_tpl_start_sandbox(struct hu_daemon *d, struct hu_sbx *s, hu_tpl_start_fn done, void *arg, hu_err *err)
{
	struct hu_tpl_meta m;
	hu_err ignore;
	int rc = 0;

	hu_err_clear(err);
	if (hu_template_lookup(d, NULL, s->template_id, &m, &ignore) < 0)
		return 0;
	if (m.start_cmd[0] || m.ready_cmd[0])
		rc = hu_tpl_start(d, s, &m, done, arg, err) < 0 ? -1 : 1;
	hu_tpl_meta_free(&m);
	return rc;
}

void hu_tpl_start_cancel_all(struct hu_daemon *d)
{
	while (d->tpl_starts)
		fail(d->tpl_starts, "start", "the server is shutting down");
}
