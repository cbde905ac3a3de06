/*
 * This hutch serve as a node of a store that several nodes share
 * (PostgreSQL): it registers with its address, capacity and labels, and
 * renews a lease from the event loop. While its lease is live the store
 * writes its sandboxes as its own; a node whose lease expired writes
 * nothing and so admits no creates until it renews (store.h "nodes"). On
 * a store for one host (SQLite) there is no cluster and nothing here runs.
 */
#ifndef HUTCH_DAEMON_CLUSTER_NODE_H
#define HUTCH_DAEMON_CLUSTER_NODE_H

#include "daemon/core/daemon.h"
#include "util/err.h"

#define HU_LEASE_RENEW_MS 2000  /* a renewal every 2 s ... */
#define HU_LEASE_TTL_MS 10000   /* ... of a lease that lasts 10 s: four renewals may fail */

/* Register (before the sandboxes are adopted: the store loads this
 * node's rows only) and start renewing. 0 without doing anything when the
 * store has no nodes. */
int hu_cluster_start(struct hu_daemon *d, hu_err *err);
void hu_cluster_stop(struct hu_daemon *d);
/* This node's name, or NULL on one host. */
const char *hu_cluster_node_name(const struct hu_daemon *d);

#endif
