/*
 * The HTTP core of hutch serve (daemon.h): one evhttp server, one generic
 * callback that assigns a request id, parses the request target, picks the
 * plane and authenticates, then runs the matching route's handler.
 *
 * Planes: a request that carries E2b-Sandbox-Id is for that sandbox's envd
 * (data plane, X-Access-Token); anything else is the E2B REST API (control
 * plane, X-API-KEY). Every error answer is JSON; the only exceptions are the
 * few that libevent writes itself before our callback runs (413 body too
 * large, 400 for unparsable requests or oversized headers, 501 for methods
 * we do not allow).
 *
 * Request ownership: struct hu_req is allocated here for each request and
 * freed when it was answered and its handler has returned (hu_req_finish),
 * so synchronous handlers may still read r after replying, and asynchronous
 * ones may answer from a later callback. Requests in flight are listed so
 * that shutdown can drop them without touching freed libevent state.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/http/connect.h"
#include "daemon/core/daemon.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/envd/signed_url.h"
#include "daemon/common/stats.h"
#include "daemon/store/store.h"
#include "util/base64.h"
#include "util/cleanup.h"

#define MAX_HEADERS_BYTES (64u << 10) /* all request headers together */
#define LISTEN_BACKLOG 1024
#define ACCEPT_PAUSE_MS 1000
#define ROUTE_PATTERN_MAX 256
#define BASIC_AUTH_MAX 128 /* base64 characters of "user:password"; bytes never exceed it */

struct route {
	enum evhttp_cmd_type method;
	enum hu_auth auth;
	hu_handler fn;
	char pattern[ROUTE_PATTERN_MAX];
};

struct req_priv {
	struct hu_req pub;       /* what handlers see */
	char *query_buf;         /* owns pub.query */
	struct evkeyvalq query_kv;
	struct timespec t0;
	int in_handler;          /* the handler is running: do not free yet */
	int answered;            /* the reply was sent (or the stream ended) */
	struct hu_stream *stream;
	struct req_priv *prev, *next; /* router->inflight */
};

struct hu_router {
	struct route *routes;
	size_t n_routes, cap_routes;
	struct req_priv *inflight;
};

static struct req_priv *priv_of(struct hu_req *r)
{
	return (struct req_priv *)(void *)((char *)r - offsetof(struct req_priv, pub));
}

/* ---- helpers ------------------------------------------------------------ */

json_t *hu_json_text(const char *s)
{
	json_t *j;

	if (!s)
		s = "";
	j = json_string(s);
	if (j)
		return j;
	_cleanup_free_ char *ascii = strdup(s);
	if (!ascii)
		return NULL;
	for (char *c = ascii; *c; c++)
		if ((unsigned char)*c >= 0x80)
			*c = '?';
	return json_string(ascii);
}

static const char *method_name(enum evhttp_cmd_type m)
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
static int status_for_errno(int code)
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

/* ---- request lifetime --------------------------------------------------- */

static struct req_priv *req_new(struct hu_daemon *d, struct evhttp_request *ev)
{
	struct req_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pub.d = d;
	p->pub.ev = ev;
	p->pub.id = ++d->next_request_id;
	p->pub.method = evhttp_request_get_command(ev);
	TAILQ_INIT(&p->query_kv);
	clock_gettime(CLOCK_MONOTONIC, &p->t0);
	p->next = d->router->inflight;
	if (p->next)
		p->next->prev = p;
	d->router->inflight = p;
	return p;
}

static void req_free(struct req_priv *p)
{
	struct hu_router *rt = p->pub.d->router;

	if (p->prev)
		p->prev->next = p->next;
	else
		rt->inflight = p->next;
	if (p->next)
		p->next->prev = p->prev;
	evhttp_clear_headers(&p->query_kv);
	free(p->query_buf);
	free(p);
}

