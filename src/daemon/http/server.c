/*
 * The HTTP server (server.h): one evhttp, one generic callback, and the
 * lifetime of every request from its arrival to its answer.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/common/log.h"
#include "daemon/http/server_internal.h"
#include "util/cleanup.h"

/* evhttp's own limit, above ours (HU_HTTP_MAX_HEAD, 431 in inconn.c) so that
 * ours answers first */
#define EVHTTP_MAX_HEADERS_BYTES (2 * HU_HTTP_MAX_HEAD)
#define LISTEN_BACKLOG 1024
#define ACCEPT_PAUSE_MS 1000
/* hu_http_loop_new: the longest run of callbacks below the highest priority
 * between two polls. Answers leave as they are made (answers_first), so
 * this bounds only how late the loop learns of new events in a burst. */
#define LOOP_POLL_AFTER_US 1000

/* ---- request lifetime --------------------------------------------------- */

static struct req_priv *req_new(struct hu_http *h, struct evhttp_request *ev)
{
	struct req_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->http = h;
	p->pub.app = h->app;
	p->pub.ev = ev;
	p->pub.id = ++h->next_request_id;
	p->pub.method = evhttp_request_get_command(ev);
	TAILQ_INIT(&p->query_kv);
	clock_gettime(CLOCK_MONOTONIC, &p->t0);
	p->next = h->inflight;
	if (p->next)
		p->next->prev = p;
	h->inflight = p;
	return p;
}

static void req_free(struct req_priv *p)
{
	struct hu_http *h = p->http;

	if (p->prev)
		p->prev->next = p->next;
	else
		h->inflight = p->next;
	if (p->next)
		p->next->prev = p->prev;
	if (p->conn)
		hu_inconn_forget_req(p->conn);
	hu_body_free(p);
	evhttp_clear_headers(&p->query_kv);
	free(p->query_buf);
	free(p);
}

void hu_http_forget_target(struct hu_http *h, const void *target)
{
	if (!h)
		return;
	for (struct req_priv *p = h->inflight; p; p = p->next)
		if (p->pub.target == target)
			p->pub.target = NULL;
}

void hu_req_finish(struct hu_req *r)
{
	struct req_priv *p = hu_req_priv(r);
	p->answered = 1;
	if (!p->in_handler)
		req_free(p);
}

void hu_req_hold(struct req_priv *p)
{
	p->in_handler++;
}

void hu_req_unhold(struct req_priv *p)
{
	if (--p->in_handler == 0 && p->answered)
		req_free(p);
}

void hu_req_set_stream(struct hu_req *r, struct hu_stream *s, void (*end)(struct hu_stream *s))
{
	hu_req_priv(r)->stream = s;
	hu_req_priv(r)->end_stream = end;
}

struct timeval hu_req_idle_timeout(struct hu_req *r)
{
	uint32_t s = hu_req_priv(r)->http->set.idle_timeout_s;
	return (struct timeval){.tv_sec = s ? s : 60};
}

/* ---- the request target ------------------------------------------------------ */

static int percent_encoding_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '%' && (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
				    !isxdigit((unsigned char)s[i + 2])))
			return 0;
	return 1;
}

/* Fill r->path (decoded), r->query and r->query_kv; answers 400 (or 414)
 * on a target that is not a clean origin-form (or absolute-form) path. */
