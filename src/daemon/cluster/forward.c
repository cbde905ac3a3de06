/*
 * Forwarding a call to the node that serves it (forward.h): take a kept
 * connection to the node or dial one, send the rebuilt head, then the
 * client's body as it arrives, read the node's response head, and pass the
 * response on as it arrives; or, after a 101, relay bytes both ways until
 * either side is done.
 */
#include "daemon/cluster/forward.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "daemon/cluster/cluster_internal.h"
#include "daemon/cluster/forward_auth.h"
#include "daemon/cluster/forward_pool.h"
#include "daemon/common/json.h"
#include "daemon/common/log.h"
#include "daemon/common/stats.h"
#include "daemon/http/connect.h"
#include "daemon/http/framing.h"
#include "daemon/http/relay.h"
#include "daemon/http/response.h"
#include "daemon/http/server.h"
#include "daemon/sandboxes/elsewhere.h"
#include "util/clock.h"

struct hu_forward {
	struct hu_cluster *c;
	struct hu_forward *prev, *next;
	struct hu_req *r;          /* until its answer is over, or a relay took its connection */
	uint64_t req_id;
	char node[HU_NODE_NAME_MAX];
	char address[sizeof(((struct hu_node *)0)->address)];
	char placement[HU_PLACEMENT_ID_MAX];
	struct evbuffer *head;     /* the request head, kept until the node answers: a retry sends it again */
	bool two_way;              /* an Upgrade request */
	bool chunked_body;         /* the body goes on chunked (the client's length is not known) */
	bool body_started;         /* the client's body is being taken (hu_req_body_stream) */
	bool body_over;            /* the body went out whole, or there was none */
	bool body_paused;          /* the node's socket is full: the client's body waits */
	bool head_request;         /* HEAD: the response has no body whatever it says */
	bool replayable;           /* idempotent and bodiless: may be sent again, once, on a new connection */
	bool reused;               /* the connection to the node came from the pool */
	bool retried;
	bool kept;                 /* the node keeps the connection after this response */
	bool tls;                  /* the node's address is https:// */
	struct bufferevent *server;
	struct hu_http_conn *conn; /* the client's connection, taken over by a two-way relay */
	struct hu_relay *relay;
	struct hu_stream *stream;  /* the response being passed on */
	struct hu_framing resp;    /* its body's framing */
	bool resp_paused;
	bool server_ended;         /* the node's connection ended (or failed: server_failed) */
	bool server_failed;
	uint64_t up_bytes, down_bytes;
};

/* Hop-by-hop headers (RFC 9110 7.6.1), the framing headers (the HTTP layer
 * renames the client's, inconn.c; the body is framed anew here), and what
 * this node sets itself. Responses pass through the same filter. */
static const char *const not_passed[] = {"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer",
					 "Transfer-Encoding", "Upgrade", "Content-Length", "Expect", "Hutch-Body-Len",
					 "Hutch-Body-Coding", HU_FWD_HEADER};

/* ---- the address of a node ----------------------------------------------------- */

struct peer {
	bool tls;
	char host[256];
	char port[8];
};

/* "http[s]://host[:port][/...]", host a name, an IPv4 or a [IPv6] literal. */
static int parse_address(const char *a, struct peer *p, hu_err *err)
{
	const char *h, *end;

	if (!strncmp(a, "http://", 7)) {
		p->tls = false;
		h = a + 7;
	} else if (!strncmp(a, "https://", 8)) {
		p->tls = true;
		h = a + 8;
	} else {
		return hu_err_set(err, -EINVAL, "node address '%.64s' is not an http:// or https:// URL", a);
	}
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end || (size_t)(end - h - 1) >= sizeof(p->host))
			return hu_err_set(err, -EINVAL, "node address '%.64s': bad IPv6 literal", a);
		memcpy(p->host, h + 1, (size_t)(end - h - 1));
		p->host[end - h - 1] = '\0';
		end++;
	} else {
		end = h + strcspn(h, ":/");
		if (end == h || (size_t)(end - h) >= sizeof(p->host))
			return hu_err_set(err, -EINVAL, "node address '%.64s': no host", a);
		memcpy(p->host, h, (size_t)(end - h));
		p->host[end - h] = '\0';
	}
	if (*end == ':') {
		size_t n = strspn(end + 1, "0123456789");
		if (n == 0 || n > 5 || (end[1 + n] && end[1 + n] != '/'))
			return hu_err_set(err, -EINVAL, "node address '%.64s': bad port", a);
		memcpy(p->port, end + 1, n);
		p->port[n] = '\0';
	} else if (!*end || *end == '/') {
		snprintf(p->port, sizeof(p->port), "%s", p->tls ? "443" : "80");
	} else {
		return hu_err_set(err, -EINVAL, "node address '%.64s': bad host", a);
	}
	return 0;
}