void hu_http_forget_sandbox(struct hu_daemon *d, const struct hu_sbx *s)
{
	if (!d->router)
		return;
	for (struct req_priv *p = d->router->inflight; p; p = p->next)
		if (p->pub.sbx == s)
			p->pub.sbx = NULL;
}

void hu_req_finish(struct hu_req *r)
{
	struct req_priv *p = priv_of(r);
	p->answered = 1;
	if (!p->in_handler)
		req_free(p);
}

void hu_req_set_stream(struct hu_req *r, struct hu_stream *s)
{
	priv_of(r)->stream = s;
}

/* ---- replies -------------------------------------------------------------- */

/* A second answer to one request is a handler bug; refuse it loudly rather
 * than corrupt libevent's state. */
static int can_answer(struct hu_req *r)
{
	struct req_priv *p = priv_of(r);
	if (p->answered || p->stream) {
		hu_log(HU_LOG_ERROR, r->sbx_id[0] ? r->sbx_id : NULL, r->id, "%s %s: answered twice (handler bug)",
		       method_name(r->method), r->path);
		return 0;
	}
	return 1;
}

static void log_reply(struct hu_req *r, int status, const char *message)
{
	struct req_priv *p = priv_of(r);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double ms = (double)(now.tv_sec - p->t0.tv_sec) * 1e3 + (double)(now.tv_nsec - p->t0.tv_nsec) / 1e6;
	const char *sbx = r->sbx_id[0] ? r->sbx_id : NULL;

	if (status >= 400)
		hu_log(HU_LOG_WARN, sbx, r->id, "%s %s -> %d (%.2f ms): %s", method_name(r->method), r->path,
		       status, ms, message ? message : "");
	else
		hu_log(HU_LOG_DEBUG, sbx, r->id, "%s %s -> %d (%.2f ms)", method_name(r->method), r->path, status,
		       ms);
}

static void send_reply(struct hu_req *r, int status, struct evbuffer *body)
{
	if (r->sbx_id[0] && body)
		hu_stat_add(HU_STAT_DATA_BYTES_OUT, evbuffer_get_length(body));
	if (r->ev)
		evhttp_send_reply(r->ev, status, status == 499 ? "Client Closed Request" : NULL, body);
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

void hu_reply_empty(struct hu_req *r, int status)
{
	if (!can_answer(r))
		return;
	log_reply(r, status, NULL);
	/* The SDK parses any other bodiless 2xx as JSON unless it says
	 * Content-Length: 0 (e2b-wire.md). */
	if (status != 204 && r->ev)
		evhttp_add_header(evhttp_request_get_output_headers(r->ev), "Content-Length", "0");
	send_reply(r, status, NULL);
}

/* {"code": <code>, "message": msg}; code is the status (REST) or a Connect
 * code string (data-plane Connect paths). */
static void reply_error_body(struct hu_req *r, int status, json_t *code, const char *msg)
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
	reply_error_body(r, status, json_integer(status), msg);
}

