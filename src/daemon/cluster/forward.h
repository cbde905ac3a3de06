/*
 * Any node answers any call: a call for a sandbox that another live node
 * owns, and a create placed on another node, are forwarded to that node
 * (docs/operations.md "Several nodes"). The forwarding node sends the
 * client's request on as it came (its head rebuilt without the hop-by-hop
 * headers, its body, which the HTTP layer has read whole, after it), adds
 * its proof (forward_auth.h) and, once the owner answers, hands the
 * client's connection over to a byte relay (http/relay.h): the owner's
 * answer goes back unchanged and unbuffered, Connect server streams and
 * WebSockets (two-way after a 101) included. The owner authenticates the
 * client itself (API key, access token, traffic token): the proof only
 * says that a node of the cluster sent the call, so that the owner serves
 * it here and never forwards or places it again.
 *
 * A call whose answer is a sized reply (the control plane's) goes another
 * way instead (HU_FWD_BUFFERED): on a connection to the node kept from an
 * earlier call when there is one (forward_pool.h), with its answer read
 * whole and given to the client through the HTTP layer, so that the
 * client's connection stays open for its next call too. Streams, downloads
 * and WebSockets are relayed: they are never held whole in memory.
 *
 * A node without cluster.secret forwards nothing (421 naming the owner, as
 * before); an owner whose lease expired is answered 503 naming it.
 */
#ifndef HUTCH_DAEMON_CLUSTER_FORWARD_H
#define HUTCH_DAEMON_CLUSTER_FORWARD_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/core/daemon.h"
#include "daemon/http/request.h"
#include "daemon/store/store.h"

#define HU_FORWARD_CONNECT_MS 3000

/* How the owner's answer comes back: relayed as bytes on the client's
 * connection, taken over (then closed), or read whole here first. */
enum hu_fwd_answer {
	HU_FWD_RELAYED,  /* streams, downloads, WebSockets, a port's server */
	HU_FWD_BUFFERED, /* sized replies of a few KiB: the control plane's, a log read excepted */
};

/* A request that carries X-Hutch-Forwarded: 0 and *forwarded set when it
 * is absent or a valid proof (the header is removed then); -1 when r was
 * refused (403: a client cannot pass for a node). */
int hu_cluster_accept_forwarded(struct hu_req *r, bool *forwarded);

/* Sandbox id is not on this node: 1 when r was answered for another node
 * (forwarded to its live owner, `how` as for hu_cluster_forward, or
 * 503/421 as elsewhere.h says), 0 when no other node owns it. `team`: as
 * for hu_sbx_answer_elsewhere. A forwarded request is never forwarded
 * again. */
int hu_cluster_route_elsewhere(struct hu_req *r, const char *id, const char *team, bool forwarded,
			       enum hu_fwd_answer how);

/* POST /sandboxes on a node of a cluster, authenticated (cluster/place.c):
 * placement picks the node (a create that mounts a volume goes to the
 * volume's node, or is answered 503 saying why it cannot). 1 when r was
 * answered (forwarded to the chosen node, or an error) or is held while
 * its template is fetched (template_fetch.h: `create` then runs with it);
 * 0 when this node creates it now; then `placement` (cap
 * HU_PLACEMENT_ID_MAX) holds the reservation to end with
 * hu_cluster_placed once the create's row is written ("" for none). A
 * create that placement sent here (forwarded) is made here, its template
 * fetched first when it is missing. */
int hu_cluster_place(struct hu_req *r, bool forwarded, char *placement, hu_handler create);
void hu_cluster_placed(struct hu_daemon *d, const char *placement);

/* Forward r to node `to` (its address); placement: the reservation the
 * forwarding ends, or "". Answers r in every case. An Upgrade request is
 * relayed whatever `how` says. */
void hu_cluster_forward(struct hu_req *r, const struct hu_node *to, const char *placement, enum hu_fwd_answer how);

/* End the calls being forwarded (before the HTTP server closes: those not
 * yet answered hold their requests). */
void hu_cluster_forward_shutdown(struct hu_daemon *d);

#endif
