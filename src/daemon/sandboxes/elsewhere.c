/* Sandboxes of other nodes (elsewhere.h). */
#include "daemon/sandboxes/elsewhere.h"

#include <inttypes.h>
#include <string.h>

#include "daemon/core/daemon.h"
#include "daemon/store/store.h"

int hu_sbx_answer_elsewhere(struct hu_req *r, const char *id, const char *team)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct hu_node owner;
	char owner_team[64];
	hu_err err;

	/* only a node of a cluster has other nodes to ask about */
	if (!d->cluster || !d->store || hu_store_sandbox_owner(d->store, id, owner_team, sizeof(owner_team), &owner,
							       &err) < 0)
		return 0;
	if (team && strcmp(team, owner_team))
		return 0;
	if (!owner.alive) {
		hu_reply_header(r, "Retry-After", "5");
		hu_reply_error(r, 503, "sandbox %.64s is on node %s, which is unavailable (its lease expired %" PRId64
			       " s ago)", id, owner.name, -owner.lease_left_ms / 1000);
		return 1;
	}
	if (team)
		hu_reply_error(r, 421, "sandbox %.64s is on node %s (%s): this node does not forward calls, send them"
			       " there", id, owner.name, owner.address);
	else
		hu_reply_error(r, 421, "sandbox %.64s is on node %s: this node does not forward calls", id, owner.name);
	return 1;
}
