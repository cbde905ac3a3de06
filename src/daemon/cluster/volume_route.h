/*
 * Calls about a volume on a node of a cluster (docs/operations.md "Several
 * nodes"). A volume's files live on the disk of the node that made it
 * (store.h hu_volume.node): a call that touches them (DELETE
 * /volumes/{id}, whose mounts and files only that node can check and
 * remove) is forwarded there; reads (GET /volumes, GET /volumes/{id}) are
 * answered from the store by any node.
 */
#ifndef HUTCH_DAEMON_CLUSTER_VOLUME_ROUTE_H
#define HUTCH_DAEMON_CLUSTER_VOLUME_ROUTE_H

#include <stdbool.h>

#include "daemon/http/request.h"

/* The team's volume `key` (id or name) lives on another node: 1 when r was
 * answered for it (forwarded to that node; 503 with Retry-After naming it
 * while its lease is expired; 503 when it is no longer registered; an
 * error of the store), 0 when this node answers r (the volume is here, on
 * no node, not found, or r was forwarded here already). */
int hu_cluster_route_volume(struct hu_req *r, const char *key, const char *team, bool forwarded);

#endif
