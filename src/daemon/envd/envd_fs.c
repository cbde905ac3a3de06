/*
 * envd's filesystem.Filesystem service: the calls the e2b SDK 2.51.0 makes
 * (Stat, MakeDir, Move, ListDir, Remove, WatchDir; the polling watcher the
 * Python SDK uses is envd_watcher.c), each mapped onto one hutch-init file request made as the
 * calling user. Init resolves relative paths against the user's home and
 * runs inside the sandbox's root, so "../" and symlinks never leave it.
 *
 * Unary calls open a short-lived init connection, send one request and
 * answer when init replies, when its connection closes (the sandbox died)
 * or after a timeout (a frozen sandbox). WatchDir keeps its connection for
 * the life of the stream: closing it is what stops init's watch.
 *
 * hu_envd_fs_register() also registers GET/POST /files (files.c).
 */
#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "daemon/http/connect.h"
#include "daemon/envd/fs_json.h"
#include "daemon/sandboxes/initconn.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/envd/handlers.h"
#include "runtime/initclient.h"
#include "util/parse.h"

/* No reply from init by then: the sandbox is frozen or stuck. */
#define FS_CALL_TIMEOUT_MS 30000
/* A recursive watch follows subdirectories this deep (init's limit for
 * DEPTH, HU_REQ_MAX_DEPTH). */
#define WATCH_RECURSIVE_DEPTH 64
#define KEEPALIVE_DEFAULT_S 50
#define KEEPALIVE_MAX_S 3600

/* ---- request messages --------------------------------------------------------- */

/* A string field of a request message ("" when absent or null). */
static int msg_str(const json_t *msg, const char *key, const char **out, hu_err *err)
{
	const json_t *v = json_object_get(msg, key);
	*out = "";
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return hu_err_set(err, -EINVAL, "%s must be a string", key);
	*out = json_string_value(v);
	return 0;
}

static int msg_path(const json_t *msg, const char *key, const char **out, hu_err *err)
{
	if (msg_str(msg, key, out, err) < 0)
		return -1;
	if (!**out)
		return hu_err_set(err, -EINVAL, "%s is required", key);
	return 0;
}

/* A uint32 field: a JSON number or a decimal string (proto3 JSON). */
static int msg_u32(const json_t *msg, const char *key, uint32_t *out, hu_err *err)
{
	const json_t *v = json_object_get(msg, key);
	uint64_t n = 0;
	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		n = (uint64_t)json_integer_value(v);
	else if (!json_is_string(v) || hu_parse_u64(json_string_value(v), &n, err) < 0)
		return hu_err_set(err, -EINVAL, "%s must be a non-negative integer", key);
	if (n > UINT32_MAX)
		return hu_err_set(err, -EINVAL, "%s is out of range", key);
	*out = (uint32_t)n;
	return 0;
}

static int msg_bool(const json_t *msg, const char *key, bool *out, hu_err *err)
{
	const json_t *v = json_object_get(msg, key);
	*out = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return hu_err_set(err, -EINVAL, "%s must be a boolean", key);
	*out = json_is_true(v);
	return 0;
}

/* The Connect code for an init error, where envd's differs from the
 * generic mapping. */
static const char *fs_code_for_errno(int code)
{
	switch (code) {
	case EBUSY:
		return "failed_precondition"; /* refusing to remove / */
	case EOVERFLOW:
		return "data_loss"; /* a watch lost events */
	default:
		return hu_connect_code_for_errno(code);
	}
}

static const char *call_user(const struct hu_req *r)
{
	return r->user ? r->user : "user";
}

/* ---- unary calls ---------------------------------------------------------------- */

struct fs_call {
	struct hu_req *r; /* NULL once answered */
	uint8_t type;     /* the init request */
	uint32_t id;
	struct hu_initconn *conn;
	struct event *timer;
	json_t *entries; /* LIST_DIR: collected across ENTRIES frames */
};

static void call_done(struct fs_call *c, json_t *msg, const char *code, const char *text)
{
	struct hu_req *r = c->r;
	c->r = NULL;
	if (r && msg)
		hu_connect_reply(r, msg);
	else if (r)
		hu_connect_error(r, code, "%s", text);
	else
		json_decref(msg);
	hu_initconn_free(c->conn); /* safe inside its callbacks */
	if (c->timer)
		event_free(c->timer);
	json_decref(c->entries);
	free(c);
}

static void call_fail(struct fs_call *c, const hu_err *err)
{
	call_done(c, NULL, fs_code_for_errno(err->code), err->msg);
}

