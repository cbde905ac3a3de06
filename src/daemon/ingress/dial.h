/*
 * Dialling a port inside a sandbox: a TCP socket of the sandbox's network
 * namespace connects to 127.0.0.1:port there, so no route into the sandbox
 * is needed and loopback-only servers are reachable. The daemon makes that
 * socket itself (entering the namespace through init's pidfd for the one
 * socket() call); when it cannot, hutch-init connects and passes the socket
 * back over a unix connection of its own (PORT_CONNECT). Everything here is
 * asynchronous on the daemon's loop, and bounded by a timeout: a server with
 * a full backlog cannot hold a request forever.
 */
#ifndef HUTCH_DAEMON_INGRESS_DIAL_H
#define HUTCH_DAEMON_INGRESS_DIAL_H

#include <event2/event.h>
#include <stdint.h>

#include "util/err.h"

struct hu_dial;

/* Where a sandbox's ports are: init's pidfd and the daemon's own network
 * namespace (both -1: ask init only), and init's socket. */
struct hu_dial_target {
	int pidfd;
	int host_netns;
	const char *init_sock;
};

/* fd >= 0: a connected, non-blocking TCP socket (the callee owns it); else
 * err says why (ECONNREFUSED: nothing listens; ETIMEDOUT). Called from the
 * loop, never from hu_dial_port itself; the dial is freed after it. */
typedef void (*hu_dial_cb)(int fd, const hu_err *err, void *arg);

int hu_dial_port(struct event_base *base, const struct hu_dial_target *to, uint16_t port, unsigned timeout_ms,
		 hu_dial_cb cb, void *arg, struct hu_dial **out, hu_err *err);
/* Abandon a dial whose callback has not run yet (no callback then). */
void hu_dial_cancel(struct hu_dial *d);

#endif
