/*
 * IPv6 for sandboxes with internet access, beside IPv4 (net.c) and under
 * the same rules (netfilter6.c).
 *
 * Each sandbox gets a /127 of the operator's IPv6 pool by uid slot
 * (gateway = pool6 + 2*slot on the host end, sandbox = +1 on eth0), and
 * both ends get a fixed link-local address (host fe80::1, sandbox fe80::2)
 * instead of autoconfigured ones: neighbour discovery needs a link-local
 * source for what the host forwards to the sandbox, and fixed addresses
 * need no duplicate address detection and tell nothing about the host. The
 * sandbox's default route goes through fe80::1.
 *
 * Forwarding: Linux forwards IPv6 only when net.ipv6.conf.all.forwarding
 * is on, or (kernel 6.17 and later) when the interface a packet arrives on
 * has force_forwarding set. hutch never turns on the host-wide switch (it
 * would make every interface a router); it sets force_forwarding on the
 * sandboxes' host ends and on the IPv6 uplinks. On an uplink that takes its
 * own configuration from router advertisements (accept_ra = 1), accept_ra
 * is raised to 2 first, so that being a router there cannot make it drop
 * its default route. Without either way to forward, or without an IPv6
 * uplink (no IPv6 default route and no network_uplink), sandboxes get no
 * IPv6 at all, as before: never a route that leads nowhere.
 */
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/net6.h"
#include "runtime/netlink.h"
#include "runtime/runtime_internal.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

static const uint8_t ll_host[16] = {0xfe, 0x80, [15] = 1};
static const uint8_t ll_sandbox[16] = {0xfe, 0x80, [15] = 2};

/* /proc/sys/net/ipv6/conf/<ifname>/<key>: the namespace is the caller's
 * (the host's: the runtime only opens these there). */
static void conf_path(char *buf, size_t n, const char *ifname, const char *key)
{
	snprintf(buf, n, "/proc/sys/net/ipv6/conf/%s/%s", ifname, key);
}

/* The value of an IPv6 setting, -1 when there is no such setting. */
static int conf_read(const char *ifname, const char *key)
{
	char path[128], buf[16] = "";

	conf_path(path, sizeof(path), ifname, key);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return -1;
	return atoi(buf);
}

static int conf_write(const char *ifname, const char *key, int value, hu_err *err)
{
	char path[128], buf[16];

	conf_path(path, sizeof(path), ifname, key);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	snprintf(buf, sizeof(buf), "%d\n", value);
	if (fd < 0 || hu_write_all(fd, buf, strlen(buf)) < 0)
		return hu_err_sys(err, "write %s", path);
	return 0;
}

/* Forwarding of what arrives on ifname. */
static int forward_from(const char *ifname, int uplink, hu_err *err)
{
	if (conf_read("all", "forwarding") == 1)
		return 0; /* the operator made the host an IPv6 router */
	if (uplink && conf_read(ifname, "accept_ra") == 1 && conf_write(ifname, "accept_ra", 2, err) < 0)
		return -1;
	return conf_write(ifname, "force_forwarding", 1, err);
}

const char *hu_net6_forwarding(const char *ifname)
{
	if (conf_read("all", "forwarding") == 1)
		return "net.ipv6.conf.all.forwarding is on";
	if (conf_read(ifname, "force_forwarding") >= 0)
		return "per-interface force_forwarding (Linux 6.17+)";
	return NULL;
}