/* ---- the request as it goes to the node ------------------------------------------ */

static bool listed(const char *csv, const char *name)
{
	size_t n = strlen(name);
	for (const char *s = csv; *s;) {
		s += strspn(s, " \t,");
		size_t len = strcspn(s, " \t,");
		if (len == n && !strncasecmp(s, name, n))
			return true;
		s += len;
	}
	return false;
}

static bool passed(const char *name, const char *connection)
{
	for (size_t i = 0; i < sizeof(not_passed) / sizeof(not_passed[0]); i++)
		if (!strcasecmp(name, not_passed[i]))
			return false;
	/* what the client's Connection header names is for this hop only */
	return !connection || !listed(connection, name);
}

static int build_head(struct hu_forward *p, struct hu_req *r, const char *proof, hu_err *err)
{
	const struct evkeyvalq *hs = evhttp_request_get_input_headers(r->ev);
	const char *target = evhttp_request_get_uri(r->ev);
	const char *connection = evhttp_find_header(hs, "Connection");
	const char *upgrade = evhttp_find_header(hs, "Upgrade");
	int64_t length = hu_req_body_length(r);
	const struct evkeyval *h;

	if (strpbrk(target, "\r\n"))
		return hu_err_set(err, -EINVAL, "the request target holds CR or LF");
	p->two_way = upgrade && connection && listed(connection, "upgrade");
	evbuffer_add_printf(p->head, "%s %s HTTP/1.1\r\n", hu_http_method_name(r->method), target);
	TAILQ_FOREACH(h, hs, next) {
		if (!passed(h->key, connection))
			continue;
		if (strpbrk(h->key, "\r\n:") || strpbrk(h->value, "\r\n"))
			return hu_err_set(err, -EINVAL, "header %.64s holds CR or LF", h->key);
		evbuffer_add_printf(p->head, "%s: %s\r\n", h->key, h->value);
	}
	if (p->two_way) {
		if (strpbrk(upgrade, "\r\n"))
			return hu_err_set(err, -EINVAL, "header Upgrade holds CR or LF");
		evbuffer_add_printf(p->head, "Connection: Upgrade\r\nUpgrade: %s\r\n", upgrade);
	}
	/* otherwise HTTP/1.1's default: the connection is kept (forward_pool.h) */
	p->chunked_body = length < 0;
	if (length < 0)
		evbuffer_add_printf(p->head, "Transfer-Encoding: chunked\r\n");
	else if (length > 0 || r->method == EVHTTP_REQ_POST || r->method == EVHTTP_REQ_PUT ||
		 r->method == EVHTTP_REQ_PATCH)
		evbuffer_add_printf(p->head, "Content-Length: %lld\r\n", (long long)length);
	if (evbuffer_add_printf(p->head, "%s: %s\r\n\r\n", HU_FWD_HEADER, proof) < 0)
		return hu_err_set(err, ENOMEM, "forward the request");
	return 0;
}

/* ---- one forwarded call -------------------------------------------------------- */

static void end_reservation(struct hu_forward *p)
{
	hu_err err;

	if (!p->placement[0])
		return;
	if (hu_store_placement_done(p->c->d->store, p->placement, &err) < 0)
		hu_log(HU_LOG_WARN, NULL, p->req_id, "placement %s: %s (it expires by itself)", p->placement, err.msg);
	p->placement[0] = '\0';
}

/* Unlink and free p and what it still holds; its request must have been
 * answered (or handed to a stream or a relay) already. */
static void forward_free(struct hu_forward *p)
{
	struct hu_cluster *c = p->c;

	if (p->prev)
		p->prev->next = p->next;
	else
		c->fwd = p->next;
	if (p->next)
		p->next->prev = p->prev;
	end_reservation(p);
	hu_relay_free(p->relay);
	if (p->server)
		bufferevent_free(p->server);
	if (p->conn)
		hu_http_conn_close(p->conn);
	if (p->head)
		evbuffer_free(p->head);
	free(p);
}

