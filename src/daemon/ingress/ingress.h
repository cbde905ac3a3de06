/*
 * Port ingress: a request for a port inside a sandbox (other than envd's)
 * is sent to that port, and from then on its connection is a byte relay.
 *
 * The request head is rebuilt from what evhttp parsed (method, target,
 * headers without the hop-by-hop ones, X-Forwarded-For/-Proto/-Host set)
 * with its body, which evhttp has read whole (max_body bounds it). A plain
 * request is sent with `Connection: close`, so the server's response, of any
 * framing (length, chunked, close-delimited, an endless event stream), is
 * relayed as bytes until the server closes; the client's connection then
 * closes too. An Upgrade (WebSocket) request keeps its Upgrade headers and
 * the connection becomes a two-way relay. An open relay counts as a stream
 * of its sandbox: the sandbox is not idle while it lasts.
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