void hu_reply_err(struct hu_req *r, const hu_err *err)
{
	int status = status_for_errno(err->code);
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

/* ---- request accessors ---------------------------------------------------- */

const uint8_t *hu_req_body(struct hu_req *r, size_t *len)
{
	struct evbuffer *in;
	const uint8_t *data;

	*len = 0;
	if (!r->ev)
		return (const uint8_t *)"";
	in = evhttp_request_get_input_buffer(r->ev);
	*len = evbuffer_get_length(in);
	if (*len == 0)
		return (const uint8_t *)"";
	data = evbuffer_pullup(in, -1);
	if (!data)
		*len = 0;
	return data ? data : (const uint8_t *)"";
}

int hu_json_parse_object(const uint8_t *buf, size_t len, json_t **out, hu_err *err)
{
	json_error_t jerr;
	json_t *j = json_loadb((const char *)buf, len, JSON_DECODE_ANY, &jerr);

	if (!j)
		return hu_err_set(err, -EINVAL, "not valid JSON: %s (line %d, column %d)", jerr.text, jerr.line,
				  jerr.column);
	if (!json_is_object(j)) {
		json_decref(j);
		return hu_err_set(err, -EINVAL, "not a JSON object");
	}
	*out = j;
	return 0;
}

int hu_req_json(struct hu_req *r, json_t **out)
{
	size_t len;
	const uint8_t *body = hu_req_body(r, &len);
	hu_err err;

	if (len == 0) {
		*out = json_object();
		if (*out)
			return 0;
		hu_reply_error(r, 500, "out of memory");
		return -1;
	}
	if (hu_json_parse_object(body, len, out, &err) < 0) {
		hu_reply_error(r, 400, "request body: %s", err.msg);
		return -1;
	}
	return 0;
}

const char *hu_req_header(struct hu_req *r, const char *name)
{
	if (!r->ev)
		return NULL;
	return evhttp_find_header(evhttp_request_get_input_headers(r->ev), name);
}

const char *hu_req_query(struct hu_req *r, const char *name)
{
	return r->query_kv ? evhttp_find_header(r->query_kv, name) : NULL;
}

/* ---- routing -------------------------------------------------------------- */

int hu_route(struct hu_daemon *d, enum evhttp_cmd_type method, const char *pattern, enum hu_auth auth,
	     hu_handler fn)
{
	struct hu_router *rt = d->router;
	const char *brace = strchr(pattern, '{');
	int valid = pattern[0] == '/' && strlen(pattern) < ROUTE_PATTERN_MAX &&
		    (!brace || (brace[-1] == '/' && !strncmp(brace, "{id}", 4) && (brace[4] == '/' || !brace[4]) &&
				!strchr(brace + 1, '{')));

	if (!valid) {
		hu_log(HU_LOG_ERROR, NULL, 0, "route pattern '%s' is invalid (a path with at most one {id} segment)",
		       pattern);
		return -1;
	}
	if (rt->n_routes == rt->cap_routes) {
		size_t cap = rt->cap_routes ? rt->cap_routes * 2 : 32;
		struct route *grown = realloc(rt->routes, cap * sizeof(*grown));
		if (!grown) {
			hu_log(HU_LOG_ERROR, NULL, 0, "route %s: out of memory", pattern);
			return -1;
		}
		rt->routes = grown;
		rt->cap_routes = cap;
	}
	struct route *e = &rt->routes[rt->n_routes++];
	e->method = method;
	e->auth = auth;
	e->fn = fn;
	snprintf(e->pattern, sizeof(e->pattern), "%s", pattern);
	return 0;
}

/* Segment-by-segment match; "{id}" takes one non-empty segment into param. */
static int route_match(const char *pat, const char *path, char *param, size_t cap)
{
	param[0] = '\0';
	while (*pat && *path) {
		if (*pat != '/' || *path != '/')
			return 0;
		pat++;
		path++;
		size_t pl = strcspn(pat, "/"), sl = strcspn(path, "/");
		if (pl == 4 && !memcmp(pat, "{id}", 4)) {
			if (sl == 0 || sl >= cap)
				return 0;
			memcpy(param, path, sl);
			param[sl] = '\0';
		} else if (pl != sl || memcmp(pat, path, pl)) {
			return 0;
		}
		pat += pl;
		path += sl;
	}
	return !*pat && !*path;
}

/* envd's Connect procedures live at /<package.Service>/<Method>. */
static int is_connect_path(const char *path)
{
	const char *svc = path + 1, *slash = strchr(svc, '/');
	return slash && memchr(svc, '.', (size_t)(slash - svc)) != NULL;
}

/* A data-plane error in the shape its client parses: Connect code strings
 * on Connect procedures, {"code": status} on envd's REST paths. */
static void plane_error(struct hu_req *r, int status, const char *connect_code, const char *msg)
{
	if (r->sbx && is_connect_path(r->path))
		reply_error_body(r, status, json_string(connect_code), msg);
	else
		reply_error_body(r, status, json_integer(status), msg);
}

static int authenticate_api_key(struct hu_req *r)
{
	const char *key = hu_req_header(r, "X-API-KEY");
	hu_err err;

	if (!key || !*key) {
		hu_reply_error(r, 401, "missing X-API-KEY header");
		return -1;
	}
	if (!r->d->store) {
		hu_reply_error(r, 401, "invalid API key");
		return -1;
	}
	if (hu_store_key_team(r->d->store, key, r->team, sizeof(r->team), &err) < 0) {
		if (err.code == ENOENT)
			hu_reply_error(r, 401, "invalid API key");
		else
			hu_reply_error(r, 500, "checking the API key: %s", err.msg);
		return -1;
	}
	return 0;
}

static void route_dispatch(struct hu_req *r, int data_plane)
{
	struct hu_router *rt = r->d->router;
	const struct route *found = NULL;
	int path_known = 0;

	for (size_t i = 0; i < rt->n_routes && !found; i++) {
		const struct route *e = &rt->routes[i];
		if ((e->auth == HU_AUTH_ENVD) != data_plane)
			continue;
		if (!route_match(e->pattern, r->path, r->param, sizeof(r->param)))
			continue;
		path_known = 1;
		if (e->method == r->method)
			found = e;
	}
	if (!found) {
		r->param[0] = '\0';
		if (data_plane)
			plane_error(r, path_known ? 405 : 404, "unimplemented",
				    path_known ? "method not allowed" : "no such endpoint");
		else
			hu_reply_error(r, path_known ? 405 : 404, "%s %s: %s", method_name(r->method), r->path,
				       path_known ? "method not allowed" : "no such endpoint");
		return;
	}
	if (found->auth == HU_AUTH_API_KEY && authenticate_api_key(r) < 0)
		return;
	found->fn(r);
}

/* ---- the data plane ------------------------------------------------------- */

static int token_ok(const struct hu_sbx *s, const char *given)
{
	size_t n = strlen(s->access_token);
	/* A sandbox without a token is a bug elsewhere: refuse, never open. */
	if (!given || n == 0 || strlen(given) != n)
		return 0;
	return CRYPTO_memcmp(given, s->access_token, n) == 0;
}

/* Authorization: Basic base64("<user>:") names the user a call runs as. */
static int parse_user(struct hu_req *r)
{
	const char *h = hu_req_header(r, "Authorization");
	uint8_t out[BASIC_AUTH_MAX];
	size_t len, n;
	hu_err err;

	if (!h)
		return 0;
	if (strncasecmp(h, "Basic ", 6)) {
		plane_error(r, 400, "invalid_argument", "Authorization must be Basic base64(user:)");
		return -1;
	}
	h += 6;
	while (*h == ' ')
		h++;
	len = strlen(h);
	if (len > BASIC_AUTH_MAX || hu_base64_decode(h, len, out, &n, &err) < 0) {
		plane_error(r, 400, "invalid_argument", "Authorization: malformed base64");
		return -1;
	}
	const uint8_t *colon = memchr(out, ':', n);
	size_t ulen = colon ? (size_t)(colon - out) : n;
	if (ulen == 4 && !memcmp(out, "root", 4)) {
		r->user = "root";
	} else if (ulen == 4 && !memcmp(out, "user", 4)) {
		r->user = "user";
	} else {
		char msg[160];
		snprintf(msg, sizeof(msg), "user '%.*s' not found (hutch sandboxes have root and user)",
			 (int)(ulen < 64 ? ulen : 64), (const char *)out);
		plane_error(r, 400, "invalid_argument", msg);
		return -1;
	}
	return 0;
}

static void reply_sandbox_unavailable(struct hu_req *r, const char *id, const struct hu_sbx *s)
{
	char msg[HU_ERR_MSG_MAX];
	json_t *body = json_object();

	snprintf(msg, sizeof(msg), "sandbox '%.64s' %s", id, s ? "is paused" : "was not found");
	if (body) {
		json_object_set_new(body, "sandboxId", hu_json_text(id));
		json_object_set_new(body, "message", hu_json_text(msg));
		json_object_set_new(body, "code", json_integer(502));
	}
	hu_reply_json(r, 502, body);
}

/* `s` is the sandbox a signed URL resolved to (already verified), or NULL
 * to look sbx_id up and check X-Access-Token (or a signature). */
static void dispatch_data_plane(struct hu_req *r, const char *sbx_id, struct hu_sbx *s)
{
	struct hu_daemon *d = r->d;
	bool signature_ok = s != NULL;

	if (!s && d->reg && strlen(sbx_id) < HU_ID_MAX)
		s = hu_registry_get(d->reg, sbx_id);
	/* envd's health probe carries no token: the SDK uses it to tell a dead
	 * or paused sandbox (502) from a live one. It never resumes one: an
	 * unauthenticated request must not wake sandboxes up. */
	if (!s || (s->state != HU_SBX_RUNNING && (!s->auto_resume || !strcmp(r->path, "/health")))) {
		reply_sandbox_unavailable(r, sbx_id, s);
		return;
	}
	r->sbx = s;
	snprintf(r->sbx_id, sizeof(r->sbx_id), "%s", s->id);
	if (r->method == EVHTTP_REQ_GET && !strcmp(r->path, "/health")) {
		hu_reply_empty(r, 204);
		return;
	}
	if (!signature_ok && !hu_req_header(r, "X-Access-Token") && hu_signed_present(r)) {
		if (!hu_signed_check(r, s))
			return; /* answered */
		signature_ok = true;
	}
	if (!signature_ok && !token_ok(s, hu_req_header(r, "X-Access-Token"))) {
		plane_error(r, 401, "unauthenticated", "missing or wrong X-Access-Token");
		return;
	}
	if (parse_user(r) < 0)
		return;
	/* autoResume: the request goes on as if the sandbox had never slept */
	if (s->state == HU_SBX_PAUSED) {
		hu_err err;
		if (hu_sbx_resume(d, s, 0, &err) < 0) {
			hu_log(HU_LOG_WARN, s->id, r->id, "auto-resume: %s", err.msg);
			reply_sandbox_unavailable(r, sbx_id, s);
			return;
		}
		hu_stat_add(HU_STAT_AUTO_RESUMES, 1);
	}
	if (r->ev)
		hu_stat_add(HU_STAT_DATA_BYTES_IN, evbuffer_get_length(evhttp_request_get_input_buffer(r->ev)));
	hu_sbx_touch(s);
	route_dispatch(r, 1);
}

/* ---- the request target --------------------------------------------------- */

static int percent_encoding_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '%' && (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
				    !isxdigit((unsigned char)s[i + 2])))
			return 0;
	return 1;
}

