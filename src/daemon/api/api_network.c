/* PUT /sandboxes/{id}/network: new allowOut/denyOut rules for a live
 * sandbox (sandboxes/sbx_network.c applies them). */
#include "daemon/api/api_json.h"
#include "daemon/api/api_sandboxes.h"
#include "daemon/api/handlers.h"
#include "daemon/sandboxes/sbx_network.h"

void hu_api_put_network(struct hu_req *r)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	struct hu_net_rules rules;
	int allow, rc;
	json_t *body;
	hu_err err;

	if (!s || hu_req_json(r, &body) < 0)
		return;
	rc = hu_api_decode_network_update(body, &rules, &allow, &err);
	json_decref(body);
	if (rc < 0 || hu_sbx_set_network(hu_req_daemon(r), s, &rules, allow, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	hu_reply_empty(r, 204);
}
