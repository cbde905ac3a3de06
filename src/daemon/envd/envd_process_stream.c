/*
 * process.Process/Start and /Connect: server streams fed by one init
 * connection each.
 *
 * Start sends SPAWN, Connect sends ATTACH; both then relay the same events:
 * start (the pid) first, data as it comes, keepalives while it is quiet,
 * end when the process exits. Flow control runs end to end: a slow HTTP
 * client pauses the init connection, init's bounded queue fills and init
 * stops reading the process's pipes, so the process blocks on write.
 *
 * A client that goes away only closes the init connection: the process keeps
 * running (E2B semantics) and can be attached again with Connect. The
 * request's Connect-Timeout-Ms bounds the stream; for Start it bounds the
 * process too (SIGKILL), as envd does.
 */
#include <event2/event.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "daemon/envd/handlers.h"
#include "daemon/http/connect.h"
#include "daemon/envd/envd_process.h"
#include "daemon/common/stats.h"
#include "daemon/sandboxes/templates.h"
#include "util/clock.h"
#include "daemon/sandboxes/initconn.h"
#include "daemon/sandboxes/registry.h"
#include "util/parse.h"

/* The Keepalive-Ping-Interval the SDK sends is 50 (seconds); bounds keep a
 * broken header from making a hot timer or none at all. */
#define KEEPALIVE_DEFAULT_S 50
#define KEEPALIVE_MIN_S 1
#define KEEPALIVE_MAX_S 3600
/* After a deadline kill, how long to wait for init to confirm the signal
 * (a frozen sandbox never answers). */
#define KILL_GRACE_MS 5000

struct proc_stream {
	struct hu_envd_work work; /* first: the list hands back a struct proc_stream */
	struct hu_daemon *d;
	char sbx_id[HU_ID_MAX]; /* for logs: the sandbox may be gone by then */
	uint64_t req_id;
	bool kill_on_deadline;  /* Start: the process does not outlive the request */

	struct hu_stream *stream; /* NULL once ended */
	struct hu_initconn *conn; /* NULL once closed */
	struct event *deadline;   /* Connect-Timeout-Ms, or NULL */
	struct event *keepalive;  /* persistent, armed once started */
	struct event *grace;      /* bounds the wait for the kill's reply */
	struct timeval keepalive_tv;

	uint32_t req;      /* id of the SPAWN/ATTACH */
	uint32_t kill_req; /* id of the deadline's SIGNAL, 0 = none sent */
	uint32_t pid;      /* 0 until SPAWNED/ATTACHED */
	int64_t asked_mono_ms; /* when the SPAWN went out (exec latency) */
	bool is_start;
	bool kill_pending; /* the deadline came before SPAWNED: kill on arrival */
};

static void ps_free_if_done(struct proc_stream *ps)
{
	if (ps->stream || ps->conn)
		return;
	hu_envd_work_remove(&ps->work);
	if (ps->deadline)
		event_free(ps->deadline);
	if (ps->keepalive)
		event_free(ps->keepalive);
	if (ps->grace)
		event_free(ps->grace);
	free(ps);
}

/* End the HTTP side (the stream frees itself); the init side may live on
 * a little (a kill waiting for its reply). */
static void ps_end_stream(struct proc_stream *ps, const char *code, const char *msg)
{
	struct hu_stream *s = ps->stream;
	if (!s)
		return;
	ps->stream = NULL;
	/* The deadline stays armed: a Start's process may outlive its stream. */
	event_del(ps->keepalive);
	hu_stream_end(s, code, msg);
}

static void ps_drop_conn(struct proc_stream *ps)
{
	if (ps->grace)
		event_del(ps->grace);
	hu_initconn_free(ps->conn); /* safe inside its callbacks */
	ps->conn = NULL;
}

static void ps_finish(struct proc_stream *ps, const char *code, const char *msg)
{
	ps_end_stream(ps, code, msg);
	ps_drop_conn(ps);
	ps_free_if_done(ps);
}

/* The client went away: only our view of the process ends. Except that a
 * Start's deadline is the process's own (as envd's process context): the
 * connection then stays, its output discarded, to kill at the deadline. */
static void ps_client_gone(struct proc_stream *ps)
{
	hu_log(HU_LOG_DEBUG, ps->sbx_id, ps->req_id, "process %u: client gone, process keeps running", ps->pid);
	if (ps->kill_on_deadline && ps->deadline && ps->conn && ps->stream && !ps->d->stopping) {
		ps_end_stream(ps, NULL, NULL);
		hu_initconn_resume(ps->conn); /* a paused read would block the process */
		return;
	}
	ps_finish(ps, NULL, NULL);
}