/* Fill r->path (decoded), r->query and r->query_kv; answers 400 on a
 * target that is not a clean origin-form (or absolute-form) path. */
static int parse_target(struct hu_req *r)
{
	struct req_priv *p = priv_of(r);
	const char *target = evhttp_request_get_uri(r->ev);
	const char *path = target, *query = NULL;
	size_t path_len;

	/* Until the path is decoded, logs show the raw target. */
	snprintf(r->path, sizeof(r->path), "%s", target ? target : "");

	/* Absolute-form ("http://host/p?q", proxies): take its path and query. */
	if (target && target[0] != '/') {
		const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(r->ev);
		path = u ? evhttp_uri_get_path(u) : NULL;
		query = u ? evhttp_uri_get_query(u) : NULL;
		if (!path || !*path)
			path = "/";
		if (path[0] != '/') {
			hu_reply_error(r, 400, "request target must be a path");
			return -1;
		}
		path_len = strlen(path);
	} else if (target) {
		path_len = strcspn(target, "?#");
		if (target[path_len] == '?') {
			size_t qlen = strcspn(target + path_len + 1, "#");
			p->query_buf = strndup(target + path_len + 1, qlen);
			if (!p->query_buf) {
				hu_reply_error(r, 500, "out of memory");
				return -1;
			}
		}
	} else {
		hu_reply_error(r, 400, "no request target");
		return -1;
	}
	if (query && !(p->query_buf = strdup(query))) {
		hu_reply_error(r, 500, "out of memory");
		return -1;
	}

	if (!percent_encoding_valid(path, path_len)) {
		hu_reply_error(r, 400, "bad percent-encoding in the request path");
		return -1;
	}
	_cleanup_free_ char *raw = strndup(path, path_len);
	size_t n = 0;
	_cleanup_free_ char *decoded = raw ? evhttp_uridecode(raw, 0, &n) : NULL;
	if (!decoded) {
		hu_reply_error(r, 500, "out of memory");
		return -1;
	}
	if (n != strlen(decoded)) {
		hu_reply_error(r, 400, "the request path contains a NUL byte");
		return -1;
	}
	if (n >= sizeof(r->path)) {
		hu_reply_error(r, 414, "the request path is longer than %zu bytes", sizeof(r->path) - 1);
		return -1;
	}
	memcpy(r->path, decoded, n + 1);

	r->query = p->query_buf;
	if (r->query) {
		if (evhttp_parse_query_str(r->query, &p->query_kv) < 0) {
			hu_reply_error(r, 400, "malformed query string");
			return -1;
		}
		r->query_kv = &p->query_kv;
	}
	return 0;
}

