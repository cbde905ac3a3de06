/*
 * Forwarding a call to the node that serves it (forward.h). A relayed call:
 * dial the node, send the rebuilt request, take the client's connection
 * over, check the node's response head, then relay bytes until either side
 * is done. A buffered call: take a kept connection to the node or dial one,
 * send the request, read the node's answer whole and answer the client
 * through the HTTP layer, then keep the node's connection for the next
 * call (forward_pool.h).
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
#include "daemon/http/framing.h"
#include "daemon/http/relay.h"
#include "daemon/http/response.h"
#include "daemon/http/server.h"
#include "daemon/sandboxes/elsewhere.h"
#include "util/clock.h"

struct hu_forward {
	struct hu_cluster *c;
	struct hu_forward *prev, *next;
	struct hu_req *r; /* until the connection is taken over, or the answer: answered on a failure */
	uint64_t req_id;
	char node[HU_NODE_NAME_MAX];
	char address[sizeof(((struct hu_node *)0)->address)];
	char placement[HU_PLACEMENT_ID_MAX];
	struct evbuffer *head; /* the request, sent once connected (kept while it may be sent again) */
	bool two_way;
	bool tls;        /* the node's address is https:// */
	bool buffered;   /* HU_FWD_BUFFERED: the answer is read whole, the client's connection stays */
	bool replayable; /* idempotent and bodiless: may go again, once, on a new connection */
	bool reused;     /* the connection to the node came from the pool */
	bool heard;      /* the node sent something back on it */
	bool kept;       /* the node keeps its connection after this answer */
	int status;      /* of the node's final head, once read */
	struct hu_framing resp; /* buffered: the answer's body framing */
	struct evbuffer *body;  /* buffered: the answer's body, decoded */
	struct bufferevent *server;
	struct hu_http_conn *conn;
	struct hu_relay *relay;
};

/* Hop-by-hop headers (RFC 9110 7.6.1) and what this node sets itself. */
static const char *const not_passed[] = {"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer",
					 "Transfer-Encoding", "Upgrade", "Content-Length", "Expect", HU_FWD_HEADER};

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
	struct evbuffer *body = evhttp_request_get_input_buffer(r->ev);
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
	} else if (!p->buffered) {
		/* one request per connection: the relay ends with the answer */
		evbuffer_add_printf(p->head, "Connection: close\r\n");
	}
	size_t n = evbuffer_get_length(body);
	if (n || r->method == EVHTTP_REQ_POST || r->method == EVHTTP_REQ_PUT || r->method == EVHTTP_REQ_PATCH)
		evbuffer_add_printf(p->head, "Content-Length: %zu\r\n", n);
	evbuffer_add_printf(p->head, "%s: %s\r\n\r\n", HU_FWD_HEADER, proof);
	if (evbuffer_add_buffer(p->head, body) < 0)
		return hu_err_set(err, ENOMEM, "forward the body");
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
	if (p->body)
		evbuffer_free(p->body);
	free(p);
}

/* Before the takeover: an answer through the HTTP layer. The node was not
 * reached (503, the client may retry), or it did not answer properly (502). */
static void fail_request(struct hu_forward *p, int status, const char *why)
{
	struct hu_req *r = p->r;

	p->r = NULL;
	hu_log(HU_LOG_WARN, NULL, p->req_id, "forward to node %s: %s", p->node, why);
	if (status == 503) {
		hu_reply_header(r, "Retry-After", "1");
		hu_reply_error(r, 503, "node %s, which serves this call, cannot be reached from this node: %s", p->node,
			       why);
	} else {
		hu_reply_error(r, status, "node %s, which serves this call: %s", p->node, why);
	}
	forward_free(p);
}

static void on_relay_done(struct hu_relay *rl, const char *why, void *arg)
{
	struct hu_forward *p = arg;
	uint64_t up, down;

	hu_relay_counts(rl, &up, &down);
	hu_log(HU_LOG_DEBUG, NULL, p->req_id, "forwarded to node %s: relay ended (%llu bytes in, %llu out)%s%s",
	       p->node, (unsigned long long)up, (unsigned long long)down, why ? ": " : "", why ? why : "");
	forward_free(p);
}

static void on_conn_gone(void *arg)
{
	struct hu_forward *p = arg;
	p->conn = NULL;
	forward_free(p);
}

static void on_flushed(struct bufferevent *b, void *arg)
{
	if (evbuffer_get_length(bufferevent_get_output(b)) == 0)
		forward_free(arg);
}

static void on_flush_event(struct bufferevent *b, short what, void *arg)
{
	forward_free(arg);
}

/* After the takeover there is no evhttp to answer: a 502 written as bytes,
 * then the connection closes once it is out. */