static void on_entries(struct fs_call *c, const uint8_t *payload, size_t len)
{
	struct hu_init_event ev;
	struct hu_frame_hdr hdr = {.type = HU_MSG_ENTRIES, .id = c->id, .len = (uint32_t)len};
	json_t *entry;
	hu_err err;

	if (c->type != HU_MSG_LIST_DIR) {
		if (hu_fs_first_entry(payload, len, &entry, &err) < 0)
			call_fail(c, &err);
		else
			call_done(c, json_pack("{s:o}", "entry", entry), NULL, NULL);
		return;
	}
	if (hu_init_parse_event(&hdr, payload, &ev, &err) < 0 || hu_fs_entries_append(payload, len, c->entries, &err) < 0) {
		call_fail(c, &err);
		return;
	}
	if (!ev.more) {
		json_t *list = c->entries;
		c->entries = NULL;
		call_done(c, json_pack("{s:o}", "entries", list), NULL, NULL);
	}
}

static void call_on_frame(struct hu_initconn *conn, const struct hu_frame_hdr *hdr, const uint8_t *payload, void *arg)
{
	struct fs_call *c = arg;
	hu_err err;

	if (hdr->id != c->id)
		return;
	switch (hdr->type) {
	case HU_MSG_ERROR:
		hu_init_parse_error(payload, hdr->len, &err);
		call_fail(c, &err);
		break;
	case HU_MSG_ENTRIES:
		on_entries(c, payload, hdr->len);
		break;
	case HU_MSG_OK:
		call_done(c, json_object(), NULL, NULL); /* REMOVE: RemoveResponse is empty */
		break;
	default:
		break;
	}
}

/* init's connection closes when its sandbox dies; a killed sandbox's
 * struct may be freed already, so the request must not point at it while
 * it is answered (and logged). */
static void call_on_close(struct hu_initconn *conn, const hu_err *why, void *arg)
{
	struct fs_call *c = arg;
	if (c->r)
		c->r->target = NULL;
	call_done(c, NULL, "unavailable", "the sandbox is not running any more");
}

static void call_on_timeout(evutil_socket_t fd, short what, void *arg)
{
	call_done(arg, NULL, "deadline_exceeded", "the sandbox did not answer in time");
}

/* Send one file request to init and answer r with its reply. */
static void call_run(struct hu_req *r, uint8_t type, const char *path, const char *dest, uint32_t depth)
{
	struct timeval tv = {.tv_sec = FS_CALL_TIMEOUT_MS / 1000, .tv_usec = (FS_CALL_TIMEOUT_MS % 1000) * 1000};
	struct hu_buf b = {0};
	hu_err err;

	struct fs_call *c = calloc(1, sizeof(*c));
	if (!c) {
		hu_connect_error(r, "resource_exhausted", "out of memory");
		return;
	}
	c->r = r;
	c->type = type;
	c->timer = evtimer_new(hu_req_daemon(r)->base, call_on_timeout, c);
	c->entries = type == HU_MSG_LIST_DIR ? json_array() : NULL;
	if (!c->timer || (type == HU_MSG_LIST_DIR && !c->entries)) {
		call_done(c, NULL, "resource_exhausted", "out of memory");
		return;
	}
	if (hu_initconn_open(hu_req_daemon(r)->base, hu_sbx_socket(hu_req_sbx(r)), call_on_frame, call_on_close, c, &c->conn, &err) < 0) {
		hu_log(HU_LOG_WARN, hu_req_sbx(r)->id, r->id, "filesystem call: %s", err.msg);
		call_done(c, NULL, "unavailable", "the sandbox is not running");
		return;
	}
	c->id = hu_initconn_next_id(c->conn);
	if (hu_init_build_file(&b, type, c->id, path, dest, depth, call_user(r), &err) < 0 ||
	    hu_initconn_send(c->conn, &b, &err) < 0) {
		hu_buf_free(&b);
		call_fail(c, &err);
		return;
	}
	hu_buf_free(&b);
	evtimer_add(c->timer, &tv);
}

/* The request message, or an answered invalid_argument (NULL). */
static json_t *unary_msg(struct hu_req *r)
{
	json_t *msg;
	return hu_connect_unary_request(r, &msg) < 0 ? NULL : msg;
}

static void reject(struct hu_req *r, json_t *msg, const hu_err *err)
{
	json_decref(msg);
	hu_connect_error(r, "invalid_argument", "%s", err->msg);
}