/* ---- the generic callback ------------------------------------------------- */

/* Replies and stream frames are small writes; with Nagle on, each one after
 * the first waits for the client's delayed ACK (40 ms on Linux), which made
 * a `commands.run('true')` round trip take ~45 ms instead of a few. */
static void no_delay(struct evhttp_request *ev)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(ev);
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
	evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* fails harmlessly on unix sockets */
}

static void on_request(struct evhttp_request *ev, void *arg)
{
	struct hu_daemon *d = arg;
	struct req_priv *p = req_new(d, ev);
	struct hu_req *r;

	if (!p) {
		evhttp_send_reply(ev, 503, "Out Of Memory", NULL);
		return;
	}
	r = &p->pub;
	p->in_handler = 1;
	no_delay(ev);
	if (parse_target(r) == 0) {
		const char *sbx_id = hu_req_header(r, "E2b-Sandbox-Id");
		struct hu_sbx *signed_for;
		if (sbx_id)
			dispatch_data_plane(r, sbx_id, NULL);
		else if (hu_signed_present(r)) {
			/* a signed /files URL names its sandbox only through the signature */
			if ((signed_for = hu_signed_resolve(r)))
				dispatch_data_plane(r, signed_for->id, signed_for);
		} else if (!strcmp(r->path, "/health") && r->method == EVHTTP_REQ_GET)
			hu_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
		else
			route_dispatch(r, 0);
	}
	p->in_handler = 0;
	if (p->answered)
		req_free(p);
}

