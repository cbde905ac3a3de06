/*
 * The HTTP server: one evhttp on the application's event loop, one
 * generic callback that assigns a request id, parses the request target
 * and hands the request to the application's dispatcher.
 *
 * Request ownership: struct hu_req is allocated here for each request and
 * freed when it was answered and its handler has returned, so synchronous
 * handlers may still read r after replying, and asynchronous ones may answer
 * from a later callback. Requests in flight are listed so that shutdown can
 * drop them without touching freed libevent state.
 */
#ifndef HUTCH_DAEMON_HTTP_SERVER_H
#define HUTCH_DAEMON_HTTP_SERVER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/http/request.h"
#include "util/err.h"

struct hu_http;

struct hu_http_settings {
	uint64_t max_body_bytes; /* 413 above it */
	uint32_t idle_timeout_s; /* idle connections close after it (0: 60) */
	/* an answer goes out before the next request is worked on: on a
	 * plain connection it is written as it is made (hu_reply_*, stream
	 * frames and ends), and the connections' writes, for what the socket
	 * did not take at once, are at priority 0, the loop's highest */
	bool answers_first;
};

/* What the application does with requests. */
struct hu_http_hooks {
	/* Every request, once its target is parsed: it must answer r (now or
	 * later), usually through a route table (route.h). */
	void (*dispatch)(struct hu_req *r);
	/* Once the head is read: true when r's body goes to its handler as a
	 * stream (request.h) rather than whole. May be NULL (never). */
	bool (*streams_body)(struct hu_req *r);
	/* A stream (connect.h) of a request with a target opened; the matching
	 * stream_closed gets the target's id, as the target may be gone by then.
	 * An open stream keeps its target busy. Either may be NULL. */
	void (*stream_opened)(struct hu_req *r);
	void (*stream_closed)(void *app, const char *target_id);
};

/* An event loop with `priorities` priorities on which answers_first works:
 * libevent runs every event made active at one priority before it polls
 * again, so this loop is told to poll after a millisecond of callbacks
 * below the highest; a write made ready meanwhile (priority 0: the rest of
 * an answer the socket did not take at once) then runs before the next of
 * them. NULL with err set on failure. */
struct event_base *hu_http_loop_new(int priorities, hu_err *err);

/* A server on base; r->app of every request is `app`. */
int hu_http_new(struct event_base *base, const struct hu_http_settings *set, const struct hu_http_hooks *hooks,
		void *app, struct hu_http **out, hu_err *err);
/* Listen on addr:port (numeric address). */
int hu_http_listen(struct hu_http *h, const char *addr, uint16_t port, hu_err *err);
/* Accept connections on fd, a listening non-blocking stream socket (owned
 * from here on, even on failure). */
int hu_http_listen_fd(struct hu_http *h, int fd, hu_err *err);
/* Shutdown, step 1: stop accepting and close every connection (streams get
 * on_gone; replies to requests still in flight are dropped). Step 2, once
 * what the requests point at is freed: hu_http_free. Both accept NULL. */
void hu_http_close(struct hu_http *h);
void hu_http_free(struct hu_http *h);

/* `target` is being freed: every request still in flight forgets it (its
 * r->target becomes NULL), so no late reply, log line or stream reads freed
 * memory. */
void hu_http_forget_target(struct hu_http *h, const void *target);

/* ---- taking a connection over ------------------------------------------ */
/* The connection r arrived on leaves HTTP for good, for a relay that speaks
 * raw bytes (port ingress): r counts as answered without a reply, and the
 * caller reads and writes the client through the returned bufferevent,
 * whose callbacks, timeouts and watermarks are its own from now on. Bytes
 * the client sent past r's body are already in its input buffer. If the
 * server shuts down first, `gone(arg)` is called and the connection is freed
 * with it; otherwise the caller releases it with hu_http_conn_close. */
struct hu_http_conn;
struct bufferevent;
struct hu_http_conn *hu_req_take_connection(struct hu_req *r, void (*gone)(void *arg), void *arg, hu_err *err);
struct bufferevent *hu_http_conn_bev(struct hu_http_conn *c);
void hu_http_conn_close(struct hu_http_conn *c);
/* "https" on a TLS listener, else "http". */
const char *hu_req_scheme(struct hu_req *r);
/* The client's address (numeric) and port, as evhttp recorded it. */
void hu_req_peer(struct hu_req *r, const char **addr, uint16_t *port);
/* The client's address: the connection's peer, or on a relayed call
 * (request.h) the address the relaying node vouched for ("": unknown).
 * Never a header the client sent. */
const char *hu_req_client(struct hu_req *r);

#endif
