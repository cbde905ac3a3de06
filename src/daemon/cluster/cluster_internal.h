/* What the files of cluster/ share: this node, the calls it is forwarding
 * to other nodes (forward.c) and its idle connections to them
 * (forward_pool.c). */
#ifndef HUTCH_DAEMON_CLUSTER_CLUSTER_INTERNAL_H
#define HUTCH_DAEMON_CLUSTER_CLUSTER_INTERNAL_H

#include <event2/event.h>
#include <openssl/ssl.h>
#include <stddef.h>

#include "daemon/core/daemon.h"
#include "daemon/store/store.h"

struct hu_forward;
struct hu_fwd_idle;

struct hu_cluster {
	struct hu_daemon *d;
	struct hu_node self;
	struct event *renew;
	int failing;            /* the last renewal failed (logged once per outage) */
	const char *secret;     /* cluster.secret, NULL: no forwarding */
	size_t secret_len;
	SSL_CTX *tls;           /* for https:// nodes, made on first use */
	struct hu_forward *fwd; /* calls being forwarded */
	struct hu_fwd_idle *idle; /* kept connections to other nodes (forward_pool.h) */
};

/* End every forwarded call (at shutdown). */
void hu_cluster_forward_abort_all(struct hu_cluster *c);

#endif
