/* Volume calls sent to the volume's node (volume_route.h). */
#include "daemon/cluster/volume_route.h"

#include <inttypes.h>
#include <string.h>

#include "daemon/cluster/cluster_internal.h"
#include "daemon/cluster/forward.h"

int hu_cluster_route_volume(struct hu_req *r, const char *key, const char *team, bool forwarded)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct hu_cluster *c = d->cluster;
	struct hu_volume v;
	struct hu_node node;
	hu_err err;
	int rc;

	/* without forwarding (no cluster.secret) every node acts on the row
	 * alone, as before; a forwarded call is never forwarded again */
	if (!c || !c->secret || !d->store || forwarded)
		return 0;
	if (hu_store_volume_find(d->store, team, key, &v, &err) < 0)
		return 0; /* not found (404) or the store failing: the handler answers as it would */
	if (!v.node[0] || !strcmp(v.node, c->self.name))
		return 0;
	if ((rc = hu_cluster_node_find(d, v.node, &node, &err)) < 0) {
		hu_err_prefix(&err, "volume '%s'", v.name);
		hu_reply_err(r, &err);
		return 1;
	}
	if (rc == 0) {
		hu_reply_error(r, 503, "volume '%s' lives on node %s, which is no longer registered", v.name, v.node);
		return 1;
	}
	if (!node.alive) {
		hu_reply_header(r, "Retry-After", "5");
		hu_reply_error(r, 503, "volume '%s' lives on node %s, which is unavailable (its lease expired %" PRId64
			       " s ago)", v.name, v.node, -node.lease_left_ms / 1000);
		return 1;
	}
	hu_cluster_forward(r, &node, "", HU_FWD_BUFFERED);
	return 1;
}
