/*
 * The Connect protocol's JSON codec (connect.h): request envelopes, error
 * codes, unary replies, and server streams on top of evhttp.
 *
 * A stream follows what evhttp needs (docs/architecture.md "Streams"):
 *  - the reply starts at once, because evhttp only notices a vanished client
 *    once the reply has started;
 *  - while it runs, the connection has a write timeout only, so a quiet
 *    command is not cut by the idle timeout; the idle timeout is put
 *    back before the stream ends, since the connection is reused;
 *  - every envelope is sent with a drained callback and the connection's
 *    output buffer is watched, so a client that does not read stops the
 *    producer instead of growing the daemon;
 *  - the connection's close callback tells the owner (on_gone) exactly once,
 *    and frees the request libevent detached from the connection;
 *  - the reply ends only once the connection has written all of it and
 *    told us so (below, "finishing").
 * Every callback into the owner is the last thing its caller does with the
 * stream, so the owner may end (free) the stream from inside any of them.
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/connect.h"

#include "daemon/common/json.h"
#include "daemon/common/log.h"
#include "daemon/common/stats.h"
#include "daemon/http/server_internal.h"

#define ENVELOPE_HEADER 5
/* While a stream runs nothing more is expected from its client; bound what
 * a client could pile up in the input buffer meanwhile. */
#define STREAM_INPUT_MAX (64u << 10)
/* At most this much is written to the client in one call. */
#define STREAM_WRITE_MAX (256u << 10)

/* ---- envelopes and codes ---------------------------------------------------- */

int hu_connect_parse_envelope(const uint8_t *body, size_t len, json_t **msg, hu_err *err)
{
	uint32_t n;

	if (len < ENVELOPE_HEADER)
		return hu_err_set(err, -EINVAL, "stream request of %zu bytes is shorter than an envelope header", len);
	if (body[0] & HU_CONNECT_FLAG_COMPRESSED)
		return hu_err_set(err, -EINVAL, "compressed envelopes are not supported");
	if (body[0] != 0)
		return hu_err_set(err, -EINVAL, "unexpected envelope flags 0x%02x in a request", body[0]);
	n = (uint32_t)body[1] << 24 | (uint32_t)body[2] << 16 | (uint32_t)body[3] << 8 | body[4];
	if (n > HU_CONNECT_MAX_MESSAGE)
		return hu_err_set(err, -EINVAL, "request message of %u bytes is over the limit of %u", n,
				  HU_CONNECT_MAX_MESSAGE);
	if (len - ENVELOPE_HEADER < n)
		return hu_err_set(err, -EINVAL, "truncated envelope: %u bytes announced, %zu present", n,
				  len - ENVELOPE_HEADER);
	if (len - ENVELOPE_HEADER > n)
		return hu_err_set(err, -EINVAL, "%zu bytes after the request envelope (exactly one is expected)",
				  len - ENVELOPE_HEADER - n);
	if (hu_json_parse_object(body + ENVELOPE_HEADER, n, msg, err) < 0) {
		hu_err_prefix(err, "request message");
		return -1;
	}
	return 0;
}

const char *hu_connect_code_for_errno(int code)
{
	switch (code) {
	case ENOENT:
	case ESRCH:
		return "not_found";
	case EEXIST:
		return "already_exists";
	case EINVAL:
	case ENOTDIR:
	case EISDIR:
	case ENAMETOOLONG:
	case ERANGE:
		return "invalid_argument";
	case EACCES:
	case EPERM:
		return "permission_denied";
	case ENOSPC:
	case EDQUOT:
		return "resource_exhausted";
	case ETIMEDOUT:
		return "deadline_exceeded";
	case ECANCELED:
		return "canceled";
	case ENOSYS:
		return "unimplemented";
	/* The sandbox's hutch-init went away: the SDK reports these as a
	 * sandbox that timed out, which is what happened. */
	case ECONNREFUSED:
	case ECONNRESET:
	case EPIPE:
	case ENOTCONN:
		return "unavailable";
	default:
		return "internal";
	}
}

/* connectrpc.com/docs/protocol: "Error Codes" and their HTTP statuses. */
static const struct {
	const char *code;
	int status;
} code_status[] = {
	{"canceled", 499},        {"unknown", 500},           {"invalid_argument", 400},
	{"deadline_exceeded", 504}, {"not_found", 404},       {"already_exists", 409},
	{"permission_denied", 403}, {"resource_exhausted", 429}, {"failed_precondition", 400},
	{"aborted", 409},         {"out_of_range", 400},      {"unimplemented", 501},
	{"internal", 500},        {"unavailable", 503},       {"data_loss", 500},
	{"unauthenticated", 401},
};

