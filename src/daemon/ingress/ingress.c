#include "daemon/ingress/ingress.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "daemon/http/connect.h"
#include "daemon/http/framing.h"
#include "daemon/http/server.h"
#include "daemon/ingress/dial.h"
#include "daemon/ingress/head.h"
#include "daemon/ingress/idle.h"
#include "daemon/http/relay.h"
#include "daemon/http/response.h"
#include "daemon/http/splice.h"
#include "runtime/sandbox.h"

/* One proxied request, from the dial to the end of its response (or of
 * the relay it turned into). */
struct proxied {
	struct hu_ingress *ig;
	struct proxied *prev, *next;
	char sbx_id[HU_ID_MAX];
	char team[64];
	uint16_t port;
	uint64_t req_id;
	struct hu_req *r;        /* until the response is over (or the relay took the connection) */
	struct hu_dial *dial;
	struct evbuffer *head;   /* the request head, sent once connected */
	bool two_way;            /* an Upgrade request */
	bool chunked_body;       /* the body goes to the server chunked */
	bool body_over;          /* the request body was sent whole (or there was none) */
	bool body_paused;        /* the server's socket is full: the client's body waits */
	bool head_request;       /* HEAD: the response has no body whatever it says */
	bool no_body;            /* nothing to send after the head: it may be sent again */
	bool body_started;       /* the body is streamed to the server (once, whatever the connection) */
	bool reused;             /* the server connection was a kept one (idle.h) */
	bool heard;              /* the server sent something on it */
	bool server_keeps;       /* its response leaves the server's connection open */
	uint32_t pauses;         /* the sandbox's pause count when it was reached */
	struct hu_http_conn *conn; /* a relay's client connection (taken over) */
	struct bufferevent *server;
	struct hu_relay *relay;
	struct hu_stream *stream; /* the response being passed on */
	struct hu_framing resp;   /* its body's framing */
	bool resp_paused;
	struct hu_splice *splice; /* the body's rest, moved around the daemon's buffers */
	uint64_t up_bytes, down_bytes;
	bool streaming;          /* counted in its sandbox's open streams */
};

struct hu_ingress {
	struct hu_daemon *d;
	struct proxied *list;
	struct hu_idle_conns *idle; /* kept server connections (NULL: out of memory, none kept) */
	int host_netns; /* the daemon's network namespace, to return to after a dial (dial.h) */
};

static struct hu_ingress *ingress_of(struct hu_daemon *d)
{
	if (!d->ingress) {
		d->ingress = calloc(1, sizeof(*d->ingress));
		if (d->ingress) {
			d->ingress->d = d;
			d->ingress->idle = hu_idle_conns_new();
			/* without it, every dial goes through init */
			d->ingress->host_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		}
	}
	return d->ingress;
}

unsigned hu_ingress_count(const struct hu_daemon *d, const char *sbx_id)
{
	unsigned n = 0;
	if (!d->ingress)
		return 0;
	for (struct proxied *p = d->ingress->list; p; p = p->next)
		if (!sbx_id || !strcmp(p->sbx_id, sbx_id))
			n++;
	return n;
}

static unsigned count_team(const struct hu_ingress *ig, const char *team)
{
	unsigned n = 0;
	for (struct proxied *p = ig->list; p; p = p->next)
		if (!strcmp(p->team, team))
			n++;
	return n;
}

/* Unlink and free p and everything it still holds; its request must have
 * been answered (or handed to a stream or relay) already. */
static void proxied_free(struct proxied *p)
{
	struct hu_ingress *ig = p->ig;
	struct hu_daemon *d = ig->d;

	if (p->prev)
		p->prev->next = p->next;
	else
		ig->list = p->next;
	if (p->next)
		p->next->prev = p->prev;
	hu_dial_cancel(p->dial);
	hu_splice_free(p->splice);
	hu_relay_free(p->relay);
	if (p->server)
		bufferevent_free(p->server);
	if (p->conn)
		hu_http_conn_close(p->conn);
	if (p->head)
		evbuffer_free(p->head);
	if (p->streaming) {
		struct hu_sbx *s = d->reg ? hu_registry_get(d->reg, p->sbx_id) : NULL;
		if (s) { /* NULL once the sandbox is gone */
			hu_sbx_touch(s);
			hu_sbx_stream_end(s);
		}
	}
	free(p);
}