/* Send one event (stolen); pause the producer when the client is behind.
 * Returns -1 when the stream is over: ps may be freed, do not touch it. */
static int ps_send(struct proc_stream *ps, json_t *msg)
{
	if (!msg) {
		ps_finish(ps, "internal", "out of memory encoding an event");
		return -1;
	}
	int r = hu_stream_send(ps->stream, msg);
	if (r < 0) {
		ps_client_gone(ps);
		return -1;
	}
	if (r > 0 && ps->conn)
		hu_initconn_pause(ps->conn);
	return 0;
}

/* ---- killing at the deadline -------------------------------------------------- */

static void grace_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc_stream *ps = arg;
	hu_log(HU_LOG_WARN, ps->sbx_id, ps->req_id, "process %u: no reply to the deadline kill", ps->pid);
	ps_drop_conn(ps);
	ps_free_if_done(ps);
}

static void send_kill(struct proc_stream *ps)
{
	struct hu_buf b = {0};
	hu_err err;

	ps->kill_pending = false;
	ps->kill_req = hu_initconn_next_id(ps->conn);
	if (hu_init_build_signal(&b, ps->kill_req, ps->pid, SIGKILL, &err) < 0 ||
	    hu_initconn_send(ps->conn, &b, &err) < 0) {
		hu_log(HU_LOG_WARN, ps->sbx_id, ps->req_id, "process %u: deadline kill: %s", ps->pid, err.msg);
		ps_drop_conn(ps);
	}
	hu_buf_free(&b);
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc_stream *ps = arg;

	ps_end_stream(ps, "deadline_exceeded", "the request's timeout (Connect-Timeout-Ms) was reached");
	if (!ps->kill_on_deadline || !ps->conn) {
		ps_finish(ps, NULL, NULL);
		return;
	}
	/* Output is discarded from here; keep reading for the kill's reply. */
	hu_initconn_resume(ps->conn);
	struct timeval tv = {.tv_sec = KILL_GRACE_MS / 1000, .tv_usec = (KILL_GRACE_MS % 1000) * 1000};
	ps->grace = evtimer_new(ps->d->base, grace_cb, ps);
	if (!ps->grace) {
		ps_finish(ps, NULL, NULL);
		return;
	}
	evtimer_add(ps->grace, &tv);
	if (ps->pid)
		send_kill(ps);
	else
		ps->kill_pending = true;
	ps_free_if_done(ps);
}

/* ---- events from init ---------------------------------------------------------------- */

static void keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc_stream *ps = arg;
	if (ps->stream)
		ps_send(ps, hu_envd_event_keepalive());
}

/* SPAWNED/ATTACHED: the start event opens the stream. */
static void on_started(struct proc_stream *ps, uint32_t pid)
{
	ps->pid = pid;
	if (ps->kill_pending) {
		send_kill(ps);
		ps_free_if_done(ps);
		return;
	}
	if (!ps->stream)
		return;
	hu_log(HU_LOG_DEBUG, ps->sbx_id, ps->req_id, "process %u: streaming", pid);
	if (ps->is_start)
		hu_stat_observe(HU_HIST_EXEC, (double)(hu_mono_ms() - ps->asked_mono_ms) / 1000.0);
	if (ps_send(ps, hu_envd_event_start(pid)) < 0)
		return;
	evtimer_add(ps->keepalive, &ps->keepalive_tv);
}

static void on_frame(struct hu_initconn *c, const struct hu_frame_hdr *hdr, const uint8_t *payload, void *arg)
{
	struct proc_stream *ps = arg;
	struct hu_init_event ev;
	hu_err err;

	if (hu_init_parse_event(hdr, payload, &ev, &err) < 0) {
		ps_finish(ps, "internal", err.msg);
		return;
	}
	if (ps->kill_req && ev.id == ps->kill_req && (ev.type == HU_MSG_OK || ev.type == HU_MSG_ERROR)) {
		ps_drop_conn(ps); /* killed (or already gone): nothing more to do */
		ps_free_if_done(ps);
		return;
	}
	if (ev.id != ps->req)
		return;
	switch (ev.type) {
	case HU_MSG_SPAWNED:
	case HU_MSG_ATTACHED:
		on_started(ps, ev.pid);
		break;
	case HU_MSG_ERROR:
		hu_init_parse_error(payload, hdr->len, &err);
		ps_finish(ps, hu_envd_code_for_errno(err.code), err.msg);
		break;
	case HU_MSG_OUTPUT:
		if (ps->stream && ps->pid)
			ps_send(ps, hu_envd_event_data(ev.stream, ev.data, ev.data_len));
		break;
	case HU_MSG_EXIT:
		if (ps->stream && ps_send(ps, hu_envd_event_end(&ev)) < 0)
			return;
		ps_finish(ps, NULL, NULL);
		break;
	default:
		break;
	}
}