static int parse_target(struct hu_req *r)
{
	struct req_priv *p = hu_req_priv(r);
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

/* The head is parsed and the body (if any) is ready for the handler: read
 * whole, or left for it to stream. */
static void run_handler(struct req_priv *p)
{
	struct hu_http *h = p->http;
	hu_req_hold(p);
	h->hooks.dispatch(&p->pub);
	hu_req_unhold(p);
}

static void on_request(struct evhttp_request *ev, void *arg)
{
	struct hu_http *h = arg;
	struct req_priv *p = req_new(h, ev);
	struct hu_inconn *c = p ? hu_inconn_of(h, ev) : NULL;
	char msg[192];
	int status;

	if (!p) {
		evhttp_send_reply(ev, 503, "Out Of Memory", NULL);
		return;
	}
	hu_req_hold(p);
	if (c)
		hu_inconn_no_delay(c);
	if (!c) {
		/* never happens: every connection has its state */
		evhttp_add_header(evhttp_request_get_output_headers(ev), "Connection", "close");
		hu_reply_error(&p->pub, 500, "no state for this connection");
	} else if (hu_inconn_request(c, p, &status, msg, sizeof(msg)) < 0) {
		hu_body_own_reads(p);
		evhttp_add_header(evhttp_request_get_output_headers(ev), "Connection", "close");
		hu_reply_error(&p->pub, status, "%s", msg);
	} else {
		hu_body_own_reads(p);
		if (parse_target(&p->pub) == 0) {
			if (!p->body.present)
				run_handler(p);
			else
				hu_body_begin(p, h->hooks.streams_body && h->hooks.streams_body(&p->pub), run_handler);
		}
	}
	hu_req_unhold(p);
}

/* ---- server set-up and shutdown -------------------------------------------- */

struct event_base *hu_http_loop_new(int priorities, hu_err *err)
{
	struct event_config *cfg = event_config_new();
	struct event_base *base = NULL;

	/* a poll after LOOP_POLL_AFTER_US of callbacks at priority 1 and below;
	 * not after each one: a poll reports every socket that is still
	 * ready again (epoll is level-triggered), so with n connections busy a
	 * poll per callback costs the kernel n checks a callback */
	struct timeval budget = {.tv_usec = LOOP_POLL_AFTER_US};
	if (cfg && event_config_set_max_dispatch_interval(cfg, &budget, -1, 1) == 0)
		base = event_base_new_with_config(cfg);
	if (cfg)
		event_config_free(cfg);
	if (!base) {
		hu_err_set(err, ENOMEM, "create the event loop");
		return NULL;
	}
	if (event_base_priority_init(base, priorities) < 0) {
		event_base_free(base);
		hu_err_set(err, EINVAL, "event loop: %d priorities", priorities);
		return NULL;
	}
	return base;
}

int hu_http_new(struct event_base *base, const struct hu_http_settings *set, const struct hu_http_hooks *hooks,
		void *app, struct hu_http **out, hu_err *err)
{
	struct hu_http *h = calloc(1, sizeof(*h));
	struct timeval idle;

	*out = NULL;
	if (!h || !(h->ev = evhttp_new(base))) {
		free(h);
		return hu_err_set(err, ENOMEM, "create the HTTP server");
	}
	h->set = *set;
	h->base = base;
	h->hooks = *hooks;
	h->app = app;
	idle = (struct timeval){.tv_sec = set->idle_timeout_s ? set->idle_timeout_s : 60};
	evhttp_set_gencb(h->ev, on_request, h);
	/* no Content-Type is made up for a reply without one (a proxied
	 * server's response is passed on as it was) */
	evhttp_set_default_content_type(h->ev, NULL);
	evhttp_set_allowed_methods(h->ev, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
						  EVHTTP_REQ_PATCH | EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS);
	/* evhttp never sees a body (inconn.c): body.c applies max_body */
	evhttp_set_max_headers_size(h->ev, EVHTTP_MAX_HEADERS_BYTES);
	/* every connection's bufferevent comes with its state (inconn.c) */
	evhttp_set_bevcb(h->ev, hu_inconn_bev, h);
	/* Idle connections die after this; streams swap it for a write-only
	 * timeout while they run (connect.c, docs/architecture.md "Streams"). */
	evhttp_set_timeout_tv(h->ev, &idle);
	*out = h;
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
 * here, so accepting pauses for a second, logged once. libevent
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

int hu_http_listen(struct hu_http *h, const char *addr, uint16_t port_number, hu_err *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
	struct addrinfo *ai = NULL;
	char port[8];
	int one = 1, rc;

	snprintf(port, sizeof(port), "%u", (unsigned)port_number);
	rc = getaddrinfo(addr, port, &hints, &ai);
	if (rc != 0)
		return hu_err_set(err, EINVAL, "listen address '%s': %s", addr, gai_strerror(rc));
	_cleanup_close_ int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return hu_err_sys(err, "socket for %s", addr);
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	rc = bind(fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (rc < 0) {
		int e = errno;
		return hu_err_set(err, -e, "listen on %s port %u: %s%s", addr, (unsigned)port_number,
				  strerror(e), e == EADDRINUSE ? " (another server has it; --port N picks another)" : "");
	}
	if (listen(fd, LISTEN_BACKLOG) < 0)
		return hu_err_sys(err, "listen on %s port %u", addr, (unsigned)port_number);
	if (hu_http_listen_fd(h, hu_take_fd(&fd), err) < 0) {
		hu_err_prefix(err, "%s port %u", addr, (unsigned)port_number);
		return -1;
	}
	return 0;
}

int hu_http_listen_fd(struct hu_http *h, int fd, hu_err *err)
{
	struct evhttp_bound_socket *bound = evhttp_accept_socket_with_handle(h->ev, fd);
	if (!bound) {
		close(fd);
		return hu_err_set(err, ENOMEM, "accept connections");
	}
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(bound), on_accept_error);
	return 0;
}

void hu_http_close(struct hu_http *h)
{
	if (!h || !h->ev)
		return;
	/* evhttp_free frees every request still queued on a connection, so
	 * answers to them must be dropped from now on. Streams are told by
	 * their close callback instead (connect.c). */
	for (struct req_priv *p = h->inflight; p; p = p->next) {
		if (p->stream)
			continue;
		/* one whose client left is detached from its connection, and
		 * evhttp_free does not reach it: only we can free it */
		if (p->pub.ev && !evhttp_request_get_connection(p->pub.ev))
			evhttp_request_free(p->pub.ev);
		p->pub.ev = NULL;
	}
	hu_http_takeover_close_all(h);
	evhttp_free(h->ev);
	h->ev = NULL;
}

void hu_http_free(struct hu_http *h)
{
	if (!h)
		return;
	hu_http_close(h);
	/* Whatever their owners never answered: end leftover streams (which
	 * finishes their requests) and free the rest. */
	while (h->inflight) {
		struct req_priv *p = h->inflight;
		if (p->stream)
			p->end_stream(p->stream);
		else
			req_free(p);
	}
	hu_inconn_table_free(h);
	free(h);
}
