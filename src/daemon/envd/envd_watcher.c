/*
 * envd's polling watcher: filesystem.Filesystem/CreateWatcher,
 * GetWatcherEvents and RemoveWatcher, the calls behind the Python SDK's
 * synchronous files.watch_dir (the async SDK and the JS SDK stream WatchDir
 * instead, envd_fs.c).
 *
 * A watcher is WatchDir without a client on the other end: one init
 * connection running one WATCH_START, whose events the daemon buffers until
 * someone asks for them. GetWatcherEvents hands over what is buffered and
 * empties the buffer, as envd does. What envd leaves unbounded is bounded
 * here (and a poll hands over everything the changes it follows caused:
 * before answering, the daemon PINGs the watch's init connection, and init
 * answers PONG only after forwarding every event the kernel had queued, so
 * a write whose answer the client saw is in the next poll):
 *   - events: at most WATCHER_MAX_EVENTS or WATCHER_MAX_BYTES of init
 *     payload buffered; past that the watcher stops and every poll answers
 *     data_loss (envd's answer when its watch loses events), so a client
 *     never mistakes lost events for quiet;
 *   - watchers: WATCHER_MAX_PER_SANDBOX per sandbox and WATCHER_MAX in all,
 *     since each holds an init connection (a descriptor) for as long as it
 *     lives, which no client connection accounts for;
 *   - time: a watcher nobody polls for watcher.idle_timeout is removed.
 * A watcher ends with its sandbox: init's connection closes when the
 * sandbox dies, and a killed sandbox's watchers are removed (polls answer
 * not_found, as envd's would with its VM gone). If init's connection closes
 * while the sandbox lives on (its processes ended, e.g. its memory was
 * released while paused), polls answer unavailable until it is removed.
 *
 * A watcher belongs to the sandbox it was created in: another sandbox's
 * token finds nothing (not_found), whatever the id.
 */
#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/common/log.h"
#include "daemon/core/daemon.h"
#include "daemon/envd/fs_json.h"
#include "daemon/envd/handlers.h"
#include "daemon/http/connect.h"
#include "daemon/sandboxes/initconn.h"
#include "daemon/sandboxes/registry.h"
#include "runtime/initclient.h"
#include "util/hex.h"

#define WATCHER_MAX_EVENTS 4096
#define WATCHER_MAX_BYTES (1u << 20)
#define WATCHER_MAX_PER_SANDBOX 16
#define WATCHER_MAX 256
#define WATCHER_ID_HEX 20 /* "w" + 20 hex: 80 random bits */
#define WATCHER_START_TIMEOUT_S 30
#define WATCHER_SWEEP_S 1
/* a poll waits this long at most for init's PONG, then answers with what
 * it has (init stuck or frozen) */
#define WATCHER_FLUSH_TIMEOUT_MS 2000
/* init's limit for a recursive watch's depth (HU_REQ_MAX_DEPTH), as WatchDir */
#define WATCHER_RECURSIVE_DEPTH 64

struct watcher {
	struct watcher *next;
	char id[1 + WATCHER_ID_HEX + 1];
	char sbx_id[HU_ID_MAX];
	struct hu_daemon *d;
	struct hu_initconn *conn; /* NULL once stopped */
	uint32_t watch_id;        /* the WATCH_START request */
	struct hu_req *pending;   /* CreateWatcher waiting for init's answer */
	struct event *start_timer;
	json_t *events; /* FilesystemEvent messages not yet handed over */
	size_t bytes;   /* init payload behind them */
	const char *stop_code; /* set once stopped on its own: what polls answer */
	char stop_msg[160];
	time_t last_poll; /* CLOCK_MONOTONIC seconds */
	struct hu_req *poll;     /* GetWatcherEvents waiting for init's PONG */
	uint32_t ping_id;
	struct event *poll_timer;
};

static void answer_poll(struct watcher *w);

static struct watcher *watchers;
static unsigned n_watchers;
static struct event *sweep;

static time_t now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static void unlist(struct watcher *w)
{
	for (struct watcher **p = &watchers; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			n_watchers--;
			break;
		}
	if (!watchers && sweep) {
		event_free(sweep);
		sweep = NULL;
	}
}

/* Stop init's watch (closing its connection is what stops it) and keep
 * the watcher, answering polls with code. */