/* ---- server set-up and shutdown -------------------------------------------- */

int hu_http_init(struct hu_daemon *d, hu_err *err)
{
	struct timeval idle = {.tv_sec = d->cfg.idle_timeout_s ? d->cfg.idle_timeout_s : 60};
	ev_ssize_t max_body = d->cfg.max_body_bytes > (uint64_t)EV_SSIZE_MAX ? EV_SSIZE_MAX
									   : (ev_ssize_t)d->cfg.max_body_bytes;

	d->router = calloc(1, sizeof(*d->router));
	d->http = evhttp_new(d->base);
	if (!d->router || !d->http) {
		hu_http_close(d);
		hu_http_free(d);
		return hu_err_set(err, ENOMEM, "create the HTTP server");
	}
	evhttp_set_gencb(d->http, on_request, d);
	evhttp_set_allowed_methods(d->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
						    EVHTTP_REQ_PATCH | EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS);
	evhttp_set_max_body_size(d->http, max_body);
	evhttp_set_max_headers_size(d->http, MAX_HEADERS_BYTES);
	/* Idle connections die after this; streams swap it for a write-only
	 * timeout while they run (connect.c, evhttp-notes #2). */
	evhttp_set_timeout_tv(d->http, &idle);
	return 0;
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	struct evconnlistener *l = arg;
	evconnlistener_enable(l);
	hu_log(HU_LOG_INFO, NULL, 0, "accepting connections again");
}