static void answer_raw_and_close(struct hu_forward *p, const char *why)
{
	struct bufferevent *client = hu_http_conn_bev(p->conn);
	char msg[HU_ERR_MSG_MAX + 128];
	json_t *body;
	char *text;

	snprintf(msg, sizeof(msg), "node %s, which serves this call: %s", p->node, why);
	body = json_pack("{s:i, s:s}", "code", 502, "message", msg);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	hu_log(HU_LOG_WARN, NULL, p->req_id, "forward: 502 %s", msg);
	end_reservation(p);
	if (p->server) {
		bufferevent_free(p->server);
		p->server = NULL;
	}
	evbuffer_add_printf(bufferevent_get_output(client),
			    "HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			    "Connection: close\r\n\r\n%s",
			    strlen(text ? text : "{\"code\":502}"), text ? text : "{\"code\":502}");
	free(text);
	bufferevent_setwatermark(client, EV_WRITE, 0, 0);
	bufferevent_setcb(client, NULL, on_flushed, on_flush_event, p);
	bufferevent_disable(client, EV_READ);
	bufferevent_enable(client, EV_WRITE);
}

static void on_head(struct bufferevent *b, void *arg)
{
	struct hu_forward *p = arg;
	struct bufferevent *client = hu_http_conn_bev(p->conn);
	int status = 0;
	hu_err err;

	int rc = hu_response_head(bufferevent_get_input(b), bufferevent_get_output(client), &status, &err);
	if (rc == 0)
		return;
	if (rc < 0) {
		answer_raw_and_close(p, err.msg);
		return;
	}
	/* the node has answered the create: its row is written, or it failed */
	end_reservation(p);
	p->relay = hu_relay_start(client, p->server, p->two_way && status == 101, on_relay_done, p);
	if (!p->relay)
		forward_free(p);
}

static void on_head_event(struct bufferevent *b, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		answer_raw_and_close(arg, "it closed the connection without a response");
}

/* ---- a buffered call ------------------------------------------------------------ */

/* The most of an answer a buffered call holds: the control plane's answers
 * are JSON of a few KiB (a list of every sandbox is read where the call
 * lands, never forwarded). */
#define HU_FWD_BUFFERED_MAX (16u << 20)

static int dial(struct hu_forward *p, hu_err *err);
static void send_buffered(struct hu_forward *p);
static void on_buffered_event(struct bufferevent *b, short what, void *arg);

/* The answer is whole: the client gets it through the HTTP layer, which
 * keeps the client's connection, and the node's connection goes back to the
 * pool when nothing of this call is left on it. */
static void answer_buffered(struct hu_forward *p)
{
	struct hu_req *r = p->r;
	struct bufferevent *b = p->server;

	if (p->kept && p->resp.mode != HU_FRAMING_CLOSE && !evbuffer_get_length(bufferevent_get_input(b)) &&
	    !evbuffer_get_length(bufferevent_get_output(b))) {
		hu_fwd_pool_put(p->c, p->address, b);
		p->server = NULL;
	}
	hu_log(HU_LOG_DEBUG, NULL, p->req_id, "forwarded to node %s: %d, %zu bytes%s", p->node, p->status,
	       evbuffer_get_length(p->body), p->reused ? " (kept connection)" : "");
	p->r = NULL;
	hu_reply_passed(r, p->status, p->body);
	hu_cluster_placed_later(p->c, p->placement);
	p->placement[0] = '\0';
	forward_free(p);
}

/* Move the body the node sent so far into p->body, decoded. 1: it is all
 * there; 0: more to come; -1: p was answered with an error and is gone. */