static void watcher_stop(struct watcher *w, const char *code, const char *msg)
{
	hu_initconn_free(w->conn); /* safe inside its callbacks */
	w->conn = NULL;
	if (!w->stop_code) {
		w->stop_code = code;
		snprintf(w->stop_msg, sizeof(w->stop_msg), "%s", msg);
	}
	json_array_clear(w->events);
	w->bytes = 0;
	if (w->poll)
		answer_poll(w);
}

static void watcher_free(struct watcher *w)
{
	if (w->poll) {
		struct hu_req *r = w->poll;
		w->poll = NULL;
		hu_connect_error(r, "not_found", "watcher with id %s not found", w->id);
	}
	if (w->poll_timer)
		event_free(w->poll_timer);
	unlist(w);
	hu_initconn_free(w->conn);
	if (w->start_timer)
		event_free(w->start_timer);
	json_decref(w->events);
	free(w);
}

/* Answer the CreateWatcher still waiting; on failure the watcher goes. */
static void answer_create(struct watcher *w, const char *code, const char *msg)
{
	struct hu_req *r = w->pending;
	w->pending = NULL;
	if (w->start_timer) {
		event_free(w->start_timer);
		w->start_timer = NULL;
	}
	if (!code) {
		json_t *reply = json_pack("{s:s}", "watcherId", w->id);
		w->last_poll = now_s();
		if (reply) {
			hu_connect_reply(r, reply);
			return;
		}
		code = "resource_exhausted";
		msg = "out of memory";
	}
	hu_connect_error(r, code, "%s", msg);
	watcher_free(w);
}

static const char *code_for_errno(int code)
{
	return code == EOVERFLOW ? "data_loss" : hu_connect_code_for_errno(code);
}

static void buffer_event(struct watcher *w, const uint8_t *payload, uint32_t len)
{
	json_t *msg, *ev;
	hu_err err;

	if (json_array_size(w->events) >= WATCHER_MAX_EVENTS || w->bytes + len > WATCHER_MAX_BYTES) {
		watcher_stop(w, "data_loss", "more events than a watcher buffers arrived between two polls; events were lost");
		return;
	}
	if (hu_fs_watch_event(payload, len, &msg, &err) < 0) {
		watcher_stop(w, "internal", err.msg);
		return;
	}
	ev = json_object_get(msg, "filesystem");
	if (!ev || json_array_append(w->events, ev) < 0)
		watcher_stop(w, "internal", "out of memory buffering an event");
	else
		w->bytes += len;
	json_decref(msg);
}

static void on_frame(struct hu_initconn *conn, const struct hu_frame_hdr *hdr, const uint8_t *payload, void *arg)
{
	struct watcher *w = arg;
	hu_err err;

	if (hdr->id != w->watch_id && !(hdr->type == HU_MSG_PONG && w->poll && hdr->id == w->ping_id))
		return;
	switch (hdr->type) {
	case HU_MSG_OK:
		if (w->pending)
			answer_create(w, NULL, NULL);
		break;
	case HU_MSG_PONG:
		if (w->poll && hdr->id == w->ping_id)
			answer_poll(w);
		break;
	case HU_MSG_WATCH_EVENT:
		if (!w->pending)
			buffer_event(w, payload, hdr->len);
		break;
	case HU_MSG_ERROR:
		hu_init_parse_error(payload, hdr->len, &err);
		if (w->pending)
			answer_create(w, code_for_errno(err.code), err.msg);
		else
			watcher_stop(w, code_for_errno(err.code), err.msg);
		break;
	default:
		break;
	}
}

static void on_close(struct hu_initconn *conn, const hu_err *why, void *arg)
{
	struct watcher *w = arg;

	if (w->poll)
		w->poll->target = NULL; /* the sandbox may be freed already */
	if (w->pending) {
		w->pending->target = NULL; /* the sandbox may be freed already */
		answer_create(w, "unavailable", "the sandbox is not running any more");
		return;
	}
	if (hu_registry_sandbox_gone(w->d->reg, w->sbx_id)) {
		watcher_free(w); /* killed: its watchers go with it */
		return;
	}
	hu_log(HU_LOG_WARN, w->sbx_id, 0, "watcher %s: init connection lost: %s", w->id, why->msg);
	watcher_stop(w, "unavailable", "the sandbox's processes ended; the watcher stopped");
}

