/*
 * The network boundary, runtime side: host-wide setup when the runtime
 * opens, and per sandbox the veth pair, its addresses and default route
 * (rtnetlink, netlink.c), its nftables chain and sets (netfilter.c) and its
 * resolv.conf. Everything a sandbox owns is named after its id (nft objects)
 * or its uid slot (interface, addresses), so a restarted daemon can find it
 * again from (id, slot).
 */
#include <fcntl.h>
#include <nftables/libnftables.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/net6.h"
#include "runtime/net_internal.h"
#include "runtime/nft_lib.h"
#include "runtime/netlink.h"
#include "util/cleanup.h"
#include "util/fileutil.h"
#include "util/parse.h"

/* IPv4 forwarding on the interfaces replies come back through: forwarding is
 * decided by the interface a packet arrives on, so the host-wide ip_forward
 * switch stays as the operator set it. */
static int enable_uplinks(const struct hu_net_config *cfg, hu_err *err)
{
	struct hu_nl nl;
	struct hu_nl_linkconf conf = {.set_inet = 1, .forwarding = 1, .up = 0};
	int rc = 0, index;

	if (hu_nl_open(&nl, err) < 0)
		return -1;
	if (cfg->n_uplinks == 0) {
		rc = hu_nl_default_oif(&nl, &index, err);
		if (rc == 0)
			rc = hu_nl_link_config(&nl, index, &conf, err);
	}
	for (unsigned i = 0; rc == 0 && i < cfg->n_uplinks; i++) {
		rc = hu_nl_link_index(&nl, cfg->uplinks[i], &index, err);
		if (rc == 0)
			rc = hu_nl_link_config(&nl, index, &conf, err);
	}
	hu_nl_close(&nl);
	return rc;
}


int hu_net_runtime_open(struct hu_runtime *rt, hu_err *err)
{
	const struct hu_runtime_config *c = &rt->cfg;

	rt->host_netns = -1;
	if (hu_net_config_parse(&rt->net, c->net_mode, c->net_name, c->net_pool, c->net_dns, c->net_uplinks,
				c->net_allow, c->net_deny, err) < 0 ||
	    hu_net_pool6_parse(&rt->net, c->net_pool6, err) < 0 ||
	    hu_net_flows_parse(c->net_flows[0] ? c->net_flows : HU_NET_FLOWS_DEFAULT, &rt->net.flows, err) < 0)
		return -1;
	if (c->net_dns_proxy_port > 65535)
		return hu_err_set(err, EINVAL, "network: DNS proxy port %u", c->net_dns_proxy_port);
	rt->net.dns_proxy_port = (uint16_t)c->net_dns_proxy_port;
	if (rt->net.mode == HU_NET_NONE)
		return 0;
	rt->host_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (rt->host_netns < 0)
		return hu_err_sys(err, "open /proc/self/ns/net");
	/* IPv6 is decided first: the host-wide rules depend on it */
	if (hu_net6_runtime_open(&rt->net, err) < 0 || hu_nft_open(&rt->nft, err) < 0 ||
	    hu_nft_host_setup(rt->nft, &rt->net, err) < 0 || enable_uplinks(&rt->net, err) < 0) {
		hu_err_prefix(err, "network setup");
		return -1;
	}
	return 0;
}

void hu_net_runtime_close(struct hu_runtime *rt)
{
	if (rt->nft)
		nft_ctx_free(rt->nft);
	rt->nft = NULL;
	if (rt->host_netns >= 0)
		close(rt->host_netns);
	rt->host_netns = -1;
}

/* A NETLINK_ROUTE socket of the sandbox's namespace: entered for the one
 * socket() call, left at once (the socket stays bound to it). */
static int open_in_netns(struct hu_runtime *rt, int netns, struct hu_nl *nl, hu_err *err)
{
	if (setns(netns, CLONE_NEWNET) < 0)
		return hu_err_sys(err, "enter the sandbox's network namespace");
	int rc = hu_nl_open(nl, err);
	if (setns(rt->host_netns, CLONE_NEWNET) < 0) {
		/* cannot happen with a valid fd; carrying on here would put host
		 * work into the sandbox's namespace */
		perror("hutch: return to the host network namespace");
		abort();
	}
	return rc;
}

