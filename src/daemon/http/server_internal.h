/*
 * The server's private half (server.c), for the other files of the HTTP
 * layer: the request's hidden fields, the server, and the request ownership
 * calls that replies (reply.c) and streams (connect.c) make.
 */
#ifndef HUTCH_DAEMON_HTTP_SERVER_INTERNAL_H
#define HUTCH_DAEMON_HTTP_SERVER_INTERNAL_H

#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "daemon/http/framing.h"
#include "daemon/http/server.h"
#include "util/cleanup.h"

struct hu_stream;
struct hu_inconn;
struct req_priv;
struct bufferevent;
struct evhttp_connection;

/* A request head, whole, may not be larger than this: 431 (inconn.c). */
#define HU_HTTP_MAX_HEAD (64u << 10)
/* Bytes read ahead of the application on one connection (body.c). */
#define HU_HTTP_INPUT_MAX (128u << 10)

/* The body of a request: read by the HTTP layer itself (body.c), never by
 * evhttp, which is shown heads without framing headers (inconn.c). */
struct hu_body {
	bool present;            /* the head announced a body */
	bool streamed;           /* the application takes it piece by piece */
	bool done;               /* all of it was read (or it failed) */
	bool failed;
	bool continue_sent;      /* "100 Continue" went out */
	int64_t length;          /* Content-Length, or -1 for chunked */
	struct hu_framing fr;
	struct hu_body_cbs cbs;  /* streamed: who takes it */
	bool attached, paused;
	bool end_told;           /* cbs.on_end was called */
	bool buffered_source;    /* streamed from the request's input buffer (read whole before) */
	void (*ready)(struct req_priv *p); /* the handler may run */
	hu_err failure;
	struct event *kick;      /* pumps from the loop, never from inside a call */
};

struct req_priv {
	struct hu_req pub;       /* what handlers see */
	struct hu_http *http;    /* the server it arrived on */
	char *query_buf;         /* owns pub.query */
	struct evkeyvalq query_kv;
	struct timespec t0;
	int in_handler;          /* the dispatcher or a body callback is running: do not free yet */
	int answered;            /* the reply was sent (or the stream ended) */
	struct hu_stream *stream;
	void (*end_stream)(struct hu_stream *s); /* ends it when the server goes first */
	struct req_priv *prev, *next; /* http->inflight */
	struct hu_inconn *conn;  /* the connection it arrived on, while it lasts */
	struct hu_body body;
	bool answered_body;      /* a reply started: the body is no longer pumped */
};

struct hu_http {
	struct evhttp *ev;
	struct hu_http_settings set;
	struct hu_http_hooks hooks;
	void *app;
	uint64_t next_request_id;
	struct req_priv *inflight;
	struct hu_http_conn *taken; /* connections taken over (takeover.c) */
	int tls;                    /* connections are TLS (tls.c) */
	struct bufferevent *(*make_bev)(struct event_base *base, void *arg); /* TLS, or NULL: plain */
	void *make_bev_arg;
	/* every open connection's state by its socket (inconn.c): a request
	 * finds its connection without a scan */
	struct hu_inconn **conn_by_fd;
	size_t conn_slots;
	struct hu_inconn *conns; /* every connection's state, for freeing only (inconn.c) */
	struct event_base *base;
};

/* ---- connections (inconn.c) ------------------------------------------------ */
/* evhttp asks for each accepted connection's bufferevent here. */
struct bufferevent *hu_inconn_bev(struct event_base *base, void *arg);
/* The connection state of a request's connection, or NULL. O(1). */
struct hu_inconn *hu_inconn_of(struct hu_http *h, struct evhttp_request *ev);
/* Frees the table of connections, and the state of any connection evhttp_free
 * did not close (one whose set-up never ran). */
void hu_inconn_table_free(struct hu_http *h);
/* Replies and stream frames are small writes; with Nagle on, each one after
 * the first waits for the client's delayed ACK (40 ms on Linux). Sets
 * TCP_NODELAY on c's socket, once. */
void hu_inconn_no_delay(struct hu_inconn *c);
/* answers_first (server.h) on a plain connection: write what its socket
 * takes of the output queued on the connection whose socket is fd, now
 * rather than on the next poll. Nothing when no open connection has that
 * socket (the reply just queued closed it), or when the connection's
 * writes are not evhttp's (TLS, taken over, bypassed). The bufferevent's
 * write event stays armed: the rest, and evhttp's step after the reply,
 * follow from it. */
void hu_inconn_write_now(struct hu_http *h, int fd);
/* The request being served on c, or NULL. */
struct req_priv *hu_inconn_req(struct hu_inconn *c);
/* p is freed: c forgets it. */
void hu_inconn_forget_req(struct hu_inconn *c);
/* A request's head was handed to the application: its body (p->body) is
 * described from what the head said. -1: the head was bad (the status
 * and message to answer are in *status and msg). */
int hu_inconn_request(struct hu_inconn *c, struct req_priv *p, int *status, char *msg, size_t cap);
/* The request's connection closes: told once, instead of evhttp's close
 * callback (which the connection state keeps for itself). cb NULL clears. */
void hu_inconn_set_closecb(struct hu_http *h, struct evhttp_connection *evcon,
			   void (*cb)(struct evhttp_connection *, void *), void *arg);
/* The connection leaves HTTP (takeover.c): its bytes are no longer scanned. */
void hu_inconn_taken(struct hu_inconn *c);
struct bufferevent *hu_inconn_bufferevent(struct hu_inconn *c);
/* Read callbacks of the connection are the body reader's from now on (or
 * back to nobody's: NULL). */
void hu_inconn_own_reads(struct hu_inconn *c, bufferevent_data_cb read, bufferevent_event_cb event, void *arg);
/* Forward an event of the connection to evhttp (which may free it). */
void hu_inconn_pass_event(struct hu_inconn *c, short what);

/* ---- bodies (body.c) --------------------------------------------------------- */
/* After the head: read the body whole into the request's input buffer
 * (then call `ready`), or leave it for the application to stream. */
void hu_body_begin(struct req_priv *p, bool streamed, void (*ready)(struct req_priv *p));
/* A reply starts: a body not read to its end closes the connection after
 * it, since its rest would otherwise be read as the next request. */
void hu_body_before_reply(struct req_priv *p);
/* The connection is gone: a body still being read fails. */
void hu_body_conn_gone(struct req_priv *p);
/* The connection's reads are the body reader's from the head on (evhttp
 * must not read while a request is in the application's hands). */
void hu_body_own_reads(struct req_priv *p);
void hu_body_free(struct req_priv *p);

/* Shutdown: tell the owners of taken-over connections, before evhttp_free
 * frees those connections. */
void hu_http_takeover_close_all(struct hu_http *h);

static inline struct req_priv *hu_req_priv(struct hu_req *r)
{
	return HU_CONTAINER_OF(r, struct req_priv, pub);
}

/* Keep p alive across a callback that may answer it; unhold frees it if it
 * was answered meanwhile. */
void hu_req_hold(struct req_priv *p);
void hu_req_unhold(struct req_priv *p);
/* The request's answer is complete: r is freed once its dispatcher returned. */
void hu_req_finish(struct hu_req *r);
/* r is answered by stream s from now on; hu_http_free ends leftovers with
 * `end`. s NULL: the stream is over. */
void hu_req_set_stream(struct hu_req *r, struct hu_stream *s, void (*end)(struct hu_stream *s));
/* The server's idle timeout, which streams swap for a write timeout. */
struct timeval hu_req_idle_timeout(struct hu_req *r);

#endif