int hu_net6_plan(struct hu_net_config *cfg, hu_err *err)
{
	cfg->v6 = 0;
	cfg->n_v6_uplinks = 0;
	cfg->v6_off = "network_pool6 is none";
	if (cfg->mode != HU_NET_NAT || !cfg->has_pool6)
		return 0;
	if (cfg->n_uplinks) {
		for (unsigned i = 0; i < cfg->n_uplinks; i++)
			memcpy(cfg->v6_uplinks[i], cfg->uplinks[i], IF_NAMESIZE);
		cfg->n_v6_uplinks = cfg->n_uplinks;
	} else {
		struct hu_nl nl;
		hu_err none;
		int index, rc;
		if (hu_nl_open(&nl, err) < 0)
			return -1;
		rc = hu_nl_default_oif6(&nl, &index, &none);
		hu_nl_close(&nl);
		cfg->v6_off = "the host has no IPv6 default route and no network_uplink is set";
		if (rc < 0 || !if_indextoname((unsigned)index, cfg->v6_uplinks[0]))
			return 0; /* no IPv6 way out: no IPv6 for sandboxes */
		cfg->n_v6_uplinks = 1;
	}
	/* a kernel without force_forwarding on a host that does not forward */
	cfg->v6_off = "net.ipv6.conf.all.forwarding is off and the kernel has no force_forwarding (Linux < 6.17)";
	if (!hu_net6_forwarding(cfg->v6_uplinks[0]))
		return 0;
	cfg->v6 = 1;
	cfg->v6_off = NULL;
	return 0;
}

int hu_net6_runtime_open(struct hu_net_config *cfg, hu_err *err)
{
	if (hu_net6_plan(cfg, err) < 0)
		return -1;
	if (!cfg->v6)
		return 0;
	for (unsigned i = 0; i < cfg->n_v6_uplinks; i++)
		if (forward_from(cfg->v6_uplinks[i], 1, err) < 0) {
			hu_err_prefix(err, "IPv6 uplink %s", cfg->v6_uplinks[i]);
			cfg->v6 = 0;
			cfg->v6_off = "turning on IPv6 forwarding failed";
			return -1;
		}
	return 0;
}

void hu_runtime_net_describe(const struct hu_runtime *rt, char *buf, size_t n)
{
	const struct hu_net_config *cfg = &rt->net;
	char pool[HU_CIDR6_TEXT];
	size_t len;

	if (cfg->mode != HU_NET_NAT) {
		snprintf(buf, n, "network none: sandboxes have loopback only");
		return;
	}
	if (!cfg->v6) {
		snprintf(buf, n, "network nat (%s): IPv4 only, no IPv6 for sandboxes: %s", cfg->name, cfg->v6_off);
		return;
	}
	hu_cidr6_format(&cfg->pool6, pool, sizeof(pool));
	snprintf(buf, n, "network nat (%s): IPv4 and IPv6 (pool %s, IPv6 uplinks", cfg->name, pool);
	for (unsigned i = 0; i < cfg->n_v6_uplinks; i++) {
		len = strlen(buf);
		snprintf(buf + len, n - len, " %s", cfg->v6_uplinks[i]);
	}
	len = strlen(buf);
	snprintf(buf + len, n - len, ")");
}

int hu_net6_host_end(const struct hu_net_config *cfg, struct hu_nl *nl, int index, const char *ifname, uint32_t slot,
		     hu_err *err)
{
	uint8_t gw[16], addr[16];

	if (!cfg->v6)
		return 0;
	if (hu_net6_slot_addrs(cfg, slot, gw, addr, err) < 0 || hu_nl_addr6_add(nl, index, ll_host, 64, err) < 0 ||
	    hu_nl_addr6_add(nl, index, gw, 127, err) < 0)
		return -1;
	return forward_from(ifname, 0, err);
}

int hu_net6_sandbox_end(const struct hu_net_config *cfg, struct hu_nl *nl, int index, uint32_t slot, hu_err *err)
{
	uint8_t gw[16], addr[16];

	if (!cfg->v6)
		return 0;
	if (hu_net6_slot_addrs(cfg, slot, gw, addr, err) < 0 || hu_nl_addr6_add(nl, index, ll_sandbox, 64, err) < 0 ||
	    hu_nl_addr6_add(nl, index, addr, 127, err) < 0)
		return -1;
	return hu_nl_route6_default(nl, index, ll_host, err);
}
