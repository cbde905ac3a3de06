/*
 * process.Process: the unary calls (List, SendInput, SendSignal, CloseStdin,
 * Update) and the registration of the whole service.
 *
 * A unary call opens a short-lived init connection, sends its request and
 * answers the HTTP request when init replies; the loop never blocks on init.
 * The HTTP request is answered exactly once whatever happens: init's reply,
 * init's connection closing (the sandbox died), or no reply in time (a
 * frozen sandbox). A process selected by tag is first resolved to its pid
 * with LIST_PROCS.
 */
#include <event2/event.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "daemon/http/connect.h"
#include "daemon/envd/envd_process.h"
#include "daemon/sandboxes/initconn.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/envd/handlers.h"

/* No reply from init by then: the sandbox is frozen or stuck. */
#define UNARY_TIMEOUT_MS 30000

/* The daemon's process calls in flight (one daemon per process). */
static struct hu_envd_work *in_flight;

void hu_envd_work_add(struct hu_envd_work *w)
{
	w->prev = NULL;
	w->next = in_flight;
	if (in_flight)
		in_flight->prev = w;
	in_flight = w;
}

void hu_envd_work_remove(struct hu_envd_work *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else if (in_flight == w)
		in_flight = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->prev = w->next = NULL;
}

void hu_envd_process_shutdown(struct hu_daemon *d)
{
	while (in_flight)
		in_flight->cancel(in_flight); /* unlists itself */
}

enum unary_op { OP_LIST, OP_STDIN, OP_SIGNAL, OP_CLOSE_STDIN, OP_RESIZE };

struct unary {
	struct hu_envd_work work; /* first: the list hands back a struct unary */
	struct hu_req *r; /* NULL once answered */
	enum unary_op op;
	struct hu_initconn *conn;
	struct event *timer;
	char *tag;          /* selector by tag, resolved with LIST_PROCS first */
	uint32_t pid;
	uint8_t *input;     /* OP_STDIN */
	size_t input_len;
	int signum;         /* OP_SIGNAL */
	uint16_t rows, cols; /* OP_RESIZE */
	uint32_t list_id;   /* the LIST_PROCS request, 0 = none */
	uint32_t op_id;     /* the operation's request */
	unsigned replies_left; /* STDIN is split into frames: one OK each */
};

const char *hu_envd_code_for_errno(int code)
{
	switch (code) {
	case ESRCH:
		return "not_found"; /* no such process: the SDK's kill() then returns false */
	case EPIPE:
	case ENOTTY:
		return "failed_precondition"; /* stdin closed, no terminal */
	case EINVAL:
	case ERANGE:
	case E2BIG:
		return "invalid_argument"; /* a request the decoders or init refused */
	default:
		return hu_connect_code_for_errno(code);
	}
}

static void unary_free(struct unary *u)
{
	hu_envd_work_remove(&u->work);
	hu_initconn_free(u->conn); /* safe inside its callbacks */
	if (u->timer)
		event_free(u->timer);
	free(u->tag);
	free(u->input);
	free(u);
}

/* Answer (msg stolen) or fail (msg NULL, code + text), then forget u. */
static void unary_done(struct unary *u, json_t *msg, const char *code, const char *text)
{
	struct hu_req *r = u->r;
	u->r = NULL;
	if (r && msg)
		hu_connect_reply(r, msg);
	else if (r)
		hu_connect_error(r, code ? code : "internal", "%s", text ? text : "internal error");
	else
		json_decref(msg);
	unary_free(u);
}

static void unary_fail(struct unary *u, const hu_err *err)
{
	unary_done(u, NULL, hu_envd_code_for_errno(err->code), err->msg);
}