/* Before the node's answer: the call is answered here, with an error. A
 * client body not read to its end closes the client's connection after it
 * (http/body.c). */
static void fail_request(struct hu_forward *p, int status, const char *why)
{
	struct hu_req *r = p->r;

	p->r = NULL;
	hu_log(HU_LOG_WARN, NULL, p->req_id, "forward to node %s: %d %s", p->node, status, why);
	if (r) {
		hu_req_body_detach(r);
		if (status == 503) {
			hu_reply_header(r, "Retry-After", "1");
			hu_reply_error(r, 503, "node %s, which serves this call, cannot be reached from this node: %s", p->node,
				       why);
		} else if (status == 400) { /* the client's body failed */
			hu_reply_error(r, 400, "request body: %s", why);
		} else {
			hu_reply_error(r, status, "node %s, which serves this call: %s", p->node, why);
		}
	}
	forward_free(p);
}

/* After the response started, a failure can only cut the client's
 * connection: a truncated body, never a short one that looks complete. */
static void cut(struct hu_forward *p, const char *why)
{
	hu_log(HU_LOG_WARN, NULL, p->req_id, "forward to node %s: response cut after %llu bytes: %s", p->node,
	       (unsigned long long)p->down_bytes, why);
	if (p->r && !p->body_over)
		hu_req_body_detach(p->r);
	hu_stream_abort(p->stream, why);
	p->stream = NULL;
	p->r = NULL;
	forward_free(p);
}

/* ---- the two-way relay (Upgrade) ------------------------------------------------ */

static void on_relay_done(struct hu_relay *rl, const char *why, void *arg)
{
	struct hu_forward *p = arg;
	uint64_t up, down;

	hu_relay_counts(rl, &up, &down);
	hu_log(HU_LOG_DEBUG, NULL, p->req_id, "forwarded to node %s: relay ended (%llu bytes in, %llu out)%s%s",
	       p->node, (unsigned long long)up, (unsigned long long)down, why ? ": " : "", why ? why : "");
	forward_free(p);
}

/* The HTTP server shuts down first: it frees the client's connection. */
static void on_conn_gone(void *arg)
{
	struct hu_forward *p = arg;
	p->conn = NULL;
	forward_free(p);
}