static void addr_text(uint32_t a, char *buf, size_t n)
{
	snprintf(buf, n, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

/* <upper>/etc/resolv.conf naming the gateway, owned by the sandbox's root
 * (`root`: its id on disk in this upper dir): the overlay shows it over the
 * template's placeholder. The upper layer is the
 * sandbox's own: at a restart over kept files (memory release) it holds
 * whatever the sandbox put there, and its root may have made /etc or
 * resolv.conf a symlink to a host path. So nothing is followed: each step
 * works on a descriptor opened with O_NOFOLLOW, and an existing file is the
 * sandbox's own (from its first boot, with the same gateway) and stays. */
static int write_resolv_conf(const char *upper, uint32_t root, uint32_t gw, hu_err *err)
{
	char text[96], a[16];

	_cleanup_close_ int ufd = open(upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ufd < 0)
		return hu_err_sys(err, "open %s", upper);
	int made = mkdirat(ufd, "etc", 0755) == 0;
	if (!made && errno != EEXIST)
		return hu_err_sys(err, "mkdir %s/etc", upper);
	_cleanup_close_ int efd = openat(ufd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (efd < 0)
		return 0; /* the sandbox made /etc something else: its choice */
	/* fchmod: the umask must not hide /etc from the user */
	if (made && (fchmod(efd, 0755) < 0 || fchown(efd, root, root) < 0))
		return hu_err_sys(err, "chown %s/etc", upper);
	_cleanup_close_ int fd = openat(efd, "resolv.conf", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno == EEXIST ? 0 : hu_err_sys(err, "create %s/etc/resolv.conf", upper);
	addr_text(gw, a, sizeof(a));
	snprintf(text, sizeof(text), "# hutch: the sandbox's resolver\nnameserver %s\n", a);
	if (hu_write_all(fd, text, strlen(text)) < 0 || fchmod(fd, 0644) < 0 || fchown(fd, root, root) < 0)
		return hu_err_sys(err, "write %s/etc/resolv.conf", upper);
	return 0;
}

static int configure_sandbox_end(struct hu_runtime *rt, int netns, uint32_t slot, uint32_t gw, uint32_t addr,
				 hu_err *err)
{
	struct hu_nl nl;
	struct hu_nl_linkconf conf = {.no_ipv6 = 1, .up = 1};
	int index, rc;

	if (open_in_netns(rt, netns, &nl, err) < 0)
		return -1;
	rc = hu_nl_link_index(&nl, "eth0", &index, err);
	if (rc == 0)
		rc = hu_nl_link_config(&nl, index, &conf, err);
	if (rc == 0)
		rc = hu_nl_addr_add(&nl, index, addr, 31, err);
	if (rc == 0)
		rc = hu_nl_route_default(&nl, index, gw, err);
	if (rc == 0)
		rc = hu_net6_sandbox_end(&rt->net, &nl, index, slot, err);
	hu_nl_close(&nl);
	return rc;
}

int hu_net_attach(struct hu_runtime *rt, const char *id, uint32_t slot, pid_t pid, const char *upper,
		  uint32_t upper_root, const struct hu_net_spec *spec, hu_err *err)
{
	char ifname[IF_NAMESIZE], path[64];
	uint32_t gw, addr;
	struct hu_nl nl;
	hu_err ignore;
	int index, rc;

	if (!spec->internet)
		return 0;
	if (rt->net.mode != HU_NET_NAT)
		return hu_err_set(err, EPERM, "internet access needs the network mode nat (it is none on this host)");
	if (hu_net_slot_addrs(&rt->net, slot, &gw, &addr, err) < 0)
		return -1;
	hu_net_ifname(&rt->net, slot, ifname);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	_cleanup_close_ int netns = open(path, O_RDONLY | O_CLOEXEC);
	if (netns < 0)
		return hu_err_sys(err, "open %s", path);
	if (hu_nl_open(&nl, err) < 0)
		return -1;
	rc = hu_nl_veth_create(&nl, ifname, "eth0", netns, err);
	if (rc < 0 && err->code == EEXIST) {
		/* the previous owner of this slot is gone, but its namespace (and
		 * the veth in it) is still being freed by the kernel */
		if (hu_nl_link_del(&nl, ifname, &ignore) == 0 || ignore.code == ENODEV)
			rc = hu_nl_veth_create(&nl, ifname, "eth0", netns, err);
	}
	if (rc < 0) {
		hu_nl_close(&nl);
		return -1;
	}
	struct hu_nl_linkconf host_conf = {
		.set_inet = 1, .forwarding = 1, .no_ipv6 = 1, .up = 1,
	};
	rc = hu_nl_link_index(&nl, ifname, &index, err);
	if (rc == 0)
		rc = hu_nl_link_config(&nl, index, &host_conf, err);
	if (rc == 0)
		rc = hu_nl_addr_add(&nl, index, gw, 31, err);
	if (rc == 0)
		rc = hu_net6_host_end(&rt->net, &nl, index, ifname, slot, err);
	hu_nl_close(&nl);
	if (rc == 0)
		rc = configure_sandbox_end(rt, netns, slot, gw, addr, err);
	if (rc == 0)
		rc = hu_nft_sandbox_add(rt->nft, &rt->net, ifname, &spec->rules, err);
	if (rc == 0 && rt->net.resolver)
		rc = write_resolv_conf(upper, upper_root, gw, err);
	if (rc < 0) {
		hu_err_prefix(err, "network");
		hu_net_detach(rt, id, slot, 1, &ignore);
		return -1;
	}
	return 0;
}

int hu_net_detach(struct hu_runtime *rt, const char *id, uint32_t slot, int delete_link, hu_err *err)
{
	char ifname[IF_NAMESIZE];
	struct hu_nl nl;
	hu_err e;
	int rc = 0;

	if (rt->net.mode != HU_NET_NAT)
		return 0;
	hu_net_ifname(&rt->net, slot, ifname);
	/* The pair goes with the sandbox's namespace, which the kernel frees
	 * on its own once init is dead; deleting it here would cost ~20 ms of
	 * RCU grace periods on every destroy. Only a sandbox whose namespace
	 * may live on (a half-made one, a leftover) has it deleted. */
	if (delete_link && hu_nl_open(&nl, &e) == 0) {
		if (hu_nl_link_del(&nl, ifname, &e) < 0 && e.code != ENODEV)
			rc = hu_err_set(err, e.code, "%s", e.msg);
		hu_nl_close(&nl);
	}
	if (hu_nft_sandbox_del(rt->nft, &rt->net, ifname, rc == 0 ? err : &e) < 0)
		rc = -1;
	return rc;
}

int hu_net_update(struct hu_runtime *rt, const char *id, const struct hu_net_rules *rules, hu_err *err)
{
	char ifname[IF_NAMESIZE];
	uint32_t slot;

	if (!hu_sandbox_id_valid(id))
		return hu_err_set(err, EINVAL, "invalid sandbox id '%s'", id);
	if (rt->net.mode != HU_NET_NAT)
		return hu_err_set(err, EPERM, "this host gives sandboxes no network (mode none)");
	if (hu_slot_find_id(rt, id, &slot, err) < 0)
		return -1;
	hu_net_ifname(&rt->net, slot, ifname);
	/* rules for an interface that does not exist would wait for the next
	 * sandbox on this slot */
	struct hu_nl nl;
	int index, rc;
	if (hu_nl_open(&nl, err) < 0)
		return -1;
	rc = hu_nl_link_index(&nl, ifname, &index, err);
	hu_nl_close(&nl);
	if (rc < 0)
		return hu_err_set(err, ENOENT, "sandbox %s has no network of its own", id);
	if (hu_nft_sandbox_rules(rt->nft, &rt->net, ifname, rules, err) < 0) {
		hu_err_prefix(err, "network rules of sandbox %s", id);
		return -1;
	}
	return 0;
}

int hu_net_adopt(struct hu_runtime *rt, uint32_t slot)
{
	char ifname[IF_NAMESIZE];
	struct hu_nl nl;
	hu_err ignore;
	int index, rc;

	if (rt->net.mode != HU_NET_NAT || hu_nl_open(&nl, &ignore) < 0)
		return 0;
	hu_net_ifname(&rt->net, slot, ifname);
	rc = hu_nl_link_index(&nl, ifname, &index, &ignore);
	hu_nl_close(&nl);
	return rc == 0;
}

enum hu_net_mode hu_runtime_net_mode(const struct hu_runtime *rt)
{
	return rt->net.mode;
}

uint32_t hu_net_resolver(const struct hu_runtime *rt)
{
	return rt->net.mode == HU_NET_NAT ? rt->net.resolver : 0;
}

int hu_net_cleanup_leftover(struct hu_runtime *rt, const char *id, hu_err *err)
{
	uint32_t slot;
	hu_err ignore;

	if (rt->net.mode != HU_NET_NAT)
		return 0;
	if (hu_slot_find_id(rt, id, &slot, &ignore) < 0)
		return 0; /* no slot: nothing can be keyed by its interface */
	return hu_net_detach(rt, id, slot, 1, err);
}

int hu_net_addr_owner(struct hu_runtime *rt, uint32_t addr, char *id, size_t cap, hu_err *err)
{
	char path[PATH_MAX];
	uint32_t off = addr - rt->net.pool.addr;
	uint64_t size = 1ull << (32 - rt->net.pool.len);

	/* a sandbox end: inside the pool, odd */
	if (rt->net.mode != HU_NET_NAT || (addr & ~(uint32_t)(size - 1)) != rt->net.pool.addr || !(off & 1))
		return hu_err_set(err, ENOENT, "not a sandbox address");
	snprintf(path, sizeof(path), "%s/%u", rt->slots_dir, off / 2);
	if (hu_read_file(path, id, cap, err) < 0 || !hu_sandbox_id_valid(id))
		return hu_err_set(err, ENOENT, "no sandbox on slot %u", off / 2);
	return 0;
}

int hu_net_learn(struct hu_runtime *rt, uint32_t sbx_addr, const uint32_t *addrs, unsigned n, unsigned ttl,
		 hu_err *err)
{
	char ifname[IF_NAMESIZE];

	if (rt->net.mode != HU_NET_NAT)
		return hu_err_set(err, EPERM, "this host gives sandboxes no network (mode none)");
	if (n == 0)
		return 0;
	hu_net_ifname(&rt->net, (sbx_addr - rt->net.pool.addr) / 2, ifname);
	return hu_nft_learn(rt->nft, &rt->net, ifname, addrs, n, ttl, err);
}

struct hu_net_learner {
	const struct hu_net_config *cfg; /* the runtime's: fixed once it is open */
	struct nft_ctx *nft;             /* this learner's own */
};

int hu_net_learner_open(struct hu_runtime *rt, struct hu_net_learner **out, hu_err *err)
{
	if (rt->net.mode != HU_NET_NAT)
		return hu_err_set(err, -EPERM, "this host gives sandboxes no network (mode none)");
	struct hu_net_learner *l = calloc(1, sizeof(*l));
	if (!l)
		return hu_err_set(err, ENOMEM, "address learner");
	l->cfg = &rt->net;
	if (hu_nft_open(&l->nft, err) < 0) {
		free(l);
		return -1;
	}
	*out = l;
	return 0;
}

int hu_net_learner_run(struct hu_net_learner *l, const struct hu_net_learn_req *reqs, unsigned n, hu_err *err)
{
	struct hu_nft_learn_entry *e = calloc(n ? n : 1, sizeof(*e));

	if (!e)
		return hu_err_set(err, ENOMEM, "address learner");
	for (unsigned i = 0; i < n; i++) {
		e[i] = (struct hu_nft_learn_entry){.a4 = reqs[i].a4, .n4 = reqs[i].n4, .ttl4 = reqs[i].ttl4,
						   .a6 = l->cfg->v6 ? reqs[i].a6 : NULL, .n6 = reqs[i].n6,
						   .ttl6 = reqs[i].ttl6, .remove = reqs[i].remove};
		hu_net_ifname(l->cfg, (reqs[i].sbx_addr - l->cfg->pool.addr) / 2, e[i].ifname);
	}
	int rc = hu_nft_learn_batch(l->nft, l->cfg, e, n, err);
	free(e);
	return rc;
}

void hu_net_learner_free(struct hu_net_learner *l)
{
	if (!l)
		return;
	if (l->nft)
		nft_ctx_free(l->nft);
	free(l);
}

int hu_net_learn6(struct hu_runtime *rt, uint32_t sbx_addr, const uint8_t (*addrs)[16], unsigned n, unsigned ttl,
		  hu_err *err)
{
	char ifname[IF_NAMESIZE];

	if (rt->net.mode != HU_NET_NAT)
		return hu_err_set(err, EPERM, "this host gives sandboxes no network (mode none)");
	if (n == 0 || !rt->net.v6)
		return 0; /* no IPv6 for sandboxes: their IPv6 is dropped first thing anyway */
	hu_net_ifname(&rt->net, (sbx_addr - rt->net.pool.addr) / 2, ifname);
	return hu_nft_learn6(rt->nft, &rt->net, ifname, addrs, n, ttl, err);
}