static void on_start_timeout(evutil_socket_t fd, short what, void *arg)
{
	answer_create(arg, "deadline_exceeded", "the sandbox did not answer in time");
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
	time_t now = now_s();
	struct watcher *w = watchers, *next;

	for (; w; w = next) {
		next = w->next;
		if (!w->pending && !w->poll && now - w->last_poll >= (time_t)w->d->cfg.watcher_idle_s) {
			hu_log(HU_LOG_INFO, w->sbx_id, 0, "watcher %s: not polled for %us, removed", w->id,
			       w->d->cfg.watcher_idle_s);
			watcher_free(w); /* may free sweep when it was the last: nothing follows */
		}
	}
}

/* The sandbox's watcher with this id; NULL when there is none (or it is
 * another sandbox's, or still starting). */
static struct watcher *find(struct hu_req *r, const char *id)
{
	for (struct watcher *w = watchers; w; w = w->next)
		if (!w->pending && !strcmp(w->id, id) && !strcmp(w->sbx_id, hu_req_sbx(r)->id))
			return w;
	return NULL;
}

static unsigned count_for(const char *sbx_id)
{
	unsigned n = 0;
	for (struct watcher *w = watchers; w; w = w->next)
		n += !strcmp(w->sbx_id, sbx_id);
	return n;
}

/* A boolean field of a request message (false when absent or null). */
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

/* A string field that must be there. */
static int msg_str(const json_t *msg, const char *key, const char **out, hu_err *err)
{
	const json_t *v = json_object_get(msg, key);
	if (v && !json_is_null(v) && !json_is_string(v))
		return hu_err_set(err, -EINVAL, "%s must be a string", key);
	*out = v && json_is_string(v) ? json_string_value(v) : "";
	if (!**out)
		return hu_err_set(err, -EINVAL, "%s is required", key);
	return 0;
}

/* CreateWatcherRequest {path, recursive, includeEntry, allowNetworkMounts}
 * (allowNetworkMounts changes nothing: a sandbox has no network mounts). */
static int create_request(struct hu_req *r, json_t *msg, uint32_t id, struct hu_buf *b, hu_err *err)
{
	const char *path;
	bool recursive, with_entry;

	if (msg_str(msg, "path", &path, err) < 0 || msg_bool(msg, "recursive", &recursive, err) < 0 ||
	    msg_bool(msg, "includeEntry", &with_entry, err) < 0)
		return -1;
	return hu_init_build_watch(b, id, path, recursive ? WATCHER_RECURSIVE_DEPTH : 1, r->user ? r->user : "user",
				   with_entry, err);
}

void hu_envd_fs_create_watcher(struct hu_req *r)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct timeval start_tv = {WATCHER_START_TIMEOUT_S, 0}, sweep_tv = {WATCHER_SWEEP_S, 0};
	struct hu_buf frame = {0};
	struct watcher *w;
	json_t *msg;
	hu_err err;

	if (hu_connect_unary_request(r, &msg) < 0)
		return; /* answered */
	if (count_for(hu_req_sbx(r)->id) >= WATCHER_MAX_PER_SANDBOX || n_watchers >= WATCHER_MAX) {
		json_decref(msg);
		hu_connect_error(r, "resource_exhausted", "too many watchers (at most %u per sandbox, %u in all); remove some",
				 WATCHER_MAX_PER_SANDBOX, WATCHER_MAX);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w || !(w->events = json_array()) || !(w->start_timer = evtimer_new(d->base, on_start_timeout, w)) ||
	    (!sweep && !(sweep = event_new(d->base, -1, EV_PERSIST, on_sweep, NULL)))) {
		json_decref(msg);
		if (w) {
			json_decref(w->events);
			if (w->start_timer)
				event_free(w->start_timer);
		}
		free(w);
		hu_connect_error(r, "resource_exhausted", "out of memory");
		return;
	}
	w->d = d;
	w->pending = r;
	snprintf(w->sbx_id, sizeof(w->sbx_id), "%s", hu_req_sbx(r)->id);
	w->id[0] = 'w';
	w->next = watchers;
	watchers = w;
	n_watchers++;
	if (!event_pending(sweep, EV_TIMEOUT, NULL))
		event_add(sweep, &sweep_tv);

	/* A fresh connection's first request id is 1. */
	if (create_request(r, msg, 1, &frame, &err) < 0) {
		json_decref(msg);
		hu_buf_free(&frame);
		answer_create(w, "invalid_argument", err.msg);
		return;
	}
	json_decref(msg);
	if (hu_random_hex(w->id + 1, WATCHER_ID_HEX / 2, &err) < 0) {
		hu_buf_free(&frame);
		answer_create(w, "internal", err.msg);
		return;
	}
	if (hu_initconn_open(d->base, hu_sbx_socket(hu_req_sbx(r)), on_frame, on_close, w, &w->conn, &err) < 0) {
		hu_log(HU_LOG_WARN, w->sbx_id, r->id, "watcher: %s", err.msg);
		hu_buf_free(&frame);
		answer_create(w, "unavailable", "the sandbox is not running");
		return;
	}
	w->watch_id = hu_initconn_next_id(w->conn);
	int rc = hu_initconn_send(w->conn, &frame, &err);
	hu_buf_free(&frame);
	if (rc < 0) {
		answer_create(w, "internal", err.msg);
		return;
	}
	evtimer_add(w->start_timer, &start_tv);
}