static void reply_port_error(struct hu_req *r, int status, const char *sbx_id, uint16_t port, const char *msg)
{
	json_t *body = json_object();
	if (body) {
		json_object_set_new(body, "code", json_integer(status));
		json_object_set_new(body, "message", hu_json_text(msg));
		json_object_set_new(body, "sandboxId", hu_json_text(sbx_id));
		json_object_set_new(body, "port", json_integer(port));
	}
	hu_reply_json(r, status, body);
}

/* The request is over before a response was passed on: answer it (an
 * error), stop taking its body, free p. */
static void fail_request(struct proxied *p, int status, const char *msg)
{
	struct hu_req *r = p->r;
	hu_log(HU_LOG_INFO, p->sbx_id, p->req_id, "port %u: %d %s", (unsigned)p->port, status, msg);
	p->r = NULL;
	if (r) {
		hu_req_body_detach(r);
		reply_port_error(r, status, p->sbx_id, p->port, msg);
	}
	proxied_free(p);
}

/* After the response started, a failure can only cut the client's
 * connection (a truncated body, never one that looks complete). */
static void stop_splice(struct proxied *p);

static void cut(struct proxied *p, const char *why)
{
	stop_splice(p); /* its events go before the sockets they watch */
	hu_log(HU_LOG_INFO, p->sbx_id, p->req_id, "port %u: response cut after %llu bytes: %s", (unsigned)p->port,
	       (unsigned long long)p->down_bytes, why);
	if (p->r)
		hu_req_body_detach(p->r);
	hu_stream_abort(p->stream, why);
	p->stream = NULL;
	p->r = NULL;
	proxied_free(p);
}

/* ---- the relay (Upgrade) ---------------------------------------------------------------- */

static void on_relay_done(struct hu_relay *rl, const char *why, void *arg)
{
	struct proxied *p = arg;
	uint64_t up, down;

	hu_relay_counts(rl, &up, &down);
	hu_log(HU_LOG_INFO, p->sbx_id, p->req_id, "port %u: relay ended (%llu bytes in, %llu out)%s%s",
	       (unsigned)p->port, (unsigned long long)up, (unsigned long long)down, why ? ": " : "", why ? why : "");
	proxied_free(p);
}

/* The HTTP server shuts down first: it frees the client connection. */
static void on_conn_gone(void *arg)
{
	struct proxied *p = arg;
	p->conn = NULL;
	proxied_free(p);
}

/* A relay has no idle timeout (a quiet WebSocket is fine), so a client that
 * vanished without a FIN (a dead host, a cut link) is found by TCP
 * keepalive instead: after 60 s of silence, 6 probes 10 s apart. */