/* Send the operation itself, now that the pid is known. */
static void send_op(struct unary *u)
{
	struct hu_buf b = {0};
	hu_err err;
	int rc = -1;

	u->op_id = hu_initconn_next_id(u->conn);
	u->replies_left = 1;
	switch (u->op) {
	case OP_STDIN:
		rc = hu_init_build_stdin(&b, u->op_id, u->pid, u->input, u->input_len, &err);
		if (u->input_len > HU_PROTO_CHUNK)
			u->replies_left = (unsigned)((u->input_len + HU_PROTO_CHUNK - 1) / HU_PROTO_CHUNK);
		break;
	case OP_SIGNAL:
		rc = hu_init_build_signal(&b, u->op_id, u->pid, u->signum, &err);
		break;
	case OP_CLOSE_STDIN:
		rc = hu_init_build_close_stdin(&b, u->op_id, u->pid, &err);
		break;
	case OP_RESIZE:
		rc = hu_init_build_resize(&b, u->op_id, u->pid, u->rows, u->cols, &err);
		break;
	case OP_LIST:
		break;
	}
	if (rc < 0 || hu_initconn_send(u->conn, &b, &err) < 0)
		unary_fail(u, &err);
	hu_buf_free(&b);
}

static void on_procs(struct unary *u, const uint8_t *payload, size_t len)
{
	hu_err err;
	json_t *list;

	if (u->op == OP_LIST) {
		if (hu_envd_encode_procs(payload, len, &list, &err) < 0)
			unary_fail(u, &err);
		else
			unary_done(u, list, NULL, NULL);
		return;
	}
	if (hu_envd_find_tag(payload, len, u->tag, &u->pid, &err) < 0) {
		unary_fail(u, &err);
		return;
	}
	send_op(u);
}

static void on_frame(struct hu_initconn *c, const struct hu_frame_hdr *hdr, const uint8_t *payload, void *arg)
{
	struct unary *u = arg;
	hu_err err;

	if (hdr->type == HU_MSG_ERROR && (hdr->id == u->list_id || hdr->id == u->op_id)) {
		hu_init_parse_error(payload, hdr->len, &err);
		unary_fail(u, &err);
	} else if (hdr->type == HU_MSG_PROCS && hdr->id == u->list_id && u->list_id) {
		on_procs(u, payload, hdr->len);
	} else if (hdr->type == HU_MSG_OK && hdr->id == u->op_id && u->op_id && --u->replies_left == 0) {
		unary_done(u, json_object(), NULL, NULL);
	}
}

static void on_close(struct hu_initconn *c, const hu_err *why, void *arg)
{
	unary_done(arg, NULL, "unavailable", "the sandbox is not running any more");
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	unary_done(arg, NULL, "deadline_exceeded", "the sandbox did not answer in time");
}

static void unary_cancel(struct hu_envd_work *w)
{
	unary_done((struct unary *)w, NULL, "unavailable", "the service is shutting down");
}

/* Open the connection and send the first request: LIST_PROCS for List and
 * for a tag selector, else the operation. Takes u. */
static void unary_run(struct unary *u, struct hu_sbx *s)
{
	struct hu_buf b = {0};
	hu_err err;
	struct timeval tv = {.tv_sec = UNARY_TIMEOUT_MS / 1000, .tv_usec = (UNARY_TIMEOUT_MS % 1000) * 1000};

	u->timer = evtimer_new(hu_req_daemon(u->r)->base, on_timeout, u);
	if (!u->timer) {
		unary_done(u, NULL, "resource_exhausted", "out of memory");
		return;
	}
	if (hu_initconn_open(hu_req_daemon(u->r)->base, hu_sbx_socket(s), on_frame, on_close, u, &u->conn, &err) < 0) {
		hu_log(HU_LOG_WARN, s->id, u->r->id, "process call: %s", err.msg);
		unary_done(u, NULL, "unavailable", "the sandbox is not running");
		return;
	}
	evtimer_add(u->timer, &tv);
	/* The sandbox may be killed (and its struct freed) before init answers;
	 * the connection tells us then, and nothing may read hu_req_sbx(r) any more. */
	u->r->target = NULL;
	if (u->op != OP_LIST && !u->tag) {
		send_op(u);
		return;
	}
	u->list_id = hu_initconn_next_id(u->conn);
	if (hu_init_build_simple(&b, HU_MSG_LIST_PROCS, u->list_id, &err) < 0 || hu_initconn_send(u->conn, &b, &err) < 0)
		unary_fail(u, &err);
	hu_buf_free(&b);
}