static int take_body(struct hu_forward *p)
{
	struct evbuffer *in = bufferevent_get_input(p->server);
	hu_err err;

	while (!p->resp.done) {
		struct evbuffer_iovec v;
		const uint8_t *bytes = NULL; /* sized and close-delimited bodies are not looked at */
		size_t used, off, len, avail = evbuffer_get_length(in);
		if (avail == 0)
			return 0;
		if (p->resp.mode == HU_FRAMING_CHUNKED) {
			if (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
				return 0;
			bytes = v.iov_base;
			avail = v.iov_len;
		}
		if (hu_framing_step(&p->resp, bytes, avail, &used, &off, &len, &err) < 0) {
			fail_request(p, 502, err.msg);
			return -1;
		}
		evbuffer_drain(in, off);
		if (len && evbuffer_remove_buffer(in, p->body, len) != (int)len) {
			fail_request(p, 500, "out of memory");
			return -1;
		}
		evbuffer_drain(in, used - off - len);
	}
	return 1;
}

static void on_buffered_body(struct bufferevent *b, void *arg)
{
	struct hu_forward *p = arg;

	if (take_body(p) == 1)
		answer_buffered(p);
}

/* The node's final head is in `heads`: its status and the headers that
 * are not hop-by-hop become the client's answer's, its body is read next. */
static void start_body(struct hu_forward *p, struct evbuffer *heads)
{
	struct evkeyvalq h;
	struct evkeyval *kv;
	char reason[128];
	hu_err err;

	TAILQ_INIT(&h);
	if (hu_response_fields(heads, &p->status, reason, sizeof(reason), &h, &err) < 0 ||
	    hu_response_framing(&h, p->status, p->r->method == EVHTTP_REQ_HEAD, HU_FWD_BUFFERED_MAX, &p->resp, &err) < 0) {
		evhttp_clear_headers(&h);
		fail_request(p, 502, err.msg);
		return;
	}
	const char *connection = evhttp_find_header(&h, "Connection");
	TAILQ_FOREACH(kv, &h, next)
		if (passed(kv->key, connection))
			hu_reply_header(p->r, kv->key, kv->value);
	evhttp_clear_headers(&h);
	bufferevent_setwatermark(p->server, EV_READ, 0, 0);
	bufferevent_setcb(p->server, on_buffered_body, NULL, on_buffered_event, p);
	on_buffered_body(p->server, p);
}

/* A kept connection that the node had closed by the time the request went
 * out: a call that does the same when sent twice and has no body goes
 * again, once, on a new connection. Any other is answered 502: it may have
 * been acted on. */
static bool retry(struct hu_forward *p)
{
	hu_err err;

	if (!p->reused || p->heard || !p->replayable)
		return false;
	p->reused = false; /* a dialled connection is never retried */
	bufferevent_free(p->server);
	p->server = NULL;
	hu_stat_add(HU_STAT_FORWARD_RETRIES, 1);
	hu_log(HU_LOG_DEBUG, NULL, p->req_id, "forward to node %s: its kept connection was closed, sent again", p->node);
	if (dial(p, &err) < 0)
		fail_request(p, 503, err.msg);
	return true;
}

static void on_buffered_event(struct bufferevent *b, short what, void *arg)
{
	struct hu_forward *p = arg;
	hu_err err;

	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
		return;
	if (p->status == 0 && retry(p))
		return;
	if (p->status == 0 && p->reused && !p->heard) {
		fail_request(p, 502, "it closed its kept connection as the call went out (a call with a body, or one "
				     "that is not idempotent, is never sent twice)");
		return;
	}
	if (p->status == 0) {
		fail_request(p, 502, "it closed the connection without an answer");
		return;
	}
	int rc = take_body(p);
	if (rc < 0)
		return;
	if (rc == 0 && ((what & BEV_EVENT_ERROR) || hu_framing_eof(&p->resp, &err) < 0)) {
		fail_request(p, 502, "it closed the connection before the end of its answer");
		return;
	}
	p->kept = false;
	answer_buffered(p);
}

/* The node's response head, read whole before any of it is used. */
static void on_buffered_head(struct bufferevent *b, void *arg)
{
	struct hu_forward *p = arg;
	struct evbuffer *heads = evbuffer_new();
	int status = 0;
	hu_err err;

	p->heard = true;
	if (!heads) {
		fail_request(p, 500, "out of memory");
		return;
	}
	/* the node has answered a create once a head is here (its row is
	 * written, or it failed): the reservation ends after the answer
	 * (answer_buffered), or with p on a failure */
	int rc = hu_response_head_conn(bufferevent_get_input(b), heads, &status, &p->kept, &err);
	if (rc < 0)
		fail_request(p, 502, err.msg);
	else if (rc > 0 && status == 101)
		fail_request(p, 502, "it switched protocols without being asked to");
	else if (rc > 0)
		start_body(p, heads);
	evbuffer_free(heads);
}

/* The request goes out on p->server (kept or just connected). Its head is
 * kept while it may be sent again (retry). */
static void send_buffered(struct hu_forward *p)
{
	struct bufferevent *b = p->server;
	struct evbuffer *out = bufferevent_get_output(b);
	size_t n = evbuffer_get_length(p->head);
	int rc;

	if (p->replayable && p->reused)
		rc = evbuffer_add(out, evbuffer_pullup(p->head, -1), n);
	else
		rc = evbuffer_add_buffer(out, p->head);
	if (rc < 0) {
		fail_request(p, 500, "out of memory");
		return;
	}
	bufferevent_setwatermark(b, EV_READ, 0, HU_RESPONSE_HEAD_MAX + 1);
	bufferevent_setwatermark(b, EV_WRITE, 0, 0);
	bufferevent_setcb(b, on_buffered_head, NULL, on_buffered_event, p);
	bufferevent_enable(b, EV_READ | EV_WRITE);
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

static void on_connect_event(struct bufferevent *b, short what, void *arg)
{
	struct hu_forward *p = arg;
	char why[HU_ERR_MSG_MAX];
	int one = 1;
	hu_err e;

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
	if (p->buffered) {
		/* an answer may take long (a create): a node gone without a FIN
		 * is found by TCP keepalive */
		keep_alive_probes(bufferevent_getfd(b));
		send_buffered(p);
		return;
	}
	p->conn = hu_req_take_connection(p->r, on_conn_gone, p, &e);
	p->r = NULL;
	if (!p->conn) {
		hu_log(HU_LOG_DEBUG, NULL, p->req_id, "forward: %s", e.msg);
		forward_free(p);
		return;
	}
	struct bufferevent *client = hu_http_conn_bev(p->conn);
	keep_alive_probes(bufferevent_getfd(client));
	bufferevent_disable(client, EV_READ);
	bufferevent_setcb(client, NULL, NULL, NULL, NULL);
	if (evbuffer_add_buffer(bufferevent_get_output(b), p->head) < 0) {
		answer_raw_and_close(p, "out of memory");
		return;
	}
	bufferevent_setwatermark(b, EV_READ, 0, HU_RESPONSE_HEAD_MAX + 1);
	bufferevent_setcb(b, on_head, NULL, on_head_event, p);
	bufferevent_enable(b, EV_READ | EV_WRITE);
}

SSL_CTX *hu_cluster_client_tls(struct hu_cluster *c, hu_err *err)
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
	SSL_CTX *ctx = hu_cluster_client_tls(c, err);
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

/* A call to forward, linked into the cluster's list; NULL out of memory. */
static struct hu_forward *forward_new(struct hu_cluster *c, struct hu_req *r, const struct hu_node *to,
				      const char *placement, enum hu_fwd_answer how)
{
	struct hu_forward *p = calloc(1, sizeof(*p));

	if (!p || !(p->head = evbuffer_new()) || (how == HU_FWD_BUFFERED && !(p->body = evbuffer_new()))) {
		if (p && p->head)
			evbuffer_free(p->head);
		free(p);
		return NULL;
	}
	p->c = c;
	p->req_id = r->id;
	snprintf(p->node, sizeof(p->node), "%s", to->name);
	snprintf(p->address, sizeof(p->address), "%s", to->address);
	snprintf(p->placement, sizeof(p->placement), "%s", placement ? placement : "");
	p->buffered = how == HU_FWD_BUFFERED;
	p->replayable = idempotent(r->method) && evbuffer_get_length(evhttp_request_get_input_buffer(r->ev)) == 0;
	p->next = c->fwd;
	if (p->next)
		p->next->prev = p;
	c->fwd = p;
	p->r = r;
	return p;
}

/* The request is built: a buffered call goes on a kept connection when
 * there is one, anything else on a new one. */
static void forward_send(struct hu_forward *p)
{
	hu_err err;

	/* an Upgrade takes its connection for good: it is never buffered */
	if (p->two_way)
		p->buffered = false;
	if (p->buffered && (p->server = hu_fwd_pool_take(p->c, p->address))) {
		p->reused = true;
		p->tls = !strncmp(p->address, "https://", 8);
		hu_stat_add(HU_STAT_FORWARD_REUSES, 1);
		send_buffered(p);
		return;
	}
	if (dial(p, &err) < 0)
		fail_request(p, 503, err.msg);
}

void hu_cluster_forward(struct hu_req *r, const struct hu_node *to, const char *placement, enum hu_fwd_answer how)
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
	if (!(p = forward_new(c, r, to, placement, how))) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	if (hu_fwd_sign(c->secret, c->secret_len, hu_http_method_name(r->method), evhttp_request_get_uri(r->ev),
			c->self.name, p->placement, hu_req_client(r), hu_wall_ms(), proof, sizeof(proof), &err) < 0 ||
	    build_head(p, r, proof, &err) < 0) {
		p->r = NULL;
		hu_reply_err(r, &err);
		forward_free(p);
		return;
	}
	forward_send(p);
}

void hu_cluster_forward_abort_all(struct hu_cluster *c)
{
	while (c->fwd) {
		struct hu_forward *p = c->fwd;
		if (p->r) /* still dialling: its request is dropped with the server */
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

int hu_cluster_route_elsewhere(struct hu_req *r, const char *id, const char *team, bool forwarded,
			       enum hu_fwd_answer how)
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
	hu_cluster_forward(r, &owner, "", how);
	return 1;
}