int hu_connect_http_status(const char *code)
{
	for (size_t i = 0; code && i < sizeof(code_status) / sizeof(code_status[0]); i++)
		if (!strcmp(code, code_status[i].code))
			return code_status[i].status;
	return 500;
}

/* ---- unary calls ------------------------------------------------------------- */

void hu_connect_reply(struct hu_req *r, json_t *msg)
{
	hu_reply_json(r, 200, msg);
}

void hu_connect_error(struct hu_req *r, const char *code, const char *fmt, ...)
{
	char msg[HU_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hu_reply_json(r, hu_connect_http_status(code),
		      json_pack("{s:s,s:o}", "code", code, "message", hu_json_text(msg)));
}

void hu_connect_error_err(struct hu_req *r, const hu_err *err)
{
	hu_connect_error(r, hu_connect_code_for_errno(err->code), "%s", err->msg);
}

int hu_connect_unary_request(struct hu_req *r, json_t **msg)
{
	size_t len;
	const uint8_t *body = hu_req_body(r, &len);
	hu_err err;

	if (len == 0) { /* an empty message: every field at its zero value */
		*msg = json_object();
		if (*msg)
			return 0;
		hu_connect_error(r, "internal", "out of memory");
		return -1;
	}
	if (hu_json_parse_object(body, len, msg, &err) < 0) {
		hu_connect_error(r, "invalid_argument", "request message: %s", err.msg);
		return -1;
	}
	return 0;
}

/* ---- server streams ------------------------------------------------------------ */

struct hu_stream {
	struct hu_req *r;
	struct evhttp_request *ev;        /* NULL once the client is gone */
	struct evhttp_connection *evcon;  /* NULL once the client is gone */
	struct evbuffer *frame;           /* one envelope on its way to evhttp */
	struct hu_stream_cbs cbs;
	size_t high_water;                /* pause the producer above this much unsent output */
	int gone;
	int paused;
	int counted; /* the stream_opened hook was called for r->target */
	/* Bytes went out with on_drained as the connection's write callback,
	 * and on_drained has not yet seen the output empty. */
	int drain_due;
	/* The owner is done (hu_stream_finish or hu_stream_end) and the stream
	 * waits for drain_due to clear before it ends the reply. */
	int finishing;
};

/* Append one envelope (flags, big-endian length, compact JSON) to buf. */
static int frame_add(struct evbuffer *buf, uint8_t flags, const json_t *msg)
{
	char *json = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	size_t n;
	uint8_t hdr[ENVELOPE_HEADER];
	int rc;

	if (!json)
		return -1;
	n = strlen(json);
	hdr[0] = flags;
	hdr[1] = (uint8_t)(n >> 24);
	hdr[2] = (uint8_t)(n >> 16);
	hdr[3] = (uint8_t)(n >> 8);
	hdr[4] = (uint8_t)n;
	rc = evbuffer_add(buf, hdr, sizeof(hdr)) == 0 && evbuffer_add(buf, json, n) == 0 ? 0 : -1;
	free(json);
	return rc;
}

static const char *stream_target(const struct hu_stream *s)
{
	return s->r->target_id[0] ? s->r->target_id : NULL;
}

static size_t output_pending(const struct hu_stream *s);
static void finish_now(struct hu_stream *s);
static void end_stream(struct hu_stream *s, const char *err_code, const char *err_message, int wait);

/* evhttp calls it from the connection's write callback. A TLS bufferevent
 * (bufferevent_openssl) always defers that callback, and libevent checks
 * the output only when it schedules it: by the time it runs, more output
 * may be queued (a server read ran in between), so the output is looked
 * at here again. */
static void on_drained(struct evhttp_connection *evcon, void *arg)
{
	struct hu_stream *s = arg;

	if (s->gone || output_pending(s) > 0)
		return; /* a later write empties it and calls again */
	s->drain_due = 0;
	if (s->finishing) {
		finish_now(s);
		return;
	}
	if (!s->paused)
		return;
	s->paused = 0;
	if (s->cbs.on_resume)
		s->cbs.on_resume(s->cbs.arg); /* last: it may end the stream */
}

/* The connection is going away: the client closed it, a write timed out,
 * or the server is shutting down. */
static void on_close(struct evhttp_connection *evcon, void *arg)
{
	struct hu_stream *s = arg;

	hu_inconn_set_closecb(hu_req_priv(s->r)->http, evcon, NULL, NULL);
	/* A client that vanished leaves the request detached from its
	 * connection, and only we can free it; at shutdown it is still
	 * attached and libevent frees it right after this callback. */
	if (s->ev && !evhttp_request_get_connection(s->ev))
		evhttp_send_reply_end(s->ev);
	s->ev = NULL;
	s->evcon = NULL;
	s->r->ev = NULL; /* the request's accessors must not reach it either */
	s->gone = 1;
	hu_log(HU_LOG_DEBUG, stream_target(s), s->r->id, "stream %s: the client went away", s->r->path);
	if (s->finishing) { /* the owner has left already */
		finish_now(s);
		return;
	}
	if (s->cbs.on_gone)
		s->cbs.on_gone(s->cbs.arg); /* last: it may end the stream */
}

/* Start a streamed 200 reply of `content_type`: headers go out at once (so a
 * client that leaves is noticed), and while it runs the connection has only
 * a write timeout. */
/* The server is freed with the stream still open: end it at once
 * (server.c), what is still unwritten goes with the server. */
static void end_abandoned(struct hu_stream *s)
{
	if (s->finishing)
		finish_now(s);
	else
		end_stream(s, NULL, NULL, 0);
}

static struct hu_stream *stream_start(struct hu_req *r, int status, const char *reason, const char *content_type,
				      size_t high_water, const struct hu_stream_cbs *cbs)
{
	struct hu_stream *s = calloc(1, sizeof(*s));
	struct timeval write_tv = hu_req_idle_timeout(r);
	const struct hu_http_hooks *hooks = &hu_req_priv(r)->http->hooks;

	if (!s || !(s->frame = evbuffer_new())) {
		free(s);
		return NULL;
	}
	s->r = r;
	s->ev = r->ev;
	s->high_water = high_water;
	/* an open stream keeps its target busy (the daemon: its sandbox awake);
	 * r->target may be dropped while it runs (the sandbox may be freed), so
	 * the end names it by id */
	if (r->target && hooks->stream_opened) {
		hooks->stream_opened(r);
		s->counted = 1;
	}
	if (cbs)
		s->cbs = *cbs;
	hu_req_set_stream(r, s, end_abandoned);
	if (s->ev && !evhttp_request_get_connection(s->ev)) {
		/* The client left while the answer was being prepared (a
		 * streamed body keeps its connection read, so evhttp noticed):
		 * libevent detached the request, and only we can free it. */
		hu_log(HU_LOG_DEBUG, stream_target(s), r->id, "stream %s: the client left before the reply", r->path);
		evhttp_send_reply_end(s->ev);
		s->ev = NULL;
		r->ev = NULL;
	}
	if (!s->ev) { /* the client is gone, or the server is shutting down */
		s->gone = 1;
		return s;
	}
	if (content_type)
		evhttp_add_header(evhttp_request_get_output_headers(s->ev), "Content-Type", content_type);
	hu_body_before_reply(hu_req_priv(r));
	evhttp_send_reply_start(s->ev, status, reason);
	s->evcon = evhttp_request_get_connection(s->ev);
	struct bufferevent *bev = evhttp_connection_get_bufferevent(s->evcon);
	bufferevent_set_timeouts(bev, NULL, &write_tv);
	bufferevent_setwatermark(bev, EV_READ, 0, STREAM_INPUT_MAX);
	/* libevent writes 16 KiB a call by default: a fast stream would make
	 * four times the write calls it needs */
	bufferevent_set_max_single_write(bev, STREAM_WRITE_MAX);
	hu_inconn_set_closecb(hu_req_priv(r)->http, s->evcon, on_close, s);
	hu_log(HU_LOG_DEBUG, stream_target(s), r->id, "stream %s started", r->path);
	return s;
}

struct hu_stream *hu_stream_start(struct hu_req *r, const struct hu_stream_cbs *cbs)
{
	struct hu_stream *s = stream_start(r, 200, NULL, "application/connect+json", HU_STREAM_HIGH_WATER, cbs);
	if (!s)
		hu_connect_error(r, "internal", "out of memory");
	return s;
}

struct hu_stream *hu_stream_start_raw(struct hu_req *r, const char *content_type, size_t high_water,
				      const struct hu_stream_cbs *cbs)
{
	return stream_start(r, 200, NULL, content_type, high_water, cbs);
}

struct hu_stream *hu_stream_start_status(struct hu_req *r, int status, const char *reason, size_t high_water,
					 const struct hu_stream_cbs *cbs)
{
	return stream_start(r, status, reason, NULL, high_water, cbs);
}

static size_t output_pending(const struct hu_stream *s)
{
	return evbuffer_get_length(bufferevent_get_output(evhttp_connection_get_bufferevent(s->evcon)));
}

static int stream_fd(const struct hu_stream *s)
{
	return bufferevent_getfd(evhttp_connection_get_bufferevent(s->evcon));
}

/* Hand s->frame to evhttp and write it at once where the connection allows
 * (hu_inconn_write_now). All of it written, the stream may end without
 * waiting for the write callback (finish_when_written): on_drained still
 * runs, and finds nothing to do. */
static void send_frame(struct hu_stream *s)
{
	/* evhttp sets on_drained as the write callback only for a non-empty frame */
	if (evbuffer_get_length(s->frame))
		s->drain_due = 1;
	evhttp_send_reply_chunk_with_cb(s->ev, s->frame, on_drained, s);
	hu_inconn_write_now(hu_req_priv(s->r)->http, stream_fd(s));
	/* not on TLS: its output can be empty with a write callback still
	 * due (on_drained) */
	if (s->drain_due && output_pending(s) == 0 && !hu_req_priv(s->r)->http->tls)
		s->drain_due = 0;
}

/* Hand what is in s->frame to evhttp; tell the producer to pause when the
 * client is behind. */
static int push(struct hu_stream *s)
{
	if (s->r->target_id[0])
		hu_stat_add(HU_STAT_DATA_BYTES_OUT, evbuffer_get_length(s->frame));
	send_frame(s);
	if (!s->paused && output_pending(s) > s->high_water) {
		s->paused = 1;
		if (s->cbs.on_pause)
			s->cbs.on_pause(s->cbs.arg); /* last: it may end the stream */
		return 1;
	}
	return s->paused;
}

int hu_stream_send(struct hu_stream *s, json_t *msg)
{
	if (s->gone) {
		json_decref(msg);
		return -1;
	}
	if (frame_add(s->frame, 0, msg) < 0) {
		json_decref(msg);
		evbuffer_drain(s->frame, evbuffer_get_length(s->frame));
		hu_log(HU_LOG_ERROR, stream_target(s), s->r->id, "stream %s: cannot encode a message (out of memory)",
		       s->r->path);
		return -1;
	}
	json_decref(msg);
	return push(s);
}

int hu_stream_send_buffer(struct hu_stream *s, struct evbuffer *src, size_t len)
{
	if (s->gone)
		return -1;
	/* whole chains change hands; only a partial one is copied */
	if (evbuffer_remove_buffer(src, s->frame, len) != (int)len) {
		evbuffer_drain(s->frame, evbuffer_get_length(s->frame));
		return -1;
	}
	return push(s);
}

int hu_stream_send_bytes(struct hu_stream *s, const void *data, size_t len)
{
	if (s->gone)
		return -1;
	if (evbuffer_add(s->frame, data, len) < 0) {
		evbuffer_drain(s->frame, evbuffer_get_length(s->frame));
		return -1;
	}
	return push(s);
}

int hu_stream_bypass(struct hu_stream *s, struct evbuffer **queued, struct timeval *write_tv)
{
	/* a TLS bufferevent's socket carries records, not the body */
	if (s->gone || hu_req_priv(s->r)->http->tls)
		return -1;
	struct bufferevent *bev = evhttp_connection_get_bufferevent(s->evcon);
	int fd = bufferevent_getfd(bev);
	if (fd < 0)
		return -1;
	/* evhttp keeps reading it: a client that leaves is still noticed */
	bufferevent_disable(bev, EV_WRITE);
	/* the bypass writes the queued output itself, and no write callback
	 * follows; on a plain socket none is deferred either */
	s->drain_due = 0;
	*queued = bufferevent_get_output(bev);
	*write_tv = hu_req_idle_timeout(s->r);
	return fd;
}

void hu_stream_bypass_end(struct hu_stream *s)
{
	bufferevent_enable(evhttp_connection_get_bufferevent(s->evcon), EV_WRITE);
}

void hu_stream_bypassed(struct hu_stream *s, uint64_t len)
{
	if (s->r->target_id[0])
		hu_stat_add(HU_STAT_DATA_BYTES_OUT, len);
}

/* The body is complete: the connection outlives the stream (keep-alive), so
 * it must not call back into a freed stream, and it is idle again. */
static void close_reply(struct hu_stream *s)
{
	struct timeval idle = hu_req_idle_timeout(s->r);
	struct hu_http *h = hu_req_priv(s->r)->http;
	int fd = stream_fd(s);

	hu_inconn_set_closecb(h, s->evcon, NULL, NULL);
	bufferevent_setwatermark(evhttp_connection_get_bufferevent(s->evcon), EV_READ, 0, HU_HTTP_INPUT_MAX);
	evhttp_connection_set_timeout_tv(s->evcon, &idle);
	/* may free the connection (a reply that closes it, all written): the
	 * chunked end it may have queued is written by the socket's number */
	evhttp_send_reply_end(s->ev);
	hu_inconn_write_now(h, fd);
}

static void release(struct hu_stream *s, const char *how, const char *why)
{
	struct hu_req *r = s->r;

	hu_log(HU_LOG_DEBUG, stream_target(s), r->id, "stream %s ended: %s%s%s", r->path, how, why ? ": " : "",
	       why ? why : "");
	int counted = s->counted;
	const struct hu_http_hooks *hooks = &hu_req_priv(r)->http->hooks;
	evbuffer_free(s->frame);
	free(s);
	if (counted && hooks->stream_closed)
		hooks->stream_closed(r->app, r->target_id);
	hu_req_set_stream(r, NULL, NULL);
	hu_req_finish(r);
}

/* End the reply now (if the client is still there) and free the stream. */
static void finish_now(struct hu_stream *s)
{
	if (!s->gone)
		close_reply(s);
	release(s, s->gone && s->finishing ? "cut" : "ok",
		s->gone && s->finishing ? "the client went away before the reply was written" : NULL);
}

/* evhttp_send_reply_end hands the connection's write callback to evhttp's
 * "reply done", which ends the request (keep-alive: stops writing and
 * reads the next request; else frees the connection) without looking at
 * the output. On a TLS connection a write callback may still be due from
 * an earlier write (on_drained says why): it would run "reply done" with
 * the reply's last bytes still queued, and those never left (a 4 MiB
 * download over https came 512-2048 bytes short, then hung). So the reply
 * ends only from on_drained once the output is empty, or at once when no
 * write callback is due. */
static void finish_when_written(struct hu_stream *s)
{
	bufferevent_data_cb write_cb = NULL;
	if (!s->gone)
		bufferevent_getcb(evhttp_connection_get_bufferevent(s->evcon), NULL, &write_cb, NULL, NULL);
	/* without a write callback (http/inconn.c parks a connection so)
	 * on_drained would never come */
	if (s->gone || !s->drain_due || !write_cb) {
		finish_now(s);
		return;
	}
	s->finishing = 1;
	memset(&s->cbs, 0, sizeof(s->cbs)); /* the owner may be freed from now on */
}

void hu_stream_finish(struct hu_stream *s)
{
	finish_when_written(s);
}

void hu_stream_abort(struct hu_stream *s, const char *why)
{
	if (!s->gone) {
		hu_inconn_set_closecb(hu_req_priv(s->r)->http, s->evcon, NULL, NULL);
		evhttp_connection_free(s->evcon); /* frees the request with it */
		s->r->ev = NULL;
	}
	release(s, "cut", why);
}

void hu_stream_end(struct hu_stream *s, const char *err_code, const char *err_message)
{
	end_stream(s, err_code, err_message, 1);
}

/* Send the end envelope and end the reply: once it is written if `wait`. */
static void end_stream(struct hu_stream *s, const char *err_code, const char *err_message, int wait)
{
	if (!s->gone) {
		json_t *end = err_code ? json_pack("{s:{s:s,s:o}}", "error", "code", err_code, "message",
						   hu_json_text(err_message ? err_message : ""))
				       : json_object();
		if (frame_add(s->frame, HU_CONNECT_FLAG_END, end) == 0)
			send_frame(s);
		json_decref(end);
		if (wait && s->drain_due) {
			if (err_code)
				hu_log(HU_LOG_DEBUG, stream_target(s), s->r->id, "stream %s ends: %s: %s", s->r->path,
				       err_code, err_message ? err_message : "");
			finish_when_written(s);
			return;
		}
		close_reply(s);
	}
	release(s, err_code ? err_code : "ok", err_code ? err_message : NULL);
}