static void on_close(struct hu_initconn *c, const hu_err *why, void *arg)
{
	struct proc_stream *ps = arg;
	struct hu_stream *s = ps->stream;

	if (s && hu_registry_sandbox_gone(ps->d->reg, ps->sbx_id)) {
		/* killed: cut the stream, as the end of E2B's VM does */
		ps->stream = NULL;
		event_del(ps->keepalive);
		hu_stream_abort(s, "the sandbox was killed");
		ps_drop_conn(ps);
		ps_free_if_done(ps);
		return;
	}
	if (s)
		hu_log(HU_LOG_WARN, ps->sbx_id, ps->req_id, "process %u: init connection lost: %s", ps->pid, why->msg);
	ps_finish(ps, "unavailable", "the sandbox is not running any more");
}

/* ---- the HTTP side ---------------------------------------------------------------------- */

static void on_pause(void *arg)
{
	struct proc_stream *ps = arg;
	if (ps->conn)
		hu_initconn_pause(ps->conn);
}

static void on_resume(void *arg)
{
	struct proc_stream *ps = arg;
	if (ps->conn)
		hu_initconn_resume(ps->conn);
}

static void on_gone(void *arg)
{
	ps_client_gone(arg);
}

/* Connect-Timeout-Ms (0 = none) and Keepalive-Ping-Interval. */
static int read_timing(struct hu_req *r, uint64_t *deadline_ms, uint64_t *keepalive_s, hu_err *err)
{
	const char *t = hu_req_header(r, "Connect-Timeout-Ms");
	const char *k = hu_req_header(r, "Keepalive-Ping-Interval");
	hu_err ignored;

	*deadline_ms = 0;
	if (t && (hu_parse_u64(t, deadline_ms, err) < 0 || *deadline_ms > 10000000000ull)) {
		hu_err_set(err, EINVAL, "Connect-Timeout-Ms must be at most 10 digits of milliseconds");
		return -1;
	}
	*keepalive_s = KEEPALIVE_DEFAULT_S;
	if (k && hu_parse_u64(k, keepalive_s, &ignored) < 0)
		*keepalive_s = KEEPALIVE_DEFAULT_S;
	if (*keepalive_s < KEEPALIVE_MIN_S)
		*keepalive_s = KEEPALIVE_MIN_S;
	if (*keepalive_s > KEEPALIVE_MAX_S)
		*keepalive_s = KEEPALIVE_MAX_S;
	return 0;
}

/* The request frame of a Start (SPAWN) or a Connect (ATTACH), with id 1
 * (the first id of a fresh connection). */
static int build_request(struct hu_req *r, const json_t *msg, bool start, struct hu_buf *b, hu_err *err)
{
	if (start) {
		struct hu_envd_start st;
		struct hu_spawn_req req;
		if (hu_envd_decode_start(msg, hu_req_sbx(r)->env_vars, &st, err) < 0)
			return -1;
		/* a command naming no user or cwd gets its template's */
		const char *user, *cwd;
		char user_buf[HU_TPL_USER_MAX], cwd_buf[HU_TPL_CWD_MAX];
		hu_template_process_defaults(hu_req_daemon(r), hu_req_sbx(r), &user, &cwd, user_buf, sizeof(user_buf), cwd_buf,
					     sizeof(cwd_buf));
		hu_envd_start_spawn_req(&st, r->user ? r->user : user, &req);
		if (!req.cwd)
			req.cwd = cwd;
		int rc = hu_init_build_spawn(b, 1, &req, err);
		hu_envd_start_clear(&st);
		if (rc < 0 && err->code == E2BIG)
			hu_err_set(err, EINVAL, "the command line and environment are too large");
		return rc;
	}
	struct hu_envd_selector sel;
	if (hu_envd_decode_selector(msg, &sel, err) < 0)
		return -1;
	return hu_init_build_attach(b, 1, sel.pid, sel.tag, err);
}

