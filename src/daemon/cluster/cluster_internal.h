/* What the files of cluster/ share: this node, the calls it is forwarding
 * to other nodes (forward.c) and its idle connections to them
 * (forward_pool.c). */
#ifndef HUTCH_DAEMON_CLUSTER_CLUSTER_INTERNAL_H
#define HUTCH_DAEMON_CLUSTER_CLUSTER_INTERNAL_H

#include <event2/event.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/core/daemon.h"
#include "daemon/store/store.h"

struct hu_forward;
struct hu_fwd_idle;
struct hu_placed_later;
struct hu_tpl_fetch;

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
	/* place.c: reservations to end once the loop has written the answers waiting */
	struct hu_placed_later *placed_later;
	struct event *placed_ender;
	/* template_fetch.c */
	struct hu_tpl_fetch *fetches;    /* in flight, one per template */
	struct hu_tpl_fetch *fetch_done; /* answered, freed by fetch_reaper from the loop */
	struct event *fetch_reaper;
	bool published;        /* the templates were recorded in the store ... */
	uint64_t published_fp; /* ... as they were then (template_fetch.c's fingerprint) */
};

/* node.c: the registered node `name` (lease state included) from the
 * store: 1 found, 0 not registered, -1 the store failed. */
int hu_cluster_node_find(struct hu_daemon *d, const char *name, struct hu_node *out, hu_err *err);

/* place.c: end the reservation `placement` ("" none) from the loop, after
 * the answers now queued are written: a forwarded create's answer does not
 * wait for the store. Out of memory it is ended now. */
void hu_cluster_placed_later(struct hu_cluster *c, const char *placement);
/* place.c: its event, made at start; at stop, the queued ones are ended */
int hu_cluster_place_init(struct hu_cluster *c, hu_err *err);
void hu_cluster_place_stop(struct hu_cluster *c);

/* template_fetch.c: its event, made at start */
int hu_cluster_template_fetch_init(struct hu_cluster *c, hu_err *err);

/* End every forwarded call (at shutdown). */
void hu_cluster_forward_abort_all(struct hu_cluster *c);
/* forward.c: the TLS client context for https:// nodes, made on first use
 * (cluster.ca or the system's CAs), shared by forwarding and template fetches */
SSL_CTX *hu_cluster_client_tls(struct hu_cluster *c, hu_err *err);

#endif
