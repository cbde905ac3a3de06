/* A sandbox's network on the API side (sbx_network.h). */
#include <string.h>

#include "daemon/api_sandboxes.h"
#include "daemon/routes.h"
#include "daemon/sbx_network.h"
#include "daemon/store.h"
#include "runtime/net.h"

int hu_sbx_net_init(struct hu_daemon *d, const struct hu_new_sandbox *req, struct hu_sbx *s, hu_err *err)
{
	int nat = hu_runtime_net_mode(d->rt) == HU_NET_NAT;

	/* E2B's default is internet access; a host in mode none gives
	 * loopback only, and says so when the client asked explicitly */
	if (req->allow_internet == 1 && !nat)
		return hu_err_set(err, -EINVAL, "allow_internet_access: this server gives sandboxes no network "
						"(its network mode is none)");
	s->internet = nat && req->allow_internet != 0;
	s->has_network = req->has_network;
	s->net_rules = req->net;
	if (!s->internet && hu_net_rules_any(&req->net))
		return hu_err_set(err, -EINVAL, "network rules need internet access, which this sandbox does not have");
	return 0;
}

/* A list's IPv4 entries, then its IPv6 ones. */
static json_t *cidr_array(const struct hu_cidr4 *list, unsigned n, const struct hu_cidr6 *list6, unsigned n6)
{
	json_t *a = json_array();
	char buf[HU_CIDR6_TEXT];

	for (unsigned i = 0; a && i < n + n6; i++) {
		if (i < n)
			hu_cidr4_format(&list[i], buf, sizeof(buf));
		else
			hu_cidr6_format(&list6[i - n], buf, sizeof(buf));
		if (json_array_append_new(a, json_string(buf)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *hu_sbx_json_network(const struct hu_sbx *s)
{
	if (!s->has_network)
		return NULL;
	const struct hu_net_rules *r = &s->net_rules;
	json_t *allow = cidr_array(r->allow, r->n_allow, r->allow6, r->n_allow6);
	/* then the domain names, in their canonical form */
	for (unsigned i = 0; allow && i < r->n_allow_dom; i++)
		if (json_array_append_new(allow, json_string(hu_net_rules_domain(r, i))) < 0) {
			json_decref(allow);
			return NULL;
		}
	return json_pack("{s:o?, s:o?}", "allowOut", allow, "denyOut", cidr_array(r->deny, r->n_deny, r->deny6, r->n_deny6));
}

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
	if (rc < 0) {
		hu_reply_err(r, &err);
		return;
	}
	/* the veth is made with the sandbox; switching it on or off later is
	 * not supported */
	if (allow >= 0 && allow != s->internet) {
		hu_reply_error(r, 400, "allow_internet_access cannot be changed on a live sandbox (it is %s)",
			       s->internet ? "true" : "false");
		return;
	}
	if (!s->internet) {
		hu_reply_error(r, 400, "sandbox %s has no internet access: there are no rules to change", s->id);
		return;
	}
	/* a frozen sandbox keeps its namespace: its rules change all the same;
	 * one whose memory was released has none, and gets them at its resume */
	if (s->rt && !s->released && hu_net_update(r->d->rt, s->id, &rules, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	struct hu_net_rules old = s->net_rules;
	int had = s->has_network;
	s->net_rules = rules;
	s->has_network = 1;
	/* the store keeps the rules for restarts */
	if (hu_store_sandbox_put(r->d->store, s, &err) < 0) {
		s->net_rules = old;
		s->has_network = had;
		if (s->rt && !s->released) {
			hu_err ignored;
			hu_net_update(r->d->rt, s->id, &old, &ignored);
		}
		hu_reply_err(r, &err);
		return;
	}
	hu_reply_empty(r, 204);
}

static void take(char *dst, size_t cap, const char *v)
{
	if (v[0])
		snprintf(dst, cap, "%s", v);
}

void hu_daemon_net_config(const struct hu_config *cfg, struct hu_runtime_config *rc)
{
	take(rc->net_mode, sizeof(rc->net_mode), cfg->net_mode);
	take(rc->net_name, sizeof(rc->net_name), cfg->net_name);
	take(rc->net_pool, sizeof(rc->net_pool), cfg->net_pool);
	take(rc->net_pool6, sizeof(rc->net_pool6), cfg->net_pool6);
	take(rc->net_dns, sizeof(rc->net_dns), cfg->net_dns);
	take(rc->net_uplinks, sizeof(rc->net_uplinks), cfg->net_uplinks);
	take(rc->net_allow, sizeof(rc->net_allow), cfg->net_allow);
	take(rc->net_deny, sizeof(rc->net_deny), cfg->net_deny);
	take(rc->net_flows, sizeof(rc->net_flows), cfg->net_flows);
}
