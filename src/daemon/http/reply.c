/* Replies (request.h): JSON, text, empty and error answers, each logged
 * once with the request's status and duration. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "daemon/common/json.h"
#include "daemon/common/log.h"
#include "daemon/common/stats.h"
#include "daemon/http/server_internal.h"
#include "util/clock.h"
#include "util/ratelimit.h"

const char *hu_http_method_name(enum evhttp_cmd_type m)
{
	switch (m) {
	case EVHTTP_REQ_GET: return "GET";
	case EVHTTP_REQ_POST: return "POST";
	case EVHTTP_REQ_HEAD: return "HEAD";
	case EVHTTP_REQ_PUT: return "PUT";
	case EVHTTP_REQ_DELETE: return "DELETE";
	case EVHTTP_REQ_OPTIONS: return "OPTIONS";
	case EVHTTP_REQ_TRACE: return "TRACE";
	case EVHTTP_REQ_CONNECT: return "CONNECT";
	case EVHTTP_REQ_PATCH: return "PATCH";
	}
	return "?";
}

/* The HTTP status for an errno carried by a hu_err (docs/api.md lists it). */
int hu_http_status_for_errno(int code)
{
	switch (code) {
	case ENOENT:
	case ESRCH:
		return 404;
	case EEXIST:
	case EBUSY:
	case EALREADY:
		return 409;
	case EINVAL:
	case ERANGE:
	case EDOM:
	case E2BIG:
	case ENOTDIR:
	case EISDIR:
	case ENAMETOOLONG:
		return 400;
	case EACCES:
	case EPERM:
		return 403;
	case EAGAIN:
	case EUSERS:
		return 429;
	case ENOSPC:
	case EDQUOT:
		return 507;
	case ENOMEM:
	case EMFILE: /* out of descriptors: capacity, like memory (fd_budget.h) */
	case ENFILE:
	case ENOTCONN: /* the store cannot be reached for now (store.h) */
	case EINPROGRESS: /* a template still being provisioned (sandboxes/provision.h) */
		return 503;
	case ETIMEDOUT:
		return 504;
	case ENOSYS:
	case EOPNOTSUPP:
		return 501;
	default:
		return 500;
	}
}

/* A second answer to one request is a handler bug; refuse it loudly rather
 * than corrupt libevent's state. */
static int can_answer(struct hu_req *r)
{
	struct req_priv *p = hu_req_priv(r);
	if (p->answered || p->stream) {
		hu_log(HU_LOG_ERROR, r->target_id[0] ? r->target_id : NULL, r->id, "%s %s: answered twice (handler bug)",
		       hu_http_method_name(r->method), r->path);
		return 0;
	}
	return 1;
}

/* Failures of requests that proved nothing (no API key, no token, no sandbox
 * of theirs) are what anyone on the network can produce at will: each one
 * logs a short line (path and message cut), and at most UNAUTH_LOG_RATE of
 * them a second (bursts of UNAUTH_LOG_BURST) reach the log at all, so that
 * a flood of 404s cannot fill the disk or rotate the history away. The next
 * line that is logged says how many were left out. */
#define UNAUTH_LOG_RATE 20
#define UNAUTH_LOG_BURST 100
#define UNAUTH_PATH_MAX 64
#define UNAUTH_MSG_MAX 80

static struct hu_ratelimit unauth_log = HU_RATELIMIT_INIT(UNAUTH_LOG_RATE, UNAUTH_LOG_BURST);

static bool unauthenticated_failure(const struct hu_req *r, int status)
{
	return status >= 400 && !r->principal[0] && (!r->target_id[0] || status == 401);
}

static void log_reply(struct hu_req *r, int status, const char *message)
{
	struct req_priv *p = hu_req_priv(r);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double ms = (double)(now.tv_sec - p->t0.tv_sec) * 1e3 + (double)(now.tv_nsec - p->t0.tv_nsec) / 1e6;
	const char *target = r->target_id[0] ? r->target_id : NULL;

	if (unauthenticated_failure(r, status)) {
		if (!hu_ratelimit_take(&unauth_log, hu_mono_ms()))
			return;
		uint64_t left_out = unauth_log.refused;
		unauth_log.refused = 0;
		size_t plen = strlen(r->path);
		hu_log(HU_LOG_WARN, target, r->id, "unauthenticated %s %.*s%s -> %d (%.2f ms): %.*s%s%.0llu%s",
		       hu_http_method_name(r->method), UNAUTH_PATH_MAX, r->path, plen > UNAUTH_PATH_MAX ? "..." : "",
		       status, ms, UNAUTH_MSG_MAX, message ? message : "", left_out ? " [" : "",
		       (unsigned long long)left_out, left_out ? " similar lines left out]" : "");
	} else if (status >= 400)
		hu_log(HU_LOG_WARN, target, r->id, "%s %s -> %d (%.2f ms): %s", hu_http_method_name(r->method), r->path,
		       status, ms, message ? message : "");
	else
		hu_log(HU_LOG_DEBUG, target, r->id, "%s %s -> %d (%.2f ms)", hu_http_method_name(r->method), r->path, status,
		       ms);
}

