/*
 * Idle connections to other nodes, kept for the next call forwarded to the
 * same node (forward.c, the calls whose answer it reads whole). Such a call
 * then costs one round trip on a kept connection instead of a TCP (and TLS)
 * handshake, the node's accept and a close on both sides first.
 *
 * A connection goes back to the pool only when its request went out whole
 * and its response was read to the end of its framing, with the node
 * keeping the connection (HTTP/1.1, no `Connection: close`): the next
 * request on it starts on a clean boundary. At most HU_FWD_POOL_PER_NODE
 * are kept per node; one idle for HU_FWD_POOL_IDLE_MS is closed, far
 * inside a node's own idle timeout, so that the node closing it under a
 * request on its way is rare (forward.c never sends a request twice unless
 * it is idempotent and has no body). One the node closes, or that receives
 * anything while idle, leaves the pool at once.
 */
#ifndef HUTCH_DAEMON_CLUSTER_FORWARD_POOL_H
#define HUTCH_DAEMON_CLUSTER_FORWARD_POOL_H

#include <event2/bufferevent.h>

#include "daemon/cluster/cluster_internal.h"

#define HU_FWD_POOL_PER_NODE 16
#define HU_FWD_POOL_IDLE_MS 1000

/* An idle connection to the node at `address` (its URL), its callbacks and
 * timeouts cleared, owned by the caller; NULL when none is kept. */
struct bufferevent *hu_fwd_pool_take(struct hu_cluster *c, const char *address);
/* Keep b (owned from here on, freed when it cannot be kept). */
void hu_fwd_pool_put(struct hu_cluster *c, const char *address, struct bufferevent *b);
/* Connections kept for `address` now. */
unsigned hu_fwd_pool_count(const struct hu_cluster *c, const char *address);
/* Close every kept connection (shutdown). */
void hu_fwd_pool_clear(struct hu_cluster *c);

#endif
