/*
 * IPv6 for sandboxes: decided as `hutch serve` decides it at start, from the
 * configuration it would read (a pool, an IPv6 way out, a way to forward).
 * It reads routes and /proc/sys and never writes; IPv4 only is a warning.
 */
#include <net/if.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/doctor/doctor.h"
#include "daemon/core/config.h"
#include "daemon/sandboxes/sbx_network.h"
#include "runtime/net.h"
#include "runtime/net6.h"
#include "runtime/netlink.h"
#include "runtime/sandbox.h"

/* The host's IPv6 way out: the configured uplinks, else the interface of
 * the IPv6 default route ("" when there is none). */
static void ipv6_way_out(const struct hu_net_config *net, struct doctor_result *r, char ifname[IF_NAMESIZE])
{
	struct hu_nl nl;
	hu_err err;
	int index;

	ifname[0] = '\0';
	if (net->n_uplinks) {
		snprintf(ifname, IF_NAMESIZE, "%s", net->uplinks[0]);
		doctor_found(r, "network_uplink %s%s", net->uplinks[0], net->n_uplinks > 1 ? " (and more)" : "");
		return;
	}
	if (hu_nl_open(&nl, &err) < 0) {
		doctor_found(r, "routes: %s", err.msg);
		return;
	}
	if (hu_nl_default_oif6(&nl, &index, &err) == 0 && if_indextoname((unsigned)index, ifname))
		doctor_found(r, "IPv6 default route via %s", ifname);
	else
		doctor_found(r, "no IPv6 default route");
	hu_nl_close(&nl);
}

/* The network configuration `hutch serve` would start with: its config
 * file (or none), then the daemon's own translation into a runtime network
 * configuration. -1 when the daemon would refuse it (the finding says why). */
static int ipv6_net_config(const struct doctor_ctx *cx, struct hu_net_config *net, struct doctor_result *r)
{
	char *args[] = {"doctor", "--config", (char *)cx->config_path, NULL};
	struct hu_config cfg;
	struct hu_runtime_config rc;
	hu_err err;

	if (hu_config_from_args(&cfg, cx->config_path ? 3 : 1, args, &err) < 0) {
		doctor_found(r, "configuration: %s", err.msg);
		return -1;
	}
	hu_runtime_config_defaults(&rc);
	hu_daemon_net_config(&cfg, &rc);
	if (hu_net_config_parse(net, rc.net_mode, rc.net_name, rc.net_pool, rc.net_dns, rc.net_uplinks, rc.net_allow,
				rc.net_deny, &err) < 0 ||
	    hu_net_pool6_parse(net, rc.net_pool6, &err) < 0) {
		doctor_found(r, "network configuration: %s", err.msg);
		return -1;
	}
	return 0;
}

/* The facts the decision rests on: the way out, how the host forwards and
 * the configured pool. */
static void ipv6_report_host(const struct hu_net_config *net, struct doctor_result *r)
{
	char ifname[IF_NAMESIZE], pool[HU_CIDR6_TEXT];

	ipv6_way_out(net, r, ifname);
	/* lo stands in when there is no way out: force_forwarding is per
	 * interface, and every interface has it on a kernel that has it */
	const char *fwd = hu_net6_forwarding(ifname[0] ? ifname : "lo");
	doctor_found(r, "%s",
		     fwd ? fwd
			 : "net.ipv6.conf.all.forwarding off and no per-interface force_forwarding (Linux < 6.17)");
	if (!net->has_pool6) {
		doctor_found(r, "network_pool6 none");
		return;
	}
	hu_cidr6_format(&net->pool6, pool, sizeof(pool));
	doctor_found(r, "network_pool6 %s", pool);
}

/* The decision itself, as hu_net6_plan() makes it for the daemon. */
static void ipv6_decide(struct hu_net_config *net, struct doctor_result *r)
{
	hu_err err;

	if (net->mode != HU_NET_NAT) {
		doctor_found(r, "network none: sandboxes have no network, so no IPv6");
		return;
	}
	if (!net->has_pool6) {
		doctor_found(r, "sandboxes get no IPv6 (turned off by network_pool6)");
		return;
	}
	if (hu_net6_plan(net, &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_WARN, "could not be checked");
		return;
	}
	if (net->v6) {
		doctor_found(r, "sandboxes with internet access get IPv6");
		return;
	}
	doctor_found(r, "sandboxes get no IPv6");
	doctor_verdict(r, DOCTOR_WARN, "sandboxes get IPv4 only: %s", net->v6_off);
}

/* Whether sandboxes get IPv6, decided as `hutch serve` decides it at start
 * (net6.c: a pool, an IPv6 way out, a way to forward) from the
 * configuration it would read. Reads routes and /proc/sys; never writes. */
void doctor_check_ipv6(const struct doctor_ctx *cx, struct doctor_result *r)
{
	struct hu_net_config net;

	if (access("/proc/sys/net/ipv6", F_OK) < 0) {
		doctor_found(r, "IPv6 is disabled on this host (no /proc/sys/net/ipv6)");
		doctor_found(r, "sandboxes get no IPv6");
		return;
	}
	if (ipv6_net_config(cx, &net, r) < 0) {
		doctor_verdict(r, DOCTOR_WARN,
			       "could not be checked (the daemon would not start with this configuration)");
		return;
	}
	ipv6_report_host(&net, r);
	ipv6_decide(&net, r);
}
