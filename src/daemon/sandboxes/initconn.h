/*
 * An asynchronous connection to a sandbox's hutch-init, on the daemon's
 * event loop (bufferevent on the unix socket). Frames are parsed and handed
 * to a callback one at a time. A stream pauses reading (hu_initconn_pause)
 * when its HTTP client is slow: init's bounded queue then fills and init
 * stops reading the process's pipe, so backpressure reaches the process.
 * A sandbox that dies closes its init socket: every connection to it gets
 * the close callback promptly.
 */
#ifndef HUTCH_DAEMON_INITCONN_H
#define HUTCH_DAEMON_INITCONN_H

#include <event2/event.h>
#include <stdint.h>

#include "proto/initproto.h"
#include "util/err.h"

struct hu_initconn;

/* One complete, validated frame. `payload` is valid during the call only. */
typedef void (*hu_initconn_frame_cb)(struct hu_initconn *c, const struct hu_frame_hdr *hdr,
				     const uint8_t *payload, void *arg);
/* The connection ended (peer closed, protocol error, or I/O error). After
 * this callback the owner must call hu_initconn_free(). */
typedef void (*hu_initconn_close_cb)(struct hu_initconn *c, const hu_err *why, void *arg);

int hu_initconn_open(struct event_base *base, const char *sock_path, hu_initconn_frame_cb on_frame,
		     hu_initconn_close_cb on_close, void *arg, struct hu_initconn **out, hu_err *err);
/* Queue the encoded frames in b for sending (b is not consumed). */
int hu_initconn_send(struct hu_initconn *c, const struct hu_buf *b, hu_err *err);
void hu_initconn_pause(struct hu_initconn *c);
void hu_initconn_resume(struct hu_initconn *c);
/* A new request id, unique on this connection. */
uint32_t hu_initconn_next_id(struct hu_initconn *c);
void hu_initconn_free(struct hu_initconn *c);
/* A non-blocking, close-on-exec unix socket connected to init at sock_path
 * (EAGAIN when init's backlog is full), for callers that speak the protocol
 * themselves (port ingress receives descriptors, which a bufferevent drops). */
int hu_init_connect_unix(const char *sock_path, int *out, hu_err *err);

#endif
