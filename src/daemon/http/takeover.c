/*
 * Taking a connection away from evhttp (server.h). libevent 2.1 has no call
 * that detaches a connection, but for a server connection it touches
 * nothing of it after the request callback returns (the request stays
 * queued on it in the "writing" state until a reply is sent, and none is).
 * So the connection keeps existing as an evhttp object that evhttp never
 * drives again: the new owner replaces its bufferevent's callbacks, and
 * evhttp_connection_free ends it (shutting down and closing the socket) when
 * the owner is done. A dup'd descriptor would not do: freeing the evhttp
 * connection shuts the socket down for every descriptor of it.
 */
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <stdlib.h>

#include "daemon/http/server_internal.h"

struct hu_http_conn {
	struct hu_http *http;
	struct evhttp_connection *evcon;
	void (*gone)(void *arg);
	void *arg;
	struct hu_http_conn *prev, *next;
};

struct hu_http_conn *hu_req_take_connection(struct hu_req *r, void (*gone)(void *arg), void *arg, hu_err *err)
{
	struct req_priv *p = hu_req_priv(r);
	struct evhttp_connection *evcon = r->ev ? evhttp_request_get_connection(r->ev) : NULL;
	struct hu_http_conn *c;

	if (!evcon) {
		hu_err_set(err, ENOTCONN, "the client is gone");
		return NULL;
	}
	if (!(c = calloc(1, sizeof(*c)))) {
		hu_err_set(err, ENOMEM, "take the connection over");
		return NULL;
	}
	c->http = p->http;
	c->evcon = evcon;
	c->gone = gone;
	c->arg = arg;
	c->next = p->http->taken;
	if (c->next)
		c->next->prev = c;
	p->http->taken = c;
	/* evhttp's close callback (if a stream set one) must not run for a
	 * connection it no longer serves, nor its bytes be scanned as heads */
	hu_inconn_set_closecb(p->http, evcon, NULL, NULL);
	if (p->conn)
		hu_inconn_taken(p->conn);
	struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
	bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
	bufferevent_set_timeouts(bev, NULL, NULL);
	r->ev = NULL; /* no reply, no header reads from here on */
	hu_req_finish(r);
	return c;
}

struct bufferevent *hu_http_conn_bev(struct hu_http_conn *c)
{
	return evhttp_connection_get_bufferevent(c->evcon);
}

static void unlink_conn(struct hu_http_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		c->http->taken = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

void hu_http_conn_close(struct hu_http_conn *c)
{
	if (!c)
		return;
	unlink_conn(c);
	evhttp_connection_free(c->evcon); /* frees the request still queued on it */
	free(c);
}

void hu_http_takeover_close_all(struct hu_http *h)
{
	while (h->taken) {
		struct hu_http_conn *c = h->taken;
		unlink_conn(c);
		c->gone(c->arg); /* evhttp_free frees the connection itself */
		free(c);
	}
}

const char *hu_req_scheme(struct hu_req *r)
{
	return hu_req_priv(r)->http->tls ? "https" : "http";
}

void hu_req_peer(struct hu_req *r, const char **addr, uint16_t *port)
{
	struct evhttp_connection *evcon = r->ev ? evhttp_request_get_connection(r->ev) : NULL;
	char *a = NULL;
	ev_uint16_t p = 0;

	if (evcon)
		evhttp_connection_get_peer(evcon, &a, &p);
	*addr = a ? a : "";
	*port = p;
}

const char *hu_req_client(struct hu_req *r)
{
	const char *addr;
	uint16_t port;

	if (r->relayed)
		return r->relayed_for;
	hu_req_peer(r, &addr, &port);
	return addr;
}