/* Stat, MakeDir and Remove: {path}. */
static void path_call(struct hu_req *r, uint8_t type)
{
	json_t *msg = unary_msg(r);
	const char *path;
	hu_err err;

	if (!msg)
		return;
	if (msg_path(msg, "path", &path, &err) < 0) {
		reject(r, msg, &err);
		return;
	}
	call_run(r, type, path, NULL, 0);
	json_decref(msg);
}

void hu_envd_fs_stat(struct hu_req *r)
{
	path_call(r, HU_MSG_STAT);
}

void hu_envd_fs_make_dir(struct hu_req *r)
{
	path_call(r, HU_MSG_MKDIR); /* an existing path: EEXIST, already_exists */
}

void hu_envd_fs_remove(struct hu_req *r)
{
	path_call(r, HU_MSG_REMOVE);
}

void hu_envd_fs_move(struct hu_req *r)
{
	json_t *msg = unary_msg(r);
	const char *src, *dst;
	hu_err err;

	if (!msg)
		return;
	if (msg_path(msg, "source", &src, &err) < 0 || msg_path(msg, "destination", &dst, &err) < 0) {
		reject(r, msg, &err);
		return;
	}
	call_run(r, HU_MSG_MOVE, src, dst, 0);
	json_decref(msg);
}

void hu_envd_fs_list_dir(struct hu_req *r)
{
	json_t *msg = unary_msg(r);
	const char *path;
	uint32_t depth;
	hu_err err;

	if (!msg)
		return;
	if (msg_path(msg, "path", &path, &err) < 0 || msg_u32(msg, "depth", &depth, &err) < 0) {
		reject(r, msg, &err);
		return;
	}
	/* 0 (absent) means 1, as in envd; init bounds the rest. */
	call_run(r, HU_MSG_LIST_DIR, path, NULL, depth ? depth : 1);
	json_decref(msg);
}

/* ---- WatchDir ------------------------------------------------------------------------ */

struct fs_watch {
	struct hu_req *r;       /* owned by the stream; valid until it ends */
	char sbx_id[HU_ID_MAX]; /* for logs */
	uint64_t req_id;
	struct hu_stream *stream; /* NULL once ended */
	struct hu_initconn *conn;
	struct event *keepalive;
	struct timeval keepalive_tv;
	uint32_t id;
	bool started;
};

static void watch_free(struct fs_watch *w)
{
	hu_initconn_free(w->conn); /* safe inside its callbacks; stops init's watch */
	if (w->keepalive)
		event_free(w->keepalive);
	free(w);
}

/* End the stream (code NULL: normally) and free everything. */
static void watch_end(struct fs_watch *w, const char *code, const char *msg)
{
	struct hu_stream *s = w->stream;
	w->stream = NULL;
	if (s)
		hu_stream_end(s, code, msg);
	watch_free(w);
}

static void watch_send(struct fs_watch *w, json_t *msg)
{
	if (!msg) {
		watch_end(w, "internal", "out of memory encoding an event");
		return;
	}
	if (hu_stream_send(w->stream, msg) < 0)
		watch_end(w, NULL, NULL); /* the client is gone */
	/* > 0: over the high-water mark; on_pause has paused init already. */
}

static void watch_on_frame(struct hu_initconn *conn, const struct hu_frame_hdr *hdr, const uint8_t *payload,
			   void *arg)
{
	struct fs_watch *w = arg;
	json_t *msg;
	hu_err err;

	if (hdr->id != w->id)
		return;
	switch (hdr->type) {
	case HU_MSG_OK:
		if (w->started)
			break;
		w->started = true;
		evtimer_add(w->keepalive, &w->keepalive_tv);
		watch_send(w, json_pack("{s:{}}", "start"));
		break;
	case HU_MSG_WATCH_EVENT:
		if (hu_fs_watch_event(payload, hdr->len, &msg, &err) < 0)
			watch_end(w, "internal", err.msg);
		else
			watch_send(w, msg);
		break;
	case HU_MSG_ERROR:
		hu_init_parse_error(payload, hdr->len, &err);
		watch_end(w, fs_code_for_errno(err.code), err.msg);
		break;
	default:
		break;
	}
}

static void watch_on_close(struct hu_initconn *conn, const hu_err *why, void *arg)
{
	struct fs_watch *w = arg;
	hu_log(HU_LOG_WARN, w->sbx_id, w->req_id, "watch: init connection lost: %s", why->msg);
	w->r->target = NULL; /* the sandbox may be freed already (see call_on_close) */
	if (w->stream && hu_registry_sandbox_gone(hu_req_daemon(w->r)->reg, w->sbx_id)) {
		/* killed: cut the stream, as the end of E2B's VM does */
		struct hu_stream *s = w->stream;
		w->stream = NULL;
		hu_stream_abort(s, "the sandbox was killed");
		watch_free(w);
		return;
	}
	watch_end(w, "unavailable", "the sandbox is not running any more");
}