/* As ingress: a relay has no idle timeout, TCP keepalive finds a peer gone. */
static void keep_alive_probes(evutil_socket_t fd)
{
	int on = 1, idle = 60, intvl = 10, cnt = 6;
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* 101 Switching Protocols: the client's connection leaves HTTP for a
 * two-way relay with the node (neither connection is kept after it). */
static void start_relay(struct hu_forward *p, struct evbuffer *heads)
{
	struct hu_req *r = p->r;
	hu_err e;

	p->r = NULL;
	p->conn = hu_req_take_connection(r, on_conn_gone, p, &e);
	if (!p->conn) {
		hu_log(HU_LOG_DEBUG, NULL, p->req_id, "forward: %s", e.msg);
		forward_free(p);
		return;
	}
	struct bufferevent *client = hu_http_conn_bev(p->conn);
	keep_alive_probes(bufferevent_getfd(client));
	evbuffer_add_buffer(bufferevent_get_output(client), heads);
	p->relay = hu_relay_start(client, p->server, true, on_relay_done, p);
	if (!p->relay)
		forward_free(p);
}

/* ---- the response ------------------------------------------------------------- */

/* The response went out whole: the client's connection stays open for its
 * next request (the HTTP layer's keep-alive), and the node's goes back to
 * the pool when nothing of this call is left on it. */
static void response_done(struct hu_forward *p)
{
	hu_log(HU_LOG_DEBUG, NULL, p->req_id, "forwarded to node %s (%llu bytes in, %llu out)", p->node,
	       (unsigned long long)p->up_bytes, (unsigned long long)p->down_bytes);
	/* kept first: the client's next call may be on its way already */
	if (p->kept && p->body_over && p->resp.mode != HU_FRAMING_CLOSE &&
	    !evbuffer_get_length(bufferevent_get_input(p->server)) &&
	    !evbuffer_get_length(bufferevent_get_output(p->server))) {
		hu_fwd_pool_put(p->c, p->address, p->server);
		p->server = NULL;
	}
	if (p->r && !p->body_over)
		hu_req_body_detach(p->r);
	hu_stream_finish(p->stream);
	p->stream = NULL;
	p->r = NULL;
	forward_free(p);
}

/* Pass on what the node sent of the response body, decoded, in pieces of
 * up to HU_RELAY_LOW: the node's own chunks may be small (a compressed
 * stream's), and one chunk to the client per piece of its input would
 * multiply them. false: p is gone (the response ended, or was cut). */
static bool pump_response(struct hu_forward *p)
{
	struct evbuffer *in = bufferevent_get_input(p->server);
	hu_err err;

	while (!p->resp_paused) {
		struct evbuffer_iovec v[16];
		uint8_t batch[HU_RELAY_LOW];
		size_t have = 0, consumed = 0;
		int nv = evbuffer_peek(in, -1, NULL, v, 16);
		if (nv > 16)
			nv = 16;
		for (int i = 0; i < nv && !p->resp.done && have < sizeof(batch); i++) {
			size_t pos = 0;
			while (pos < v[i].iov_len && !p->resp.done && have < sizeof(batch)) {
				size_t used, off, len, room = sizeof(batch) - have;
				size_t n = v[i].iov_len - pos < room ? v[i].iov_len - pos : room;
				if (hu_framing_step(&p->resp, (const uint8_t *)v[i].iov_base + pos, n, &used, &off, &len, &err) < 0) {
					cut(p, err.msg);
					return false;
				}
				memcpy(batch + have, (const uint8_t *)v[i].iov_base + pos + off, len);
				have += len;
				pos += used;
				if (used == 0)
					break;
			}
			consumed += pos;
			if (pos < v[i].iov_len)
				break;
		}
		evbuffer_drain(in, consumed);
		if (have) {
			p->down_bytes += have;
			/* 1: on_resp_pause ran and stopped reading the node */
			if (hu_stream_send_bytes(p->stream, batch, have) < 0) {
				cut(p, "the client connection failed");
				return false;
			}
		}
		if (p->resp.done) {
			response_done(p);
			return false;
		}
		if (!consumed)
			return true; /* more bytes needed */
	}
	return true;
}

/* The node's connection ended (or failed) and what came before the end was
 * passed on: a response delimited by the close is complete, any other is
 * cut short. */
static void at_server_end(struct hu_forward *p)
{
	hu_err err;

	if (p->server_failed || hu_framing_eof(&p->resp, &err) < 0)
		cut(p, "the node closed the connection before the end of its response");
	else
		response_done(p);
}

static void on_resp_pause(void *arg)
{
	struct hu_forward *p = arg;
	p->resp_paused = true;
	bufferevent_disable(p->server, EV_READ);
}

static void on_resp_resume(void *arg)
{
	struct hu_forward *p = arg;
	p->resp_paused = false;
	if (!p->server_ended)
		bufferevent_enable(p->server, EV_READ);
	if (pump_response(p) && p->server_ended && !p->resp_paused)
		at_server_end(p);
}

/* The client left during the response: the rest of it is not read, so the
 * node's connection is not kept. */
static void on_client_gone(void *arg)
{
	struct hu_forward *p = arg;
	hu_log(HU_LOG_DEBUG, NULL, p->req_id, "forward to node %s: the client left after %llu bytes", p->node,
	       (unsigned long long)p->down_bytes);
	if (p->r && !p->body_over)
		hu_req_body_detach(p->r);
	hu_stream_finish(p->stream);
	p->stream = NULL;
	p->r = NULL;
	forward_free(p);
}

static void on_server_read(struct bufferevent *b, void *arg)
{
	pump_response(arg);
}

static void on_server_event(struct bufferevent *b, short what, void *arg)
{
	struct hu_forward *p = arg;

	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
		return;
	p->kept = false;
	p->server_ended = true;
	p->server_failed = (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) != 0;
	bufferevent_disable(b, EV_READ | EV_WRITE);
	/* a client behind: the rest goes as it drains (on_resp_resume) */
	if (pump_response(p) && !p->resp_paused)
		at_server_end(p);
}

/* The node's final head is in `heads`: pass the response on through the
 * HTTP layer (so that the client's connection is kept), its body decoded
 * from the node's framing and framed anew by evhttp for the client. */
static void start_response(struct hu_forward *p, struct evbuffer *heads)
{
	struct evkeyvalq h;
	struct evkeyval *kv;
	char reason[128];
	int status;
	hu_err err;

	TAILQ_INIT(&h);
	if (hu_response_fields(heads, &status, reason, sizeof(reason), &h, &err) < 0) {
		evhttp_clear_headers(&h);
		fail_request(p, 502, err.msg);
		return;
	}
	const char *te = evhttp_find_header(&h, "Transfer-Encoding");
	const char *cl = evhttp_find_header(&h, "Content-Length");
	const char *connection = evhttp_find_header(&h, "Connection");
	bool no_body = p->head_request || status == 204 || status == 304 || status < 200;
	size_t cl_digits = cl ? strspn(cl, "0123456789") : 0;
	if (no_body) {
		hu_framing_init(&p->resp, HU_FRAMING_LENGTH, 0, 0);
	} else if (te && strcasecmp(te, "chunked")) {
		evhttp_clear_headers(&h);
		fail_request(p, 502, "its Transfer-Encoding is not chunked");
		return;
	} else if (te) {
		hu_framing_init(&p->resp, HU_FRAMING_CHUNKED, 0, 0);
	} else if (cl && (cl_digits == 0 || cl[cl_digits] || cl_digits > 18)) {
		evhttp_clear_headers(&h);
		fail_request(p, 502, "its Content-Length is not a number");
		return;
	} else if (cl) {
		hu_framing_init(&p->resp, HU_FRAMING_LENGTH, strtoull(cl, NULL, 10), 0);
	} else {
		hu_framing_init(&p->resp, HU_FRAMING_CLOSE, 0, 0);
	}
	TAILQ_FOREACH(kv, &h, next) {
		/* a length stays when it is the body's (or a HEAD's) */
		bool keep_length = !strcasecmp(kv->key, "Content-Length") && !te && (no_body || cl);
		if (keep_length || passed(kv->key, connection))
			hu_reply_header(p->r, kv->key, kv->value);
	}
	evhttp_clear_headers(&h);
	/* the rest of a body the node answered before reading is not sent:
	 * its connection is not kept then (http/body.c closes the client's) */
	if (!p->body_over)
		p->kept = false;
	struct hu_stream_cbs cbs = {on_resp_pause, on_resp_resume, on_client_gone, p};
	p->stream = hu_stream_start_status(p->r, status, reason[0] ? reason : NULL, HU_RELAY_HIGH, &cbs);
	if (!p->stream) {
		fail_request(p, 500, "out of memory");
		return;
	}
	bufferevent_setcb(p->server, on_server_read, NULL, on_server_event, p);
	bufferevent_setwatermark(p->server, EV_READ, 0, HU_RELAY_HIGH);
	bufferevent_enable(p->server, EV_READ);
	pump_response(p);
}

static void send_request(struct hu_forward *p);
static int dial(struct hu_forward *p, hu_err *err);

/* A kept connection that the node had closed by the time the request went
 * out: an idempotent call without a body goes again, once, on a new one. */
static bool retry(struct hu_forward *p)
{
	hu_err err;

	if (!p->reused || p->retried || !p->replayable || !p->r)
		return false;
	p->retried = true;
	p->reused = false;
	bufferevent_free(p->server);
	p->server = NULL;
	hu_stat_add(HU_STAT_FORWARD_RETRIES, 1);
	hu_log(HU_LOG_DEBUG, NULL, p->req_id, "forward to node %s: a kept connection was closed, sent again", p->node);
	if (dial(p, &err) < 0)
		fail_request(p, 503, err.msg);
	return true;
}

/* The node's response head, read whole before any of it is passed on. */
static void on_head(struct bufferevent *b, void *arg)
{
	struct hu_forward *p = arg;
	struct evbuffer *heads = evbuffer_new();
	int status = 0;
	hu_err err;

	if (!heads) {
		fail_request(p, 500, "out of memory");
		return;
	}
	int rc = hu_response_head_conn(bufferevent_get_input(b), heads, &status, &p->kept, &err);
	if (rc == 0) {
		/* interim heads are not passed on; hu_response_head consumed them */
		evbuffer_free(heads);
		return;
	}
	/* the node has answered the create: its row is written, or it failed */
	end_reservation(p);
	if (rc < 0)
		fail_request(p, 502, err.msg);
	else if (status == 101 && p->two_way)
		start_relay(p, heads);
	else if (status == 101)
		fail_request(p, 502, "it switched protocols without being asked to");
	else
		start_response(p, heads);
	evbuffer_free(heads);
}

static void on_head_event(struct bufferevent *b, short what, void *arg)
{
	struct hu_forward *p = arg;

	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
		return;
	if (!evbuffer_get_length(bufferevent_get_input(b)) && retry(p))
		return;
	fail_request(p, 502, "it closed the connection without a response");
}

/* ---- the request body ----------------------------------------------------------- */

static int on_body_data(void *arg, const uint8_t *data, size_t len)
{
	struct hu_forward *p = arg;
	struct evbuffer *out = bufferevent_get_output(p->server);

	p->up_bytes += len;
	if (p->chunked_body)
		evbuffer_add_printf(out, "%zx\r\n", len);
	evbuffer_add(out, data, len);
	if (p->chunked_body)
		evbuffer_add(out, "\r\n", 2);
	if (evbuffer_get_length(out) >= HU_RELAY_HIGH) {
		p->body_paused = true;
		return 1; /* on_server_drained resumes it */
	}
	return 0;
}

static void on_body_end(void *arg, const hu_err *why)
{
	struct hu_forward *p = arg;

	if (why) {
		/* the node has part of a request: that connection is done */
		p->kept = false;
		if (p->stream)
			cut(p, why->msg);
		else
			fail_request(p, 400, why->msg);
		return;
	}
	p->body_over = true;
	if (p->chunked_body)
		evbuffer_add(bufferevent_get_output(p->server), "0\r\n\r\n", 5);
}

static void on_server_drained(struct bufferevent *b, void *arg)
{
	struct hu_forward *p = arg;
	if (p->body_paused && p->r) {
		p->body_paused = false;
		hu_req_body_resume(p->r);
	}
}

/* ---- the connection to the node ------------------------------------------------ */

/* The head goes out, then the client's body as it arrives. */
static void send_request(struct hu_forward *p)
{
	struct bufferevent *b = p->server;
	size_t n = evbuffer_get_length(p->head);
	unsigned char *head = evbuffer_pullup(p->head, -1);

	if (!head || evbuffer_add(bufferevent_get_output(b), head, n) < 0) {
		fail_request(p, 500, "out of memory");
		return;
	}
	bufferevent_setwatermark(b, EV_READ, 0, HU_RESPONSE_HEAD_MAX + 1);
	bufferevent_setwatermark(b, EV_WRITE, HU_RELAY_LOW, 0);
	bufferevent_setcb(b, on_head, on_server_drained, on_head_event, p);
	bufferevent_enable(b, EV_READ | EV_WRITE);
	if (p->body_started)
		return; /* a retry: the request had no body */
	p->body_started = true;
	struct hu_body_cbs cbs = {on_body_data, on_body_end, p};
	if (hu_req_body_stream(p->r, &cbs) < 0)
		fail_request(p, 400, "the client is gone");
}

static void on_connect_event(struct bufferevent *b, short what, void *arg)
{
	struct hu_forward *p = arg;
	char why[HU_ERR_MSG_MAX];
	int one = 1;

	if (!(what & BEV_EVENT_CONNECTED)) {
		/* libevent keeps the TLS errors of a connection with it */
		unsigned long tls_err = p->tls ? bufferevent_get_openssl_error(b) : 0;
		if (what & BEV_EVENT_TIMEOUT)
			snprintf(why, sizeof(why), "connecting timed out after %d ms", HU_FORWARD_CONNECT_MS);
		else if (tls_err)
			snprintf(why, sizeof(why), "TLS: %s", ERR_reason_error_string(tls_err));
		else
			snprintf(why, sizeof(why), "%s", evutil_socket_error_to_string(evutil_socket_geterror(
								   bufferevent_getfd(b))));
		ERR_clear_error();
		fail_request(p, 503, why);
		return;
	}
	bufferevent_set_timeouts(b, NULL, NULL);
	setsockopt(bufferevent_getfd(b), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* a response may take long (a create, a stream): a node gone without a
	 * FIN is found by TCP keepalive */
	keep_alive_probes(bufferevent_getfd(b));
	send_request(p);
}

static SSL_CTX *client_tls(struct hu_cluster *c, hu_err *err)
{
	if (c->tls)
		return c->tls;
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return hu_err_set(err, ENOMEM, "TLS to other nodes"), NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* evhttp closes a TLS connection without close_notify: that end is the
	 * end of the answer (HTTP's framing tells a cut one), not an error */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	const char *ca = c->d->cfg.cluster_ca;
	if (ca[0] ? SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 : SSL_CTX_set_default_verify_paths(ctx) != 1) {
		SSL_CTX_free(ctx);
		ERR_clear_error();
		return hu_err_set(err, -EINVAL, "TLS to other nodes: cannot load the CA certificates %s", ca[0] ? ca : "of the system"),
		       NULL;
	}
	c->tls = ctx;
	return ctx;
}

/* A TLS bufferevent that checks the node's certificate for its host. */
static struct bufferevent *tls_bev(struct hu_cluster *c, const struct peer *pe, hu_err *err)
{
	SSL_CTX *ctx = client_tls(c, err);
	SSL *ssl;
	struct bufferevent *b;

	if (!ctx || !(ssl = SSL_new(ctx)))
		return ctx ? (hu_err_set(err, ENOMEM, "TLS"), NULL) : NULL;
	X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
	if (X509_VERIFY_PARAM_set1_ip_asc(vp, pe->host) != 1) {
		ERR_clear_error();
		SSL_set_tlsext_host_name(ssl, pe->host);
		X509_VERIFY_PARAM_set1_host(vp, pe->host, 0);
	}
	b = bufferevent_openssl_socket_new(c->d->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
	if (!b) {
		SSL_free(ssl);
		return hu_err_set(err, ENOMEM, "TLS"), NULL;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(b, 1);
	return b;
}


static int dial(struct hu_forward *p, hu_err *err)
{
	struct hu_cluster *c = p->c;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	const struct timeval tv = {HU_FORWARD_CONNECT_MS / 1000, (HU_FORWARD_CONNECT_MS % 1000) * 1000};
	struct peer pe;
	int rc;

	if (parse_address(p->address, &pe, err) < 0)
		return -1;
	/* node.address is an IP address or a name /etc/hosts answers: this
	 * lookup does not leave the loop */
	if ((rc = getaddrinfo(pe.host, pe.port, &hints, &ai)) != 0)
		return hu_err_set(err, -EHOSTUNREACH, "resolve %.64s: %s", pe.host, gai_strerror(rc));
	p->tls = pe.tls;
	p->server = pe.tls ? tls_bev(c, &pe, err) : bufferevent_socket_new(c->d->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!p->server) {
		freeaddrinfo(ai);
		return pe.tls ? -1 : hu_err_set(err, ENOMEM, "forward");
	}
	bufferevent_setcb(p->server, NULL, NULL, on_connect_event, p);
	bufferevent_set_timeouts(p->server, &tv, &tv);
	rc = bufferevent_socket_connect(p->server, ai->ai_addr, (int)ai->ai_addrlen);
	freeaddrinfo(ai);
	if (rc < 0)
		return hu_err_set(err, -ECONNREFUSED, "connect to %.64s:%s", pe.host, pe.port);
	hu_stat_add(HU_STAT_FORWARD_DIALS, 1);
	return 0;
}

/* Idempotent methods (RFC 9110 9.2.2): sent twice, they do what once does. */
static bool idempotent(enum evhttp_cmd_type m)
{
	return m == EVHTTP_REQ_GET || m == EVHTTP_REQ_HEAD || m == EVHTTP_REQ_PUT || m == EVHTTP_REQ_DELETE ||
	       m == EVHTTP_REQ_OPTIONS;
}

void hu_cluster_forward(struct hu_req *r, const struct hu_node *to, const char *placement)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct hu_cluster *c = d->cluster;
	char proof[HU_FWD_VALUE_MAX];
	struct hu_forward *p;
	hu_err err;

	if (!c || !c->secret || !r->ev) {
		hu_reply_error(r, 421, "sandbox is on node %s: this node does not forward calls", to->name);
		return;
	}
	if (!(p = calloc(1, sizeof(*p))) || !(p->head = evbuffer_new())) {
		free(p);
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	p->c = c;
	p->req_id = r->id;
	snprintf(p->node, sizeof(p->node), "%s", to->name);
	snprintf(p->address, sizeof(p->address), "%s", to->address);
	snprintf(p->placement, sizeof(p->placement), "%s", placement ? placement : "");
	p->head_request = r->method == EVHTTP_REQ_HEAD;
	p->replayable = idempotent(r->method) && hu_req_body_length(r) == 0;
	p->next = c->fwd;
	if (p->next)
		p->next->prev = p;
	c->fwd = p;
	p->r = r;
	if (hu_fwd_sign(c->secret, c->secret_len, hu_http_method_name(r->method), evhttp_request_get_uri(r->ev),
			c->self.name, p->placement, hu_req_client(r), hu_wall_ms(), proof, sizeof(proof), &err) < 0 ||
	    build_head(p, r, proof, &err) < 0) {
		p->r = NULL;
		hu_reply_err(r, &err);
		forward_free(p);
		return;
	}
	/* an Upgrade takes its connection for good: a kept one would be lost */
	if (!p->two_way && (p->server = hu_fwd_pool_take(c, p->address))) {
		p->reused = true;
		p->tls = !strncmp(p->address, "https://", 8);
		hu_stat_add(HU_STAT_FORWARD_REUSES, 1);
		send_request(p);
		return;
	}
	if (dial(p, &err) < 0)
		fail_request(p, 503, err.msg);
}

void hu_cluster_forward_abort_all(struct hu_cluster *c)
{
	while (c->fwd) {
		struct hu_forward *p = c->fwd;
		if (p->stream)
			hu_stream_abort(p->stream, "the server is stopping");
		else if (p->r) /* its request is dropped with the server */
			hu_req_body_detach(p->r);
		p->stream = NULL;
		p->r = NULL;
		forward_free(p);
	}
	hu_fwd_pool_clear(c);
	if (c->tls) {
		SSL_CTX_free(c->tls);
		c->tls = NULL;
	}
}

void hu_cluster_forward_shutdown(struct hu_daemon *d)
{
	if (d->cluster)
		hu_cluster_forward_abort_all(d->cluster);
}

/* ---- the receiving side -------------------------------------------------------- */

int hu_cluster_accept_forwarded(struct hu_req *r, bool *forwarded)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct hu_cluster *c = d->cluster;
	const char *value = hu_req_header(r, HU_FWD_HEADER);
	struct hu_fwd_claim claim;
	const struct evkeyval *h;
	unsigned copies = 0;
	hu_err err;

	*forwarded = false;
	if (!value)
		return 0;
	struct evkeyvalq *hs = evhttp_request_get_input_headers(r->ev);
	TAILQ_FOREACH(h, hs, next)
		copies += !strcasecmp(h->key, HU_FWD_HEADER);
	if (!c || !c->secret) {
		hu_reply_error(r, 403, "%s: this node takes no forwarded calls (it has no cluster.secret)", HU_FWD_HEADER);
		return -1;
	}
	if (copies != 1) {
		hu_reply_error(r, 403, "%s: given %u times", HU_FWD_HEADER, copies);
		return -1;
	}
	if (hu_fwd_verify(c->secret, c->secret_len, hu_http_method_name(r->method), evhttp_request_get_uri(r->ev), value,
			  hu_wall_ms(), &claim, &err) < 0) {
		hu_log(HU_LOG_WARN, NULL, r->id, "refused a forwarded call: %s", err.msg);
		hu_reply_error(r, 403, "%s", err.msg);
		return -1;
	}
	/* the handlers never see it: nothing past here can pass it on */
	evhttp_remove_header(hs, HU_FWD_HEADER);
	*forwarded = true;
	/* the client is who the node got the call from, never the node */
	r->relayed = 1;
	snprintf(r->relayed_for, sizeof(r->relayed_for), "%s", claim.client);
	hu_log(HU_LOG_DEBUG, NULL, r->id, "forwarded by node %s for client %s", claim.node,
	       claim.client[0] ? claim.client : "(unknown)");
	return 0;
}

int hu_cluster_route_elsewhere(struct hu_req *r, const char *id, const char *team, bool forwarded)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct hu_cluster *c = d->cluster;
	struct hu_node owner;
	char owner_team[64];
	hu_err err;

	if (!c || !d->store)
		return 0;
	/* no forwarding here, or already forwarded once: say where it is */
	if (!c->secret || forwarded)
		return hu_sbx_answer_elsewhere(r, id, team);
	if (hu_store_sandbox_owner(d->store, id, owner_team, sizeof(owner_team), &owner, &err) < 0)
		return 0;
	if (team && strcmp(team, owner_team))
		return 0;
	if (!owner.alive)
		return hu_sbx_answer_elsewhere(r, id, team);
	hu_cluster_forward(r, &owner, "");
	return 1;
}
