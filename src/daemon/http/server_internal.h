/*
 * The server's private half (server.c), for the other files of the HTTP
 * layer: the request's hidden fields, the server, and the request ownership
 * calls that replies (reply.c) and streams (connect.c) make.
 */
#ifndef HUTCH_DAEMON_HTTP_SERVER_INTERNAL_H
#define HUTCH_DAEMON_HTTP_SERVER_INTERNAL_H

#include <event2/keyvalq_struct.h>
#include <stddef.h>
#include <time.h>

#include "daemon/http/server.h"
#include "util/cleanup.h"

struct hu_stream;

struct req_priv {
	struct hu_req pub;       /* what handlers see */
	struct hu_http *http;    /* the server it arrived on */
	char *query_buf;         /* owns pub.query */
	struct evkeyvalq query_kv;
	struct timespec t0;
	int in_handler;          /* the dispatcher is running: do not free yet */
	int answered;            /* the reply was sent (or the stream ended) */
	struct hu_stream *stream;
	void (*end_stream)(struct hu_stream *s); /* ends it when the server goes first */
	struct req_priv *prev, *next; /* http->inflight */
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
};

/* Shutdown: tell the owners of taken-over connections, before evhttp_free
 * frees those connections. */
void hu_http_takeover_close_all(struct hu_http *h);

static inline struct req_priv *hu_req_priv(struct hu_req *r)
{
	return HU_CONTAINER_OF(r, struct req_priv, pub);
}

/* The request's answer is complete: r is freed once its dispatcher returned. */
void hu_req_finish(struct hu_req *r);
/* r is answered by stream s from now on; hu_http_free ends leftovers with
 * `end`. s NULL: the stream is over. */
void hu_req_set_stream(struct hu_req *r, struct hu_stream *s, void (*end)(struct hu_stream *s));
/* The server's idle timeout, which streams swap for a write timeout. */
struct timeval hu_req_idle_timeout(struct hu_req *r);

#endif
