/*
 * Port ingress: a request for a port inside a sandbox (other than envd's)
 * is sent to that port, on a kept keep-alive connection to it (idle.h) when
 * the request has no body or a small sized one (ingress.c: reuse_window),
 * else on a new one.
 *
 * The request head is rebuilt from what evhttp parsed (method, target,
 * headers without the hop-by-hop ones, X-Forwarded-For/-Proto/-Host set,
 * no Connection header, so keep-alive), and the body follows as the client sends it
 * (http/body.c streams it; sized bodies keep their length, chunked ones are
 * re-chunked), with flow control both ways. The server's response is decoded
 * from its framing and passed on through the HTTP layer's streams, so the
 * client's connection stays keep-alive and its next request is routed
 * afresh. An Upgrade (WebSocket) request that gets a 101 turns the client's
 * connection into a two-way relay (relay.c). An open request or relay counts
 * as a stream of its sandbox: the sandbox is not idle while it lasts.
 */
#ifndef HUTCH_DAEMON_INGRESS_INGRESS_H
#define HUTCH_DAEMON_INGRESS_INGRESS_H

#include <stdint.h>

#include "daemon/core/daemon.h"
#include "daemon/sandboxes/registry.h"

#define HU_ENVD_PORT 49983
#define HU_INGRESS_DIAL_MS 5000 /* init's answer and the TCP connect together */

struct hu_ingress;

/* Proxy r (authorised, for running sandbox s) to `port` inside s. Answers
 * r itself: 429 over a connection limit, 502 when nothing listens, else the
 * server's own response. */
void hu_ingress_handle(struct hu_req *r, struct hu_sbx *s, uint16_t port);
/* Connections proxied now, for one sandbox (NULL: all). */
unsigned hu_ingress_count(const struct hu_daemon *d, const char *sbx_id);
/* Shutdown, before the HTTP server closes: every dial and relay ends. */
void hu_ingress_free(struct hu_daemon *d);

#endif
