/* A sandbox's network on the API side (sbx_network.h). */
#include <string.h>

#include "daemon/sandboxes/net_rules_json.h"
#include "daemon/sandboxes/sbx_network.h"
#include "daemon/sandboxes/sbx_store.h"
#include "daemon/store/store.h"
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

json_t *hu_sbx_json_network(const struct hu_sbx *s)
{
	return s->has_network ? hu_net_rules_json(&s->net_rules) : NULL;
}


int hu_sbx_set_network(struct hu_daemon *d, struct hu_sbx *s, const struct hu_net_rules *rules, int allow_internet,
		       hu_err *err)
{
	/* the veth is made with the sandbox; switching it on or off later is
	 * not supported */
	if (allow_internet >= 0 && allow_internet != s->internet)
		return hu_err_set(err, -EINVAL, "allow_internet_access cannot be changed on a live sandbox (it is %s)",
				  s->internet ? "true" : "false");
	if (!s->internet)
		return hu_err_set(err, -EINVAL, "sandbox %s has no internet access: there are no rules to change", s->id);
	/* a frozen sandbox keeps its namespace: its rules change all the same;
	 * one whose memory was released has none, and gets them at its resume */
	if (s->rt && !s->released && hu_net_update(d->rt, s->id, rules, err) < 0)
		return -1;
	struct hu_net_rules old = s->net_rules;
	int had = s->has_network;
	s->net_rules = *rules;
	s->has_network = 1;
	/* the store keeps the rules for restarts */
	if (hu_sbx_store_put(d->store, s, err) < 0) {
		s->net_rules = old;
		s->has_network = had;
		if (s->rt && !s->released) {
			hu_err ignored;
			hu_net_update(d->rt, s->id, &old, &ignored);
		}
		return -1;
	}
	return 0;
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