/* Shutdown: the client side is gone already (on_gone); end the rest. */
static void ps_cancel(struct hu_envd_work *w)
{
	ps_finish((struct proc_stream *)w, "unavailable", "the service is shutting down");
}

static struct proc_stream *ps_new(struct hu_req *r, bool start, uint64_t keepalive_s)
{
	struct proc_stream *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	ps->d = hu_req_daemon(r);
	ps->req_id = r->id;
	snprintf(ps->sbx_id, sizeof(ps->sbx_id), "%s", hu_req_sbx(r)->id);
	ps->kill_on_deadline = start;
	ps->keepalive_tv.tv_sec = (time_t)keepalive_s;
	ps->keepalive = event_new(hu_req_daemon(r)->base, -1, EV_PERSIST, keepalive_cb, ps);
	if (!ps->keepalive) {
		free(ps);
		return NULL;
	}
	ps->work.cancel = ps_cancel;
	hu_envd_work_add(&ps->work);
	return ps;
}

/* Decode and check everything first, then start the reply: from then on
 * every error is the stream's end-stream error, which the SDK raises with
 * its code and message (an HTTP error status would lose the message). */
static void stream_open(struct hu_req *r, bool start)
{
	struct hu_buf frame = {0};
	json_t *msg = NULL;
	hu_err err = {0};
	uint64_t deadline_ms = 0, keepalive_s = 0;
	const uint8_t *body;
	size_t len;
	int bad;

	body = hu_req_body(r, &len);
	bad = hu_connect_parse_envelope(body, len, &msg, &err) < 0 || read_timing(r, &deadline_ms, &keepalive_s, &err) < 0 ||
	      build_request(r, msg, start, &frame, &err) < 0;
	json_decref(msg);

	struct proc_stream *ps = ps_new(r, start, keepalive_s);
	static const struct hu_stream_cbs no_cbs;
	struct hu_stream_cbs cbs = {.on_pause = on_pause, .on_resume = on_resume, .on_gone = on_gone, .arg = ps};
	struct hu_stream *s = hu_stream_start(r, ps ? &cbs : &no_cbs);
	if (!s) {
		/* The stream could not even start: it has answered the request. */
		if (ps) {
			hu_envd_work_remove(&ps->work);
			event_free(ps->keepalive);
			free(ps);
		}
		hu_buf_free(&frame);
		return;
	}
	if (!ps || bad) {
		hu_stream_end(s, ps ? hu_envd_code_for_errno(err.code) : "resource_exhausted",
			      ps ? err.msg : "out of memory");
		if (ps)
			ps_free_if_done(ps);
		hu_buf_free(&frame);
		return;
	}
	ps->stream = s;
	ps->req = 1;
	ps->asked_mono_ms = hu_mono_ms();
	ps->is_start = start;
	if (hu_initconn_open(hu_req_daemon(r)->base, hu_sbx_socket(hu_req_sbx(r)), on_frame, on_close, ps, &ps->conn, &err) < 0) {
		hu_log(HU_LOG_WARN, ps->sbx_id, ps->req_id, "process %s: %s", start ? "start" : "connect", err.msg);
		hu_buf_free(&frame);
		ps_finish(ps, "unavailable", "the sandbox is not running");
		return;
	}
	/* The sandbox may be killed (and its struct freed) while the stream
	 * runs; the connection tells us then, and nothing may read hu_req_sbx(r). */
	r->target = NULL;
	/* A fresh connection's first id is the 1 the frame was built with. */
	ps->req = hu_initconn_next_id(ps->conn);
	if (hu_initconn_send(ps->conn, &frame, &err) < 0) {
		hu_buf_free(&frame);
		ps_finish(ps, "internal", err.msg);
		return;
	}
	hu_buf_free(&frame);
	if (deadline_ms) {
		struct timeval tv = {.tv_sec = (time_t)(deadline_ms / 1000), .tv_usec = (suseconds_t)(deadline_ms % 1000) * 1000};
		ps->deadline = evtimer_new(hu_req_daemon(r)->base, deadline_cb, ps);
		if (!ps->deadline) {
			ps_finish(ps, "resource_exhausted", "out of memory");
			return;
		}
		evtimer_add(ps->deadline, &tv);
	}
}

void hu_envd_process_start(struct hu_req *r)
{
	stream_open(r, true);
}

void hu_envd_process_connect(struct hu_req *r)
{
	stream_open(r, false);
}