static void send_reply(struct hu_req *r, int status, struct evbuffer *body)
{
	/* bytes sent about a target: the data plane's traffic */
	if (r->target_id[0] && body)
		hu_stat_add(HU_STAT_DATA_BYTES_OUT, evbuffer_get_length(body));
	hu_body_before_reply(hu_req_priv(r));
	if (r->ev) {
		/* without a connection evhttp_send_reply frees the request: ask first */
		struct evhttp_connection *evcon = evhttp_request_get_connection(r->ev);
		int fd = evcon ? bufferevent_getfd(evhttp_connection_get_bufferevent(evcon)) : -1;
		evhttp_send_reply(r->ev, status, status == 499 ? "Client Closed Request" : NULL, body);
		hu_inconn_write_now(hu_req_priv(r)->http, fd);
	}
	hu_req_finish(r);
}

static int dump_to_evbuffer(const char *buf, size_t size, void *data)
{
	return evbuffer_add(data, buf, size);
}

void hu_reply_json(struct hu_req *r, int status, json_t *body)
{
	struct evbuffer *buf;
	json_t *msg;

	if (!can_answer(r)) {
		json_decref(body);
		return;
	}
	buf = evbuffer_new();
	if (!body || !buf || json_dump_callback(body, dump_to_evbuffer, buf, JSON_COMPACT) < 0) {
		/* Out of memory: an empty 500 is all that is left to say. */
		log_reply(r, 500, "out of memory while writing the reply");
		json_decref(body);
		if (buf)
			evbuffer_drain(buf, evbuffer_get_length(buf));
		send_reply(r, 500, buf);
		if (buf)
			evbuffer_free(buf);
		return;
	}
	msg = json_object_get(body, "message");
	log_reply(r, status, json_is_string(msg) ? json_string_value(msg) : NULL);
	if (r->ev)
		evhttp_add_header(evhttp_request_get_output_headers(r->ev), "Content-Type", "application/json");
	json_decref(body);
	send_reply(r, status, buf);
	evbuffer_free(buf);
}

void hu_reply_text(struct hu_req *r, int status, const char *content_type, struct evbuffer *body)
{
	if (!can_answer(r))
		return;
	log_reply(r, status, NULL);
	if (r->ev)
		evhttp_add_header(evhttp_request_get_output_headers(r->ev), "Content-Type", content_type);
	send_reply(r, status, body);
}

void hu_reply_passed(struct hu_req *r, int status, struct evbuffer *body)
{
	if (!can_answer(r))
		return;
	log_reply(r, status, NULL);
	send_reply(r, status, body);
}

void hu_reply_empty(struct hu_req *r, int status)
{
	if (!can_answer(r))
		return;
	log_reply(r, status, NULL);
	/* The SDK parses any other bodiless 2xx as JSON unless it says
	 * Content-Length: 0 (docs/api.md, "HTTP"). */
	if (status != 204 && r->ev)
		evhttp_add_header(evhttp_request_get_output_headers(r->ev), "Content-Length", "0");
	send_reply(r, status, NULL);
}

void hu_reply_error_body(struct hu_req *r, int status, json_t *code, const char *msg)
{
	json_t *body = json_object();
	if (body) {
		json_object_set_new(body, "code", code);
		json_object_set_new(body, "message", hu_json_text(msg));
	} else {
		json_decref(code);
	}
	hu_reply_json(r, status, body);
}

void hu_reply_error(struct hu_req *r, int status, const char *fmt, ...)
{
	char msg[HU_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hu_reply_error_body(r, status, json_integer(status), msg);
}

void hu_reply_err(struct hu_req *r, const hu_err *err)
{
	int status = hu_http_status_for_errno(err->code);
	/* over capacity or under pressure: a client should come back */
	if (status == 429 || status == 503)
		hu_reply_header(r, "Retry-After", "5");
	/* out of descriptors, past admission (connections took the reserve):
	 * say which limit, wherever it struck */
	if (err->code == EMFILE)
		hu_reply_error(r, status, "%s (the daemon reached its open files limit, RLIMIT_NOFILE: raise LimitNOFILE=)",
			       err->msg);
	else if (err->code == ENFILE)
		hu_reply_error(r, status, "%s (the host reached its open files limit, fs.file-max)", err->msg);
	else
		hu_reply_error(r, status, "%s", err->msg);
}

void hu_reply_header(struct hu_req *r, const char *name, const char *value)
{
	if (r->ev)
		evhttp_add_header(evhttp_request_get_output_headers(r->ev), name, value);
}