static void watch_on_keepalive(evutil_socket_t fd, short what, void *arg)
{
	watch_send(arg, json_pack("{s:{}}", "keepalive"));
}

static void watch_on_pause(void *arg)
{
	struct fs_watch *w = arg;
	hu_initconn_pause(w->conn);
}

static void watch_on_resume(void *arg)
{
	struct fs_watch *w = arg;
	hu_initconn_resume(w->conn);
}

static void watch_on_gone(void *arg)
{
	watch_end(arg, NULL, NULL);
}

/* WatchDirRequest {path, recursive, includeEntry, allowNetworkMounts} as a
 * WATCH_START frame. allowNetworkMounts (envd 0.6.4) lifts envd's refusal to
 * watch a network file system; a sandbox has none, so it changes nothing. */
static int watch_request(struct hu_req *r, uint32_t id, struct hu_buf *b, hu_err *err)
{
	const uint8_t *body;
	size_t len;
	json_t *msg;
	const char *path;
	bool recursive, with_entry;

	body = hu_req_body(r, &len);
	if (hu_connect_parse_envelope(body, len, &msg, err) < 0)
		return -1;
	int rc = msg_path(msg, "path", &path, err);
	if (rc == 0)
		rc = msg_bool(msg, "recursive", &recursive, err);
	if (rc == 0)
		rc = msg_bool(msg, "includeEntry", &with_entry, err);
	if (rc == 0)
		rc = hu_init_build_watch(b, id, path, recursive ? WATCH_RECURSIVE_DEPTH : 1, call_user(r), with_entry, err);
	json_decref(msg);
	return rc;
}

static uint64_t keepalive_seconds(struct hu_req *r)
{
	const char *k = hu_req_header(r, "Keepalive-Ping-Interval");
	uint64_t s = KEEPALIVE_DEFAULT_S;
	hu_err ignored;
	if (k && hu_parse_u64(k, &s, &ignored) < 0)
		s = KEEPALIVE_DEFAULT_S;
	return s < 1 ? 1 : s > KEEPALIVE_MAX_S ? KEEPALIVE_MAX_S : s;
}

void hu_envd_fs_watch_dir(struct hu_req *r)
{
	struct hu_buf frame = {0};
	hu_err err = {0};

	/* A fresh connection's first request id is 1. */
	int bad = watch_request(r, 1, &frame, &err);
	struct fs_watch *w = calloc(1, sizeof(*w));
	if (w) {
		w->r = r;
		snprintf(w->sbx_id, sizeof(w->sbx_id), "%s", hu_req_sbx(r)->id);
		w->req_id = r->id;
		w->keepalive_tv.tv_sec = (time_t)keepalive_seconds(r);
		w->keepalive = event_new(hu_req_daemon(r)->base, -1, EV_PERSIST, watch_on_keepalive, w);
	}
	static const struct hu_stream_cbs no_cbs;
	struct hu_stream_cbs cbs = {watch_on_pause, watch_on_resume, watch_on_gone, w};
	bool usable = w && w->keepalive;
	struct hu_stream *s = hu_stream_start(r, usable ? &cbs : &no_cbs);
	if (!s) { /* it answered the request itself */
		if (w)
			watch_free(w);
		hu_buf_free(&frame);
		return;
	}
	if (!usable) {
		hu_stream_end(s, "resource_exhausted", "out of memory");
		if (w)
			watch_free(w);
		hu_buf_free(&frame);
		return;
	}
	w->stream = s;
	if (bad < 0) {
		hu_buf_free(&frame);
		watch_end(w, "invalid_argument", err.msg);
		return;
	}
	if (hu_initconn_open(hu_req_daemon(r)->base, hu_sbx_socket(hu_req_sbx(r)), watch_on_frame, watch_on_close, w, &w->conn, &err) < 0) {
		hu_log(HU_LOG_WARN, w->sbx_id, w->req_id, "watch: %s", err.msg);
		hu_buf_free(&frame);
		watch_end(w, "unavailable", "the sandbox is not running");
		return;
	}
	w->id = hu_initconn_next_id(w->conn);
	int rc = hu_initconn_send(w->conn, &frame, &err);
	hu_buf_free(&frame);
	if (rc < 0)
		watch_end(w, "internal", err.msg);
}
