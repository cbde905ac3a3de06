/*
 * One HTTP request as a handler sees it, and the ways to answer it.
 *
 * The HTTP layer (this folder) parses the request target, gives the request
 * an id, times it, and owns it until it is answered. It knows nothing about
 * what the application serves: the application's dispatcher (given to
 * hu_http_new) decides which handler runs and fills the fields marked
 * "application" below, which the HTTP layer only carries and logs.
 *
 * Every error answer is JSON {"code": <status>, "message": "..."}, never an
 * empty or HTML body, except the few that libevent writes itself before any
 * callback runs (400 for an unparsable request line or header, 501 for
 * methods the server does not allow). Heads over 64 KiB (431), bad body
 * framing (400/501) and bodies over max_body (413) are answered in JSON by
 * the HTTP layer (inconn.c, body.c).
 */
#ifndef HUTCH_DAEMON_HTTP_REQUEST_H
#define HUTCH_DAEMON_HTTP_REQUEST_H

#include <event2/http.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define HU_REQ_TARGET_ID_MAX 64

struct hu_req {
	/* the transport (filled by the HTTP layer) */
	struct evhttp_request *ev;  /* NULL once the client or the server is gone */
	uint64_t id;                /* request id, for logs */
	enum evhttp_cmd_type method;
	char path[1024];            /* decoded path, without the query */
	const char *query;          /* raw query string or NULL (owned by the request) */
	struct evkeyvalq *query_kv; /* parsed query, or NULL */
	char param[128];            /* the {id} matched in the route pattern, "" if none */

	/* the application's (filled by its dispatcher) */
	void *app;                  /* the server's owner, as given to hu_http_new */
	void *target;               /* what the request acts on, or NULL; cleared by hu_http_forget_target */
	char target_id[HU_REQ_TARGET_ID_MAX]; /* its name in log lines, kept after target is gone */
	char principal[64];         /* who the caller authenticated as, "" if nobody */
	const char *user;           /* the user the call acts as (Basic auth), or NULL */
	/* a call another node relayed (its proof checked): the address that
	 * node got it from, "" when it did not know; hu_req_client */
	int relayed;
	char relayed_for[48];
};

/* A handler answers r exactly once, with a reply helper below or a stream
 * (connect.h), either before it returns or later from a callback. r stays
 * valid until the handler has returned AND it was answered: after a late
 * (asynchronous) answer, r is gone. */
typedef void (*hu_handler)(struct hu_req *r);

/* ---- replies ------------------------------------------------------------ */
/* Send `body` (reference stolen) as JSON with `status`. */
void hu_reply_json(struct hu_req *r, int status, json_t *body);
/* `body` (not freed) with a Content-Type of its own (GET /metrics). */
struct evbuffer;
void hu_reply_text(struct hu_req *r, int status, const char *content_type, struct evbuffer *body);
/* `body` (not freed) with `status` and only the headers given with
 * hu_reply_header: another server's answer, passed on whole. */
void hu_reply_passed(struct hu_req *r, int status, struct evbuffer *body);
/* 204 No Content, or 200/201 with Content-Length: 0 when status says so. */
void hu_reply_empty(struct hu_req *r, int status);
/* {"code": status, "message": "..."} */
void hu_reply_error(struct hu_req *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* {"code": code, "message": msg}, where code is any JSON value (stolen):
 * Connect's code strings, or E2B's integer status. */
void hu_reply_error_body(struct hu_req *r, int status, json_t *code, const char *msg);
/* Map a hu_err (errno) to an HTTP status and reply with its message. */
void hu_reply_err(struct hu_req *r, const hu_err *err);
/* The HTTP status hu_reply_err gives an errno (docs/api.md lists them). */
int hu_http_status_for_errno(int code);
/* Add a response header (e.g. X-Next-Token). */
void hu_reply_header(struct hu_req *r, const char *name, const char *value);

/* ---- the request -------------------------------------------------------- */
/* The raw body (possibly empty). Valid until the reply is sent. */
const uint8_t *hu_req_body(struct hu_req *r, size_t *len);
/* Parse the body as a JSON object. An empty body gives an empty object.
 * On malformed JSON or a non-object, replies 400 and returns -1. */
int hu_req_json(struct hu_req *r, json_t **out);
/* A request header, or NULL. */
const char *hu_req_header(struct hu_req *r, const char *name);
/* A query parameter (decoded), or NULL. */
const char *hu_req_query(struct hu_req *r, const char *name);
/* ---- streamed request bodies ------------------------------------------------- */
/* Bodies are read by the HTTP layer, never buffered whole for the routes
 * whose application hook says so (server.h, streams_body): those get the
 * body piece by piece, decoded from its framing (Content-Length or chunked),
 * with flow control. For other routes the body is read whole (bounded by
 * max_body, 413) before the handler runs, and hu_req_body_stream hands it
 * over in one piece. */
struct hu_body_cbs {
	/* The next bytes of the body. Return 1 to be paused (until
	 * hu_req_body_resume), 0 for more. May answer r. */
	int (*on_data)(void *arg, const uint8_t *data, size_t len);
	/* The body ended: err NULL when it is complete, else why not (the
	 * client closed early, malformed chunked framing: EINVAL). Called once,
	 * never from inside hu_req_body_stream. */
	void (*on_end)(void *arg, const hu_err *err);
	void *arg;
};
/* Start taking the body (once). "100 Continue" goes out now if the client
 * asked for it. -1 when there is no client any more. */
int hu_req_body_stream(struct hu_req *r, const struct hu_body_cbs *cbs);
void hu_req_body_resume(struct hu_req *r);
/* No more callbacks (the consumer is going away); the rest of the body is
 * left unread, so the connection closes after the reply. */
void hu_req_body_detach(struct hu_req *r);
/* What the head said: 0 no body, >0 its Content-Length, -1 chunked. */
int64_t hu_req_body_length(struct hu_req *r);

/* "GET", "POST", ... */
const char *hu_http_method_name(enum evhttp_cmd_type m);

#endif
