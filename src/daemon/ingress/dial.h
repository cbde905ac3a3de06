/*
 * Dialling a port inside a sandbox: hutch-init connects 127.0.0.1:port in
 * the sandbox's network namespace and passes the socket back over a unix
 * connection of its own (PORT_CONNECT), so no route into the sandbox is
 * needed and loopback-only servers are reachable. Everything here is
 * asynchronous on the daemon's loop, and bounded by a timeout: a server with
 * a full backlog cannot hold a request forever.
 */
#ifndef HUTCH_DAEMON_INGRESS_DIAL_H
#define HUTCH_DAEMON_INGRESS_DIAL_H

#include <event2/event.h>
#include <stdint.h>

#include "util/err.h"

struct hu_dial;

/* fd >= 0: a connected, non-blocking TCP socket (the callee owns it); else
 * err says why (ECONNREFUSED: nothing listens; ETIMEDOUT). Called from the
 * loop, never from hu_dial_port itself; the dial is freed after it. */
typedef void (*hu_dial_cb)(int fd, const hu_err *err, void *arg);

int hu_dial_port(struct event_base *base, const char *init_sock, uint16_t port, unsigned timeout_ms, hu_dial_cb cb,
		 void *arg, struct hu_dial **out, hu_err *err);
/* Abandon a dial whose callback has not run yet (no callback then). */
void hu_dial_cancel(struct hu_dial *d);

#endif