/* accept() failed with something libevent does not retry (EMFILE, ENFILE,
 * ENOBUFS...). Retrying at once spins the loop and floods the log
 * (evhttp-notes #3), so accepting pauses for a second, logged once. libevent
 * passes the evhttp as the callback argument, so the resume timer is a
 * one-shot event of the base rather than a field of the router. */
static void on_accept_error(struct evconnlistener *l, void *ctx)
{
	int e = EVUTIL_SOCKET_ERROR();
	struct timeval tv = {.tv_sec = ACCEPT_PAUSE_MS / 1000, .tv_usec = (ACCEPT_PAUSE_MS % 1000) * 1000};

	evconnlistener_disable(l);
	hu_log(HU_LOG_WARN, NULL, 0, "accept: %s; not accepting new connections for %d ms", strerror(e),
	       ACCEPT_PAUSE_MS);
	if (event_base_once(evconnlistener_get_base(l), -1, EV_TIMEOUT, on_accept_resume, l, &tv) < 0)
		evconnlistener_enable(l);
}

int hu_http_listen(struct hu_daemon *d, hu_err *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
	struct addrinfo *ai = NULL;
	char port[8];
	int one = 1, rc;

	snprintf(port, sizeof(port), "%u", (unsigned)d->cfg.port);
	rc = getaddrinfo(d->cfg.listen_addr, port, &hints, &ai);
	if (rc != 0)
		return hu_err_set(err, EINVAL, "listen address '%s': %s", d->cfg.listen_addr, gai_strerror(rc));
	_cleanup_close_ int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return hu_err_sys(err, "socket for %s", d->cfg.listen_addr);
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	rc = bind(fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (rc < 0) {
		int e = errno;
		return hu_err_set(err, -e, "listen on %s port %u: %s%s", d->cfg.listen_addr, (unsigned)d->cfg.port,
				  strerror(e), e == EADDRINUSE ? " (another server has it; --port N picks another)" : "");
	}
	if (listen(fd, LISTEN_BACKLOG) < 0)
		return hu_err_sys(err, "listen on %s port %u", d->cfg.listen_addr, (unsigned)d->cfg.port);
	struct evhttp_bound_socket *bound = evhttp_accept_socket_with_handle(d->http, fd);
	if (!bound)
		return hu_err_set(err, ENOMEM, "accept on %s port %u", d->cfg.listen_addr, (unsigned)d->cfg.port);
	hu_take_fd(&fd); /* the listener closes it */
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(bound), on_accept_error);
	return 0;
}

void hu_http_close(struct hu_daemon *d)
{
	d->stopping = 1;
	if (!d->http)
		return;
	/* evhttp_free frees every request still queued on a connection, so
	 * answers to them must be dropped from now on. Streams are told by
	 * their close callback instead (connect.c). */
	if (d->router)
		for (struct req_priv *p = d->router->inflight; p; p = p->next)
			if (!p->stream)
				p->pub.ev = NULL;
	evhttp_free(d->http);
	d->http = NULL;
}

void hu_http_free(struct hu_daemon *d)
{
	struct hu_router *rt = d->router;

	hu_http_close(d);
	if (!rt)
		return;
	/* Whatever their owners never answered: end leftover streams (which
	 * finishes their requests) and free the rest. */
	while (rt->inflight) {
		struct req_priv *p = rt->inflight;
		if (p->stream)
			hu_stream_end(p->stream, NULL, NULL);
		else
			req_free(p);
	}
	free(rt->routes);
	free(rt);
	d->router = NULL;
}