/* The watcher a {watcherId} request names, or an answered not_found. */
static struct watcher *named_watcher(struct hu_req *r)
{
	struct watcher *w = NULL;
	const char *id;
	json_t *msg;
	hu_err err;

	if (hu_connect_unary_request(r, &msg) < 0)
		return NULL; /* answered */
	if (msg_str(msg, "watcherId", &id, &err) < 0)
		hu_connect_error(r, "invalid_argument", "%s", err.msg);
	else if (!(w = find(r, id)))
		hu_connect_error(r, "not_found", "watcher with id %s not found", id);
	json_decref(msg);
	return w;
}

/* Answer the poll in w->poll with the buffered events (or the error the
 * watcher stopped with) and empty the buffer. */
static void answer_poll(struct watcher *w)
{
	struct hu_req *r = w->poll;
	json_t *fresh, *reply;

	w->poll = NULL;
	if (w->poll_timer)
		evtimer_del(w->poll_timer);
	w->last_poll = now_s();
	if (w->stop_code) {
		hu_connect_error(r, w->stop_code, "%s", w->stop_msg);
		return;
	}
	fresh = json_array();
	reply = fresh ? json_pack("{s:O}", "events", w->events) : NULL;
	if (!reply) {
		json_decref(fresh);
		hu_connect_error(r, "resource_exhausted", "out of memory");
		return;
	}
	json_decref(w->events); /* the reply holds it */
	w->events = fresh;
	w->bytes = 0;
	hu_connect_reply(r, reply);
}

static void on_poll_timeout(evutil_socket_t fd, short what, void *arg)
{
	answer_poll(arg);
}

void hu_envd_fs_get_watcher_events(struct hu_req *r)
{
	struct timeval tv = {WATCHER_FLUSH_TIMEOUT_MS / 1000, (WATCHER_FLUSH_TIMEOUT_MS % 1000) * 1000};
	struct watcher *w = named_watcher(r);
	struct hu_buf b = {0};
	hu_err err;

	if (!w)
		return;
	if (w->poll) { /* one flush at a time: the earlier poll gets the events */
		w->last_poll = now_s();
		hu_connect_reply(r, json_pack("{s:[]}", "events"));
		return;
	}
	w->poll = r;
	if (!w->conn || w->stop_code) {
		answer_poll(w);
		return;
	}
	if (!w->poll_timer && !(w->poll_timer = evtimer_new(w->d->base, on_poll_timeout, w))) {
		answer_poll(w); /* without the flush: what is buffered */
		return;
	}
	w->ping_id = hu_initconn_next_id(w->conn);
	if (hu_init_build_simple(&b, HU_MSG_PING, w->ping_id, &err) < 0 || hu_initconn_send(w->conn, &b, &err) < 0) {
		hu_buf_free(&b);
		answer_poll(w);
		return;
	}
	hu_buf_free(&b);
	evtimer_add(w->poll_timer, &tv);
}

void hu_envd_fs_remove_watcher(struct hu_req *r)
{
	struct watcher *w = named_watcher(r);

	if (!w)
		return;
	watcher_free(w); /* closing init's connection stops its watch */
	hu_connect_reply(r, json_object());
}

void hu_envd_watchers_shutdown(struct hu_daemon *d)
{
	while (watchers) {
		struct watcher *w = watchers;
		if (w->pending)
			answer_create(w, "unavailable", "the server is shutting down"); /* frees w */
		else
			watcher_free(w);
	}
}
