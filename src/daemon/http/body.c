/*
 * Request bodies, read by the HTTP layer (request.h, "streamed request
 * bodies"; inconn.c says why evhttp never sees them).
 *
 * The body's bytes are taken from the connection's input as they arrive
 * and decoded from their framing (framing.c). A streamed body goes to its
 * consumer piece by piece: when the consumer pauses, nothing more is taken,
 * the input fills to HU_HTTP_INPUT_MAX and libevent stops reading the
 * socket, so TCP slows the client down; memory stays bounded whatever the
 * body's size. Any other body is collected into the request's input buffer
 * (at most max_body: 413) before its handler runs, as evhttp used to do.
 * While a body is read the connection's read callbacks are ours; evhttp
 * gets them back with its reply.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/http/server_internal.h"

/* nothing to pump now: the body is over, or its consumer is not taking */
static bool stopped(const struct hu_body *b)
{
	return b->done || (b->streamed && (!b->attached || b->paused));
}

static struct evbuffer *source(struct req_priv *p)
{
	if (p->body.buffered_source)
		return p->pub.ev ? evhttp_request_get_input_buffer(p->pub.ev) : NULL;
	return p->conn ? bufferevent_get_input(hu_inconn_bufferevent(p->conn)) : NULL;
}

static void park(struct req_priv *p)
{
	if (p->conn && !p->body.buffered_source)
		hu_inconn_own_reads(p->conn, NULL, NULL, NULL);
}

/* Close after the reply, which is all a client that sent a bad or unread
 * body can be told. */
static void close_after_reply(struct req_priv *p)
{
	if (p->pub.ev)
		evhttp_add_header(evhttp_request_get_output_headers(p->pub.ev), "Connection", "close");
}

static void finish(struct req_priv *p, const hu_err *err)
{
	struct hu_body *b = &p->body;

	b->done = true;
	park(p);
	if (err) {
		b->failed = true;
		b->failure = *err;
		/* what follows a body that failed is not a request: nothing more
		 * is read from this connection, whoever answers */
		close_after_reply(p);
	}
	if (!b->streamed) {
		if (err) {
			hu_reply_error(&p->pub, err->code == E2BIG ? 413 : 400, "request body: %s", err->msg);
			return;
		}
		b->ready(p);
		return;
	}
	if (b->attached && !b->end_told) {
		b->end_told = true;
		b->cbs.on_end(b->cbs.arg, err);
	}
}

