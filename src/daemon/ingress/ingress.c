#include "daemon/ingress/ingress.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/http/server.h"
#include "daemon/ingress/dial.h"
#include "daemon/ingress/head.h"
#include "daemon/http/relay.h"
#include "daemon/http/response.h"

/* One proxied connection, from the dial to the end of its relay. */
struct proxied {
	struct hu_ingress *ig;
	struct proxied *prev, *next;
	char sbx_id[HU_ID_MAX];
	char team[64];
	uint16_t port;
	uint64_t req_id;
	struct hu_req *r;        /* while dialling: answered with a 502 on failure */
	struct hu_dial *dial;
	struct evbuffer *head;   /* head and body, sent once connected */
	bool two_way;
	struct hu_http_conn *conn;
	struct bufferevent *server;
	struct hu_relay *relay;
	bool streaming;          /* counted in its sandbox's open streams */
};

struct hu_ingress {
	struct hu_daemon *d;
	struct proxied *list;
};

static struct hu_ingress *ingress_of(struct hu_daemon *d)
{
	if (!d->ingress) {
		d->ingress = calloc(1, sizeof(*d->ingress));
		if (d->ingress)
			d->ingress->d = d;
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

/* Unlink and free p and everything it still holds. */
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

static void on_flushed(struct bufferevent *b, void *arg)
{
	struct proxied *p = arg;
	if (evbuffer_get_length(bufferevent_get_output(b)) == 0)
		proxied_free(p);
}

static void on_flush_event(struct bufferevent *b, short what, void *arg)
{
	proxied_free(arg);
}

/* After the takeover there is no evhttp to answer: a 502 is written as
 * bytes, then the connection closes once it is out. */
static void answer_raw_and_close(struct proxied *p, const char *msg)
{
	struct bufferevent *client = hu_http_conn_bev(p->conn);
	json_t *body = json_pack("{s:i, s:s, s:s, s:i}", "code", 502, "message", msg, "sandboxId", p->sbx_id, "port",
				 (int)p->port);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	const char *t = text ? text : "{\"code\":502}";

	json_decref(body);
	hu_log(HU_LOG_INFO, p->sbx_id, p->req_id, "port %u: 502 %s", (unsigned)p->port, msg);
	if (p->server) {
		bufferevent_free(p->server);
		p->server = NULL;
	}
	evbuffer_add_printf(bufferevent_get_output(client),
			    "HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			    "Connection: close\r\n\r\n%s",
			    strlen(t), t);
	free(text);
	bufferevent_setwatermark(client, EV_WRITE, 0, 0);
	bufferevent_setcb(client, NULL, on_flushed, on_flush_event, p);
	bufferevent_disable(client, EV_READ);
	bufferevent_enable(client, EV_WRITE);
}

/* The server's response head, read whole before any of it is relayed. */
static void on_head(struct bufferevent *b, void *arg)
{
	struct proxied *p = arg;
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
	p->relay = hu_relay_start(client, p->server, p->two_way && status == 101, on_relay_done, p);
	if (!p->relay)
		proxied_free(p);
}

static void on_head_event(struct bufferevent *b, short what, void *arg)
{
	struct proxied *p = arg;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		answer_raw_and_close(p, "the server closed the connection without a response");
}

static void on_dialled(int fd, const hu_err *err, void *arg)
{
	struct proxied *p = arg;
	struct hu_daemon *d = p->ig->d;
	struct hu_req *r = p->r;
	hu_err e;

	p->dial = NULL;
	if (fd < 0) {
		char msg[HU_ERR_MSG_MAX + 96];
		if (err->code == ECONNREFUSED)
			snprintf(msg, sizeof(msg), "nothing is listening on port %u in sandbox %s (%s)", (unsigned)p->port,
				 p->sbx_id, err->msg);
		else
			snprintf(msg, sizeof(msg), "cannot reach port %u in sandbox %s: %s", (unsigned)p->port, p->sbx_id,
				 err->msg);
		p->r = NULL;
		reply_port_error(r, 502, p->sbx_id, p->port, msg);
		proxied_free(p);
		return;
	}
	struct hu_sbx *s = d->reg ? hu_registry_get(d->reg, p->sbx_id) : NULL;
	p->server = bufferevent_socket_new(d->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!p->server) {
		close(fd);
		p->r = NULL;
		reply_port_error(r, 500, p->sbx_id, p->port, "out of memory");
		proxied_free(p);
		return;
	}
	if (!s || s->state != HU_SBX_RUNNING) {
		p->r = NULL;
		reply_port_error(r, 502, p->sbx_id, p->port, "the sandbox stopped while its port was being reached");
		proxied_free(p);
		return;
	}
	/* From here on the connection is bytes: r is answered by the server. */
	p->r = NULL;
	p->conn = hu_req_take_connection(r, on_conn_gone, p, &e);
	if (!p->conn) {
		hu_log(HU_LOG_DEBUG, p->sbx_id, p->req_id, "port %u: %s", (unsigned)p->port, e.msg);
		proxied_free(p);
		return;
	}
	if (evbuffer_add_buffer(bufferevent_get_output(p->server), p->head) < 0) {
		proxied_free(p);
		return;
	}
	/* the client waits for the response head: nothing of it is read yet */
	struct bufferevent *client = hu_http_conn_bev(p->conn);
	keep_alive_probes(bufferevent_getfd(client));
	bufferevent_disable(client, EV_READ);
	bufferevent_setcb(client, NULL, NULL, NULL, NULL);
	bufferevent_setwatermark(p->server, EV_READ, 0, HU_RESPONSE_HEAD_MAX + 1);
	bufferevent_setcb(p->server, on_head, NULL, on_head_event, p);
	bufferevent_enable(p->server, EV_READ | EV_WRITE);
	hu_sbx_stream_begin(s);
	p->streaming = true;
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
	const char *addr;
	uint16_t peer_port;
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

	struct evbuffer *body = evhttp_request_get_input_buffer(r->ev);
	hu_req_peer(r, &addr, &peer_port);
	struct hu_head_in in = {
		.method = hu_http_method_name(r->method),
		.target = evhttp_request_get_uri(r->ev),
		.headers = evhttp_request_get_input_headers(r->ev),
		.body_len = evbuffer_get_length(body),
		.body_expected = r->method == EVHTTP_REQ_POST || r->method == EVHTTP_REQ_PUT ||
				 r->method == EVHTTP_REQ_PATCH,
		.client_addr = addr,
		.proto = hu_req_scheme(r),
		.host = masked_host(s, port, mask, sizeof(mask)),
	};
	if (hu_head_build(&in, p->head, &p->two_way, &err) < 0) {
		reply_port_error(r, err.code == ENOMEM ? 500 : 400, s->id, port, err.msg);
		proxied_free(p);
		return;
	}
	if (evbuffer_add_buffer(p->head, body) < 0) {
		reply_port_error(r, 500, s->id, port, "out of memory");
		proxied_free(p);
		return;
	}
	if (hu_dial_port(d->base, hu_sbx_socket(s), port, HU_INGRESS_DIAL_MS, on_dialled, p, &p->dial, &err) < 0) {
		hu_err_prefix(&err, "port %u", (unsigned)port);
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
		if (p->r) { /* still dialling: its request is dropped with the server */
			p->r = NULL;
		}
		proxied_free(p);
	}
	free(d->ingress);
	d->ingress = NULL;
}