static void keep_alive_probes(evutil_socket_t fd)
{
	int on = 1, idle = 60, intvl = 10, cnt = 6;
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* 101 Switching Protocols: the connection leaves HTTP for a two-way relay. */
static void start_relay(struct proxied *p, struct evbuffer *head)
{
	struct hu_req *r = p->r;
	hu_err e;

	p->r = NULL;
	p->conn = hu_req_take_connection(r, on_conn_gone, p, &e);
	if (!p->conn) {
		hu_log(HU_LOG_DEBUG, p->sbx_id, p->req_id, "port %u: %s", (unsigned)p->port, e.msg);
		proxied_free(p);
		return;
	}
	struct bufferevent *client = hu_http_conn_bev(p->conn);
	keep_alive_probes(bufferevent_getfd(client));
	evbuffer_add_buffer(bufferevent_get_output(client), head);
	p->relay = hu_relay_start(client, p->server, true, on_relay_done, p);
	if (!p->relay)
		proxied_free(p);
}

/* ---- the response ------------------------------------------------------------------------ */

/* The exchange on p->server is over: keep the connection for the next
 * request to the port when nothing of it is left over either way and the
 * server said it stays open. */
static void keep_server(struct proxied *p)
{
	struct hu_daemon *d = p->ig->d;
	struct hu_sbx *s = d->reg ? hu_registry_get(d->reg, p->sbx_id) : NULL;

	if (!p->server || !p->ig->idle || !p->server_keeps || p->resp.mode == HU_FRAMING_CLOSE || !p->body_over ||
	    !s || s->state != HU_SBX_RUNNING || s->pauses != p->pauses ||
	    evbuffer_get_length(bufferevent_get_input(p->server)) ||
	    evbuffer_get_length(bufferevent_get_output(p->server)))
		return;
	hu_idle_conns_put(p->ig->idle, p->sbx_id, p->pauses, p->port, p->server);
	p->server = NULL;
}

static void response_done(struct proxied *p)
{
	hu_log(HU_LOG_DEBUG, p->sbx_id, p->req_id, "port %u: response passed on (%llu bytes in, %llu out)",
	       (unsigned)p->port, (unsigned long long)p->up_bytes, (unsigned long long)p->down_bytes);
	if (p->r && !p->body_over)
		hu_req_body_detach(p->r); /* the connection closes after the reply (http/body.c) */
	hu_stream_finish(p->stream);
	p->stream = NULL;
	p->r = NULL;
	keep_server(p);
	proxied_free(p);
}

/* ---- the body's rest by splice (http/splice.h) ---------------------------------------- */

/* A sized body with at least this much to go, once nothing of it is
 * buffered, moves by splice: no copy through the daemon and 1 MiB steps.
 * Below it, the pipe's set-up is not worth it. */
#define SPLICE_MIN (256u << 10)

/* Stop the splice (if any) and count what it moved. */
static void stop_splice(struct proxied *p)
{
	if (!p->splice)
		return;
	uint64_t moved = hu_splice_moved(p->splice);
	p->down_bytes += moved;
	if (p->stream)
		hu_stream_bypassed(p->stream, moved);
	hu_splice_free(p->splice);
	p->splice = NULL;
}

static void on_splice_done(void *arg)
{
	struct proxied *p = arg;
	size_t used, off, len;
	hu_err err;

	/* the framing counts the body as passed on: done */
	hu_framing_step(&p->resp, NULL, (size_t)p->resp.left, &used, &off, &len, &err);
	stop_splice(p);
	response_done(p);
}

static void on_splice_fail(void *arg, bool from_source, const char *why)
{
	cut(arg, why);
}

/* Once the head (and any body bytes read with it) went to the stream and
 * the server's input is empty, a large sized body's rest is spliced from
 * the server's socket to the client's; anything else stays on the
 * buffered path. Returns 0 (p lives on either way). */
static int try_splice(struct proxied *p)
{
	struct evbuffer *queued;
	struct timeval write_tv;
	hu_err err;

	if (p->resp.mode != HU_FRAMING_LENGTH || p->resp.left < SPLICE_MIN || p->resp_paused)
		return 0;
	int to = hu_stream_bypass(p->stream, &queued, &write_tv);
	if (to < 0)
		return 0;
	struct hu_splice_cbs cbs = {on_splice_done, on_splice_fail, p};
	p->splice = hu_splice_start(p->ig->d->base, bufferevent_getfd(p->server), to, p->resp.left, queued, &write_tv,
				    &cbs, &err);
	if (!p->splice) {
		/* no pipe (descriptors ran out): the buffered path goes on */
		hu_log(HU_LOG_DEBUG, p->sbx_id, p->req_id, "port %u: no splice: %s", (unsigned)p->port, err.msg);
		hu_stream_bypass_end(p->stream);
		return 0;
	}
	bufferevent_disable(p->server, EV_READ);
	hu_log(HU_LOG_DEBUG, p->sbx_id, p->req_id, "port %u: the body's last %llu bytes go by splice", (unsigned)p->port,
	       (unsigned long long)p->resp.left);
	return 0;
}

/* Pass on what the server sent of the response body. -1: p is over (and
 * freed), else 0. */
static int pump_response(struct proxied *p)
{
	struct evbuffer *in = bufferevent_get_input(p->server);
	hu_err err;

	while (p->stream && !p->resp_paused && !p->splice) {
		struct evbuffer_iovec v;
		const uint8_t *bytes = NULL; /* sized and close-delimited bodies are not looked at */
		size_t used, off, len, avail = evbuffer_get_length(in);
		if (p->resp.done) {
			response_done(p);
			return -1;
		}
		if (avail == 0)
			return try_splice(p);
		if (p->resp.mode == HU_FRAMING_CHUNKED) {
			if (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
				return 0;
			bytes = v.iov_base;
			avail = v.iov_len;
		}
		int rc = hu_framing_step(&p->resp, bytes, avail, &used, &off, &len, &err);
		if (rc < 0) {
			cut(p, err.msg);
			return -1;
		}
		/* the body span leaves the buffer by moving, not copying, and
		 * the framing around it is dropped */
		int sent = 0;
		evbuffer_drain(in, off);
		if (len)
			sent = hu_stream_send_buffer(p->stream, in, len);
		evbuffer_drain(in, used - off - len);
		p->down_bytes += len;
		if (sent < 0) {
			cut(p, "the client connection failed");
			return -1;
		}
		/* sent == 1: on_resp_pause ran and disabled the server's reads */
	}
	return 0;
}

/* libevent reads at most 4 KiB a call. A body arriving faster than that is
 * read here in larger pieces, straight into the server's input buffer,
 * while the client keeps up; never past a sized body's end (the connection
 * may carry the next request). */
#define BODY_READ (128u << 10)
#define BODY_READS_PER_WAKE 4

static void on_server_event(struct bufferevent *b, short what, void *arg);

static void read_more(struct proxied *p)
{
	for (int i = 0; i < BODY_READS_PER_WAKE && p->stream && !p->resp_paused && !p->splice; i++) {
		struct evbuffer *in = bufferevent_get_input(p->server);
		struct evbuffer_iovec v[2];
		struct iovec iov[2];
		size_t want = BODY_READ;

		if (p->resp.mode == HU_FRAMING_LENGTH && p->resp.left < want)
			want = (size_t)p->resp.left;
		if (want < (16u << 10))
			return; /* a small rest: libevent's read does */
		int nv = evbuffer_reserve_space(in, (ev_ssize_t)want, v, 2);
		if (nv < 1)
			return;
		size_t room = 0;
		for (int j = 0; j < nv; j++) {
			if (v[j].iov_len > want - room)
				v[j].iov_len = want - room;
			room += v[j].iov_len;
			iov[j] = (struct iovec){v[j].iov_base, v[j].iov_len};
		}
		ssize_t n = readv(bufferevent_getfd(p->server), iov, nv);
		if (n <= 0) {
			int e = errno;
			evbuffer_commit_space(in, v, 0);
			if (n < 0 && (e == EAGAIN || e == EWOULDBLOCK || e == EINTR))
				return;
			on_server_event(p->server, BEV_EVENT_READING | (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR), p);
			return;
		}
		size_t left = (size_t)n;
		int used_vecs = 0;
		for (int j = 0; j < nv && left; j++, used_vecs++) {
			if (v[j].iov_len > left)
				v[j].iov_len = left;
			left -= v[j].iov_len;
		}
		evbuffer_commit_space(in, v, used_vecs);
		if (pump_response(p) < 0)
			return;
		if ((size_t)n < want)
			return; /* the socket is empty */
	}
}

static void on_resp_pause(void *arg)
{
	struct proxied *p = arg;
	p->resp_paused = true;
	bufferevent_disable(p->server, EV_READ);
}

static void on_resp_resume(void *arg)
{
	struct proxied *p = arg;
	p->resp_paused = false;
	bufferevent_enable(p->server, EV_READ);
	if (pump_response(p) == 0)
		read_more(p);
}

static void on_client_gone(void *arg)
{
	struct proxied *p = arg;
	stop_splice(p); /* counted, and off the client's socket before evhttp closes it */
	hu_log(HU_LOG_DEBUG, p->sbx_id, p->req_id, "port %u: the client left after %llu bytes", (unsigned)p->port,
	       (unsigned long long)p->down_bytes);
	hu_stream_finish(p->stream);
	p->stream = NULL;
	p->r = NULL;
	proxied_free(p);
}

static void on_server_read(struct bufferevent *b, void *arg)
{
	struct proxied *p = arg;
	if (pump_response(p) == 0)
		read_more(p);
}

static void on_server_event(struct bufferevent *b, short what, void *arg)
{
	struct proxied *p = arg;
	hu_err err;

	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if (pump_response(p) < 0) /* what came before the end */
		return;                /* done (or cut) with it */
	if (!p->stream)
		return;
	if ((what & BEV_EVENT_ERROR) || hu_framing_eof(&p->resp, &err) < 0) {
		cut(p, "the server closed the connection before the end of its response");
		return;
	}
	response_done(p); /* a response delimited by the close */
}

static bool hop_by_hop(const char *name, const char *connection)
{
	static const char *const names[] = {"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer",
					    "Transfer-Encoding", "Upgrade", "Content-Length"};
	size_t n = strlen(name);
	/* run for every header of every response: names of another length
	 * are not compared */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && !strcasecmp(name, names[i]))
			return true;
	if (!connection)
		return false;
	for (const char *c = connection; (c = strcasestr(c, name)); c += n)
		if ((c == connection || c[-1] == ',' || c[-1] == ' ') && (c[n] == '\0' || c[n] == ',' || c[n] == ' '))
			return true;
	return false;
}

/* Move the headers of h that go on to the client into r's reply headers;
 * the hop-by-hop ones stay in h (`connection` is the value of one of them).
 * evhttp frees the moved ones with the reply as it frees its own (same
 * allocator: evhttp_add_header made them), so none is copied. */
static void pass_headers(struct hu_req *r, struct evkeyvalq *h, const char *connection, bool length_stays)
{
	struct evkeyvalq *out = r->ev ? evhttp_request_get_output_headers(r->ev) : NULL;
	struct evkeyval *kv = TAILQ_FIRST(h);

	while (out && kv) {
		struct evkeyval *next = TAILQ_NEXT(kv, next);
		bool keep_length = length_stays && !strcasecmp(kv->key, "Content-Length");
		if (keep_length || !hop_by_hop(kv->key, connection)) {
			TAILQ_REMOVE(h, kv, next);
			TAILQ_INSERT_TAIL(out, kv, next);
		}
		kv = next;
	}
}

/* The server's final head is in `heads`: start passing the response on,
 * re-framed by evhttp for the client's connection (keep-alive, chunked
 * when its length is not known). */
static void start_response(struct proxied *p, struct evbuffer *heads)
{
	struct evkeyvalq h;
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
	if (hu_response_framing(&h, status, p->head_request, 0, &p->resp, &err) < 0) {
		evhttp_clear_headers(&h);
		fail_request(p, 502, err.msg);
		return;
	}
	/* a length stays when it is the body's (or a HEAD's) */
	pass_headers(p->r, &h, connection, !te && (no_body || cl));
	evhttp_clear_headers(&h);
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

/* The server's response head, read whole before any of it is passed on. */
static void on_head(struct bufferevent *b, void *arg)
{
	struct proxied *p = arg;
	/* the request's head is not sent again once the server answered
	 * (dial_again): its buffer holds the response's heads instead of a
	 * new one each request */
	struct evbuffer *heads = p->head;
	int status = 0;
	hu_err err;

	evbuffer_drain(heads, evbuffer_get_length(heads));
	p->heard = true;
	int rc = hu_response_head_conn(bufferevent_get_input(b), heads, &status, &p->server_keeps, &err);
	if (rc == 0)
		return; /* interim heads are not passed on; hu_response_head consumed them */
	if (rc < 0)
		fail_request(p, 502, err.msg);
	else if (status == 101 && p->two_way)
		start_relay(p, heads);
	else if (status == 101)
		fail_request(p, 502, "the server switched protocols without being asked to");
	else
		start_response(p, heads);
}

static int dial(struct proxied *p, struct hu_sbx *s, hu_err *err);

/* A kept connection the server closed as the request went out (its own
 * idle timeout ran out first): the request, which has nothing after its
 * head, goes again on a new connection, as nginx does. */
static void dial_again(struct proxied *p)
{
	struct hu_daemon *d = p->ig->d;
	struct hu_sbx *s = d->reg ? hu_registry_get(d->reg, p->sbx_id) : NULL;
	hu_err err;

	bufferevent_free(p->server);
	p->server = NULL;
	p->reused = false;
	if (!s || s->state != HU_SBX_RUNNING) {
		fail_request(p, 502, "the sandbox stopped while its port was being reached");
		return;
	}
	if (dial(p, s, &err) < 0)
		fail_request(p, 502, err.msg);
}

static void on_head_event(struct bufferevent *b, short what, void *arg)
{
	struct proxied *p = arg;
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if (p->reused && !p->heard && p->no_body)
		dial_again(p);
	else if (p->reused && !p->heard)
		fail_request(p, 502, "the server closed its kept connection as the request was sent (a request with a body "
				     "is not sent twice)");
	else
		fail_request(p, 502, "the server closed the connection without a response");
}

/* ---- the request body -------------------------------------------------------------------- */

static int on_body_data(void *arg, const uint8_t *data, size_t len)
{
	struct proxied *p = arg;
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
	struct proxied *p = arg;

	if (why) {
		/* the response may have started: then only a cut is left */
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
	struct proxied *p = arg;
	if (p->body_paused && p->r) {
		p->body_paused = false;
		hu_req_body_resume(p->r);
	}
}

static void send_request(struct proxied *p, struct hu_sbx *s, struct bufferevent *bev);

static void on_dialled(int fd, const hu_err *err, void *arg)
{
	struct proxied *p = arg;
	struct hu_daemon *d = p->ig->d;

	p->dial = NULL;
	if (fd < 0) {
		char msg[HU_ERR_MSG_MAX + 96];
		if (err->code == ECONNREFUSED)
			snprintf(msg, sizeof(msg), "nothing is listening on port %u in sandbox %s (%s)", (unsigned)p->port,
				 p->sbx_id, err->msg);
		else
			snprintf(msg, sizeof(msg), "cannot reach port %u in sandbox %s: %s", (unsigned)p->port, p->sbx_id,
				 err->msg);
		fail_request(p, 502, msg);
		return;
	}
	struct hu_sbx *s = d->reg ? hu_registry_get(d->reg, p->sbx_id) : NULL;
	struct bufferevent *bev = bufferevent_socket_new(d->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!bev) {
		close(fd);
		fail_request(p, 500, "out of memory");
		return;
	}
	if (!s || s->state != HU_SBX_RUNNING) {
		bufferevent_free(bev);
		fail_request(p, 502, "the sandbox stopped while its port was being reached");
		return;
	}
	send_request(p, s, bev);
}

/* Write what the socket takes of the head at once, when nothing is queued
 * before it: a request without a body then never waits for a write event,
 * which would cost two epoll_ctl calls (arm, disarm) a request. A failure
 * writes nothing here; the bufferevent meets it again and reports it. */
static size_t write_head_now(struct proxied *p, struct bufferevent *bev)
{
	struct evbuffer_iovec v[8];
	struct iovec iov[8];
	int nv = evbuffer_peek(p->head, -1, NULL, v, 8);

	if (evbuffer_get_length(bufferevent_get_output(bev)) || nv < 1 || nv > 8)
		return 0;
	for (int i = 0; i < nv; i++)
		iov[i] = (struct iovec){v[i].iov_base, v[i].iov_len};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)nv};
	ssize_t n = sendmsg(bufferevent_getfd(bev), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	return n > 0 ? (size_t)n : 0;
}

/* The request goes out on bev (a new connection, or a kept one). */
static void send_request(struct proxied *p, struct hu_sbx *s, struct bufferevent *bev)
{
	struct evbuffer *out = bufferevent_get_output(bev);
	size_t n = evbuffer_get_length(p->head);
	size_t sent = write_head_now(p, bev);
	int rc = 0;

	p->server = bev;
	/* a request that may have to go again keeps its head */
	if (p->no_body && sent < n)
		rc = evbuffer_add(out, (const char *)evbuffer_pullup(p->head, -1) + sent, n - sent);
	else if (!p->no_body) {
		evbuffer_drain(p->head, sent);
		rc = evbuffer_add_buffer(out, p->head);
	}
	if (rc < 0) {
		fail_request(p, 500, "out of memory");
		return;
	}
	bufferevent_setwatermark(bev, EV_READ, 0, HU_RESPONSE_HEAD_MAX + 1);
	bufferevent_setwatermark(bev, EV_WRITE, HU_RELAY_LOW, 0);
	bufferevent_setcb(bev, on_head, on_server_drained, on_head_event, p);
	/* enabling writes arms the write event even with nothing to write */
	bufferevent_enable(bev, p->no_body && sent == n ? EV_READ : EV_READ | EV_WRITE);
	if (!p->streaming) {
		hu_sbx_stream_begin(s);
		p->streaming = true;
	}
	if (p->body_started)
		return;
	p->body_started = true;
	if (p->no_body) {
		/* nothing to stream: no reader to start, and no loop pass for it
		 * to say that the body is over */
		p->body_over = true;
		return;
	}
	/* the body follows the head as the client sends it */
	struct hu_body_cbs cbs = {on_body_data, on_body_end, p};
	if (hu_req_body_stream(p->r, &cbs) < 0)
		fail_request(p, 400, "the client is gone");
}

/* A new connection to the port: on_dialled goes on. */
static int dial(struct proxied *p, struct hu_sbx *s, hu_err *err)
{
	struct hu_dial_target to = {
		.pidfd = s->rt ? hu_sandbox_pidfd(s->rt) : -1,
		.host_netns = p->ig->host_netns,
		.init_sock = hu_sbx_socket(s),
	};
	if (hu_dial_port(p->ig->d->base, &to, p->port, HU_INGRESS_DIAL_MS, on_dialled, p, &p->dial, err) < 0) {
		hu_err_prefix(err, "port %u", (unsigned)p->port);
		return -1;
	}
	return 0;
}

/* How long a kept connection (idle.h) may have been idle to carry this
 * request; 0: a new connection.
 *
 * A kept connection has one hazard: the server closes it (its own idle
 * timeout) just as the request goes out, and the request meets that close
 * instead of an answer. A request with nothing after its head is then sent
 * again on a new connection (dial_again), as nginx does; one with a body
 * never is, since its server may have acted on it. Yet a new connection per
 * POST costs a socket made in the sandbox's namespace, a connect, and the
 * server's accept (a new thread in a thread-per-connection server such as
 * the code interpreter's): most of what the ingress added to a
 * runCode('x += 1'), whose every cell is a small POST.
 *
 * So a request with a small sized body goes on a kept connection too: only
 * one idle for under HU_REUSE_BODY_IDLE_MS, far below the idle timeouts
 * servers use (2 s gunicorn, 5 s Node, uvicorn and Apache, none in Python's
 * http.server and Go), whose server did not say it closes (keep_server) and
 * whose close has not arrived unseen (idle.c looks before handing it out).
 * What is left is a close sent as the request travels: the client then gets
 * a 502 and the request is not sent again, as a client gets an error, not a
 * retry, on its own kept connection to a server. A body of unknown or large
 * size, which may take long to arrive, goes on a new connection; an upgrade
 * takes its connection for good.
 *
 * Pinning the server connection to the client's instead (a direct
 * connection's semantics) would need the HTTP layer to report each client
 * connection's end, and would hold a server connection, a thread in such
 * servers, for every idle client connection for the client's whole idle
 * timeout (60 s). */
#define HU_REUSE_BODY_MAX (64u << 10)
#define HU_REUSE_BODY_IDLE_MS 1000

static unsigned reuse_window(const struct proxied *p, int64_t body_length)
{
	if (p->two_way)
		return 0;
	if (p->no_body)
		return HU_IDLE_CONN_MS;
	return body_length > 0 && body_length <= HU_REUSE_BODY_MAX ? HU_REUSE_BODY_IDLE_MS : 0;
}

/* maskRequestHost with every "${PORT}" replaced by the port, or NULL. */
static const char *masked_host(const struct hu_sbx *s, uint16_t port, char *buf, size_t cap)
{
	const char *m = s->mask_host, *hit;
	size_t used = 0;

	if (!m[0])
		return NULL;
	while ((hit = strstr(m, "${PORT}"))) {
		used += (size_t)snprintf(buf + used, used < cap ? cap - used : 0, "%.*s%u", (int)(hit - m), m, (unsigned)port);
		m = hit + 7;
	}
	used += (size_t)snprintf(buf + used, used < cap ? cap - used : 0, "%s", m);
	return used < cap ? buf : NULL;
}

void hu_ingress_handle(struct hu_req *r, struct hu_sbx *s, uint16_t port)
{
	char mask[sizeof(s->mask_host) + 64];
	struct hu_daemon *d = hu_req_daemon(r);
	struct hu_ingress *ig = ingress_of(d);
	hu_err err;

	if (!ig) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	if (hu_ingress_count(d, s->id) >= d->cfg.ingress_max_per_sandbox) {
		reply_port_error(r, 429, s->id, port, "too many open connections to this sandbox's ports");
		return;
	}
	if (count_team(ig, s->team) >= d->cfg.ingress_max_per_team) {
		reply_port_error(r, 429, s->id, port, "too many open connections to this team's sandbox ports");
		return;
	}
	struct proxied *p = calloc(1, sizeof(*p));
	if (!p || !(p->head = evbuffer_new())) {
		free(p);
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	p->ig = ig;
	snprintf(p->sbx_id, sizeof(p->sbx_id), "%s", s->id);
	snprintf(p->team, sizeof(p->team), "%s", s->team);
	p->port = port;
	p->req_id = r->id;
	p->next = ig->list;
	if (p->next)
		p->next->prev = p;
	ig->list = p;

	int64_t body_length = hu_req_body_length(r);
	struct hu_head_in in = {
		.method = hu_http_method_name(r->method),
		.target = evhttp_request_get_uri(r->ev),
		.headers = evhttp_request_get_input_headers(r->ev),
		.body_length = body_length,
		.body_expected = r->method == EVHTTP_REQ_POST || r->method == EVHTTP_REQ_PUT ||
				 r->method == EVHTTP_REQ_PATCH,
		.client_addr = hu_req_client(r),
		.proto = hu_req_scheme(r),
		.host = masked_host(s, port, mask, sizeof(mask)),
	};
	p->chunked_body = body_length < 0;
	p->head_request = r->method == EVHTTP_REQ_HEAD;
	p->no_body = body_length == 0;
	p->pauses = s->pauses;
	if (hu_head_build(&in, p->head, &p->two_way, &err) < 0) {
		reply_port_error(r, err.code == ENOMEM ? 500 : 400, s->id, port, err.msg);
		proxied_free(p);
		return;
	}
	unsigned max_idle_ms = reuse_window(p, body_length);
	struct bufferevent *kept = max_idle_ms ? hu_idle_conns_take(ig->idle, s->id, s->pauses, port, max_idle_ms) : NULL;
	if (kept) {
		p->r = r;
		p->reused = true;
		send_request(p, s, kept); /* answers r itself if it fails */
		return;
	}
	if (dial(p, s, &err) < 0) {
		reply_port_error(r, 502, s->id, port, err.msg);
		proxied_free(p);
		return;
	}
	p->r = r;
}

void hu_ingress_free(struct hu_daemon *d)
{
	if (!d->ingress)
		return;
	while (d->ingress->list) {
		struct proxied *p = d->ingress->list;
		if (p->r) /* its request is dropped with the server */
			hu_req_body_detach(p->r);
		stop_splice(p);
		if (p->stream)
			hu_stream_abort(p->stream, "the server is stopping");
		p->stream = NULL;
		p->r = NULL;
		proxied_free(p);
	}
	hu_idle_conns_free(d->ingress->idle);
	if (d->ingress->host_netns >= 0)
		close(d->ingress->host_netns);
	free(d->ingress);
	d->ingress = NULL;
}