static void pump(struct req_priv *p)
{
	struct hu_body *b = &p->body;
	struct hu_inconn *conn = p->conn;
	hu_err err;

	hu_req_hold(p);
	while (!stopped(b) && !p->answered_body) {
		if (b->fr.done) {
			finish(p, NULL);
			break;
		}
		struct evbuffer *in = source(p);
		struct evbuffer_iovec v;
		size_t used, off, len;

		if (!in || evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
			break;
		int rc = hu_framing_step(&b->fr, v.iov_base, v.iov_len, &used, &off, &len, &err);
		if (rc < 0) {
			finish(p, &err);
			break;
		}
		int pause = 0;
		if (len && b->streamed)
			pause = b->cbs.on_data(b->cbs.arg, (const uint8_t *)v.iov_base + off, len);
		else if (len && p->pub.ev)
			evbuffer_add(evhttp_request_get_input_buffer(p->pub.ev), (const uint8_t *)v.iov_base + off, len);
		/* the consumer may have cut the connection (its input is gone) */
		if (p->conn != conn && !b->buffered_source)
			break;
		evbuffer_drain(in, used);
		if (pause == 1)
			b->paused = true;
		if (rc == 1) {
			finish(p, NULL);
			break;
		}
	}
	hu_req_unhold(p);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
	pump(arg);
}

static void kick(struct req_priv *p)
{
	if (p->body.kick)
		event_active(p->body.kick, EV_TIMEOUT, 0);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct hu_inconn *c = arg;
	struct req_priv *p = hu_inconn_req(c);
	if (p && p->body.present && !p->body.done)
		pump(p); /* a paused or unclaimed body: the input fills, then reading stops */
	else
		bufferevent_disable(bev, EV_READ); /* the next request waits for this one's reply */
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct hu_inconn *c = arg;
	struct req_priv *p = hu_inconn_req(c);
	hu_err err;

	if (p && !p->body.done) {
		hu_req_hold(p);
		if ((what & BEV_EVENT_EOF) && !stopped(&p->body))
			pump(p); /* what came before the end */
		if (!p->body.done) {
			if (what & BEV_EVENT_TIMEOUT)
				hu_err_set(&err, -ETIMEDOUT, "the client sent nothing for too long");
			else if (hu_framing_eof(&p->body.fr, &err) == 0)
				hu_err_set(&err, -ECONNRESET, "the client connection failed");
			finish(p, &err);
		}
		hu_req_unhold(p);
	}
	/* evhttp learns about it too (and frees the connection) */
	hu_inconn_pass_event(c, what);
}

void hu_body_own_reads(struct req_priv *p)
{
	if (p->conn)
		hu_inconn_own_reads(p->conn, on_read, on_event, p->conn);
}

/* The body is wanted now: "100 Continue" if the client waits for one. */
static void take_reads(struct req_priv *p)
{
	struct hu_body *b = &p->body;

	if (b->buffered_source || !p->conn)
		return;
	const char *expect = p->pub.ev ? evhttp_find_header(evhttp_request_get_input_headers(p->pub.ev), "Expect") : NULL;
	if (expect && !strcasecmp(expect, "100-continue") && !b->continue_sent) {
		b->continue_sent = true;
		struct bufferevent *bev = hu_inconn_bufferevent(p->conn);
		evbuffer_add_printf(bufferevent_get_output(bev), "HTTP/1.1 100 Continue\r\n\r\n");
		bufferevent_enable(bev, EV_WRITE);
	}
}

static int make_kick(struct req_priv *p)
{
	if (!p->body.kick)
		p->body.kick = event_new(p->http->base, -1, 0, on_kick, p);
	return p->body.kick ? 0 : -1;
}

void hu_body_begin(struct req_priv *p, bool streamed, void (*ready)(struct req_priv *p))
{
	struct hu_body *b = &p->body;
	uint64_t max = p->http->set.max_body_bytes;

	b->streamed = streamed;
	b->ready = ready;
	hu_framing_init(&b->fr, b->length < 0 ? HU_FRAMING_CHUNKED : HU_FRAMING_LENGTH,
			b->length < 0 ? 0 : (uint64_t)b->length, streamed ? 0 : max);
	if (streamed) {
		ready(p); /* the handler asks for the body when it wants it */
		return;
	}
	if (b->length > 0 && (uint64_t)b->length > max) {
		close_after_reply(p);
		hu_reply_error(&p->pub, 413, "the request body (%lld bytes) is larger than %llu bytes", (long long)b->length,
			       (unsigned long long)max);
		b->done = true;
		return;
	}
	if (make_kick(p) < 0) {
		close_after_reply(p);
		hu_reply_error(&p->pub, 503, "out of memory");
		b->done = true;
		return;
	}
	take_reads(p);
	kick(p); /* bytes after the head may be in the input already */
}

int hu_req_body_stream(struct hu_req *r, const struct hu_body_cbs *cbs)
{
	struct req_priv *p = hu_req_priv(r);
	struct hu_body *b = &p->body;

	if (b->attached || b->end_told)
		return -1;
	if (b->failed || (!p->conn && !b->done))
		return -1; /* the client is gone */
	if (!b->streamed && b->present) {
		/* read whole already: hand over what the request holds */
		size_t n = r->ev ? evbuffer_get_length(evhttp_request_get_input_buffer(r->ev)) : 0;
		b->buffered_source = true;
		b->streamed = true;
		b->done = false;
		hu_framing_init(&b->fr, HU_FRAMING_LENGTH, n, 0);
	}
	b->cbs = *cbs;
	b->attached = true;
	b->streamed = true;
	if (!b->kick && !(b->kick = event_new(p->http->base, -1, 0, on_kick, p)))
		return -1;
	if (!b->present) {
		b->done = false; /* an empty body: on_end at once */
		hu_framing_init(&b->fr, HU_FRAMING_LENGTH, 0, 0);
	}
	take_reads(p);
	kick(p);
	return 0;
}

void hu_req_body_resume(struct hu_req *r)
{
	struct req_priv *p = hu_req_priv(r);
	if (!p->body.paused)
		return;
	p->body.paused = false;
	kick(p);
}

void hu_req_body_detach(struct hu_req *r)
{
	struct req_priv *p = hu_req_priv(r);
	p->body.attached = false;
	p->body.end_told = true;
	if (!p->body.done)
		park(p);
}

int64_t hu_req_body_length(struct hu_req *r)
{
	const struct hu_body *b = &hu_req_priv(r)->body;
	return b->present ? b->length : 0;
}

void hu_body_before_reply(struct req_priv *p)
{
	struct hu_body *b = &p->body;
	if (b->present && !b->done && !b->buffered_source) {
		close_after_reply(p);
		b->attached = false;
		b->end_told = true;
		b->done = true;
		park(p);
	}
	p->answered_body = true;
}

void hu_body_conn_gone(struct req_priv *p)
{
	struct hu_body *b = &p->body;
	hu_err err;

	/* freed with the connection unless evhttp detached it (server.c) */
	if (p->pub.ev && evhttp_request_get_connection(p->pub.ev))
		p->pub.ev = NULL;
	if (b->done || b->buffered_source)
		return;
	hu_err_set(&err, -ECONNRESET, "the client closed the connection before the body's end");
	b->done = true;
	b->failed = true;
	b->failure = err;
	if (b->streamed && b->attached && !b->end_told) {
		b->end_told = true;
		hu_req_hold(p);
		b->cbs.on_end(b->cbs.arg, &err);
		hu_req_unhold(p);
	} else if (!b->streamed) {
		hu_reply_error(&p->pub, 400, "%s", err.msg);
	}
}

void hu_body_free(struct req_priv *p)
{
	if (p->body.kick)
		event_free(p->body.kick);
	p->body.kick = NULL;
}