/* The common start of a unary handler: the request message and a call
 * aimed at the selected process (select = false for List). NULL when the
 * request has been answered already. */
static struct unary *unary_new(struct hu_req *r, enum unary_op op, bool select, json_t **msg)
{
	struct hu_envd_selector sel;
	hu_err err;

	if (hu_connect_unary_request(r, msg) < 0)
		return NULL; /* answered invalid_argument */
	if (select && hu_envd_decode_selector(*msg, &sel, &err) < 0) {
		hu_connect_error(r, "invalid_argument", "%s", err.msg);
		json_decref(*msg);
		return NULL;
	}
	struct unary *u = calloc(1, sizeof(*u));
	if (u && select) {
		u->pid = sel.pid;
		u->tag = sel.tag ? strdup(sel.tag) : NULL;
	}
	if (!u || (select && sel.tag && !u->tag)) {
		free(u);
		hu_connect_error(r, "resource_exhausted", "out of memory");
		json_decref(*msg);
		return NULL;
	}
	u->r = r;
	u->op = op;
	u->work.cancel = unary_cancel;
	hu_envd_work_add(&u->work);
	return u;
}

/* Reply invalid_argument for a field decoder's error; frees u and msg. */
static void reject(struct unary *u, json_t *msg, const hu_err *err)
{
	json_decref(msg);
	unary_done(u, NULL, "invalid_argument", err->msg);
}

void hu_envd_process_list(struct hu_req *r)
{
	json_t *msg;
	struct unary *u = unary_new(r, OP_LIST, false, &msg);
	if (!u)
		return;
	json_decref(msg);
	unary_run(u, hu_req_sbx(r));
}

void hu_envd_process_send_input(struct hu_req *r)
{
	json_t *msg;
	hu_err err;
	struct unary *u = unary_new(r, OP_STDIN, true, &msg);
	if (!u)
		return;
	if (hu_envd_decode_input(msg, &u->input, &u->input_len, &err) < 0) {
		reject(u, msg, &err);
		return;
	}
	json_decref(msg);
	unary_run(u, hu_req_sbx(r));
}

void hu_envd_process_send_signal(struct hu_req *r)
{
	json_t *msg;
	hu_err err;
	struct unary *u = unary_new(r, OP_SIGNAL, true, &msg);
	if (!u)
		return;
	if (hu_envd_decode_signal(msg, &u->signum, &err) < 0) {
		reject(u, msg, &err);
		return;
	}
	json_decref(msg);
	unary_run(u, hu_req_sbx(r));
}

void hu_envd_process_close_stdin(struct hu_req *r)
{
	json_t *msg;
	struct unary *u = unary_new(r, OP_CLOSE_STDIN, true, &msg);
	if (!u)
		return;
	json_decref(msg);
	unary_run(u, hu_req_sbx(r));
}

void hu_envd_process_update(struct hu_req *r)
{
	json_t *msg;
	hu_err err;
	int has_pty;
	struct unary *u = unary_new(r, OP_RESIZE, true, &msg);
	if (!u)
		return;
	if (hu_envd_decode_pty_size(msg, &has_pty, &u->rows, &u->cols, &err) < 0) {
		reject(u, msg, &err);
		return;
	}
	json_decref(msg);
	if (!has_pty) {
		/* Nothing to update (pty is the only updatable field). */
		unary_done(u, json_object(), NULL, NULL);
		return;
	}
	unary_run(u, hu_req_sbx(r));
}
