/*
 * rtnetlink requests built by hand: one message buffer, nested attributes,
 * and an ACK read after every request (so an error names the operation).
 */
#include <arpa/inet.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/netlink.h"

#define NL_BUF 4096

struct nl_msg {
	union {
		struct nlmsghdr hdr;
		char buf[NL_BUF];
	} u;
};

static void *msg_tail(struct nl_msg *m)
{
	return m->u.buf + NLMSG_ALIGN(m->u.hdr.nlmsg_len);
}

static void msg_init(struct nl_msg *m, uint16_t type, uint16_t flags, const void *body, size_t len)
{
	memset(m, 0, sizeof(*m));
	m->u.hdr.nlmsg_len = (uint32_t)NLMSG_LENGTH(len);
	m->u.hdr.nlmsg_type = type;
	m->u.hdr.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
	memcpy(NLMSG_DATA(&m->u.hdr), body, len);
}

/* Messages here are a few hundred bytes; the buffer cannot overflow. */
static struct rtattr *put_attr(struct nl_msg *m, uint16_t type, const void *data, size_t len)
{
	struct rtattr *a = msg_tail(m);
	a->rta_type = type;
	a->rta_len = (uint16_t)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	m->u.hdr.nlmsg_len = NLMSG_ALIGN(m->u.hdr.nlmsg_len) + RTA_ALIGN(a->rta_len);
	return a;
}

static void put_u32(struct nl_msg *m, uint16_t type, uint32_t v) { put_attr(m, type, &v, sizeof(v)); }
static void put_str(struct nl_msg *m, uint16_t type, const char *s) { put_attr(m, type, s, strlen(s) + 1); }

static struct rtattr *nest_start(struct nl_msg *m, uint16_t type)
{
	return put_attr(m, type, NULL, 0);
}

static void nest_end(struct nl_msg *m, struct rtattr *a)
{
	a->rta_len = (uint16_t)((char *)msg_tail(m) - (char *)a);
}

int hu_nl_open(struct hu_nl *nl, hu_err *err)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};

	nl->seq = 1;
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl->fd < 0)
		return hu_err_sys(err, "netlink socket");
	if (bind(nl->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		hu_err_sys(err, "bind netlink socket");
		close(nl->fd);
		nl->fd = -1;
		return -1;
	}
	return 0;
}

void hu_nl_close(struct hu_nl *nl)
{
	if (nl->fd >= 0)
		close(nl->fd);
	nl->fd = -1;
}

/* Send a request and read replies until its ACK (or its error). When `cb`
 * is given, every data message is passed to it (for GET requests). */
static int transact(struct hu_nl *nl, struct nl_msg *m, int (*cb)(const struct nlmsghdr *, void *), void *arg,
		    const char *what, hu_err *err)
{
	char buf[16384];
	uint32_t seq = nl->seq++;

	m->u.hdr.nlmsg_seq = seq;
	m->u.hdr.nlmsg_flags |= NLM_F_ACK;
	if (send(nl->fd, m->u.buf, m->u.hdr.nlmsg_len, 0) < 0)
		return hu_err_sys(err, "netlink %s", what);
	for (;;) {
		ssize_t n = recv(nl->fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return hu_err_sys(err, "netlink %s", what);
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				if (e->error == 0)
					return 0;
				return hu_err_set(err, -e->error, "%s", what);
			}
			if (cb && cb(h, arg) < 0)
				return hu_err_set(err, EPROTO, "%s: malformed reply", what);
		}
	}
}

int hu_nl_veth_create(struct hu_nl *nl, const char *host_if, const char *peer_if, int peer_netns_fd, hu_err *err)
{
	struct nl_msg m;
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	char what[64];

	msg_init(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
	put_str(&m, IFLA_IFNAME, host_if);
	struct rtattr *linkinfo = nest_start(&m, IFLA_LINKINFO);
	put_str(&m, IFLA_INFO_KIND, "veth");
	struct rtattr *data = nest_start(&m, IFLA_INFO_DATA);
	struct rtattr *peer = nest_start(&m, VETH_INFO_PEER);
	/* the peer's attributes follow its own ifinfomsg */
	struct ifinfomsg pifi = {.ifi_family = AF_UNSPEC};
	memcpy(msg_tail(&m), &pifi, sizeof(pifi));
	m.u.hdr.nlmsg_len = NLMSG_ALIGN(m.u.hdr.nlmsg_len) + NLMSG_ALIGN(sizeof(pifi));
	put_str(&m, IFLA_IFNAME, peer_if);
	put_u32(&m, IFLA_NET_NS_FD, (uint32_t)peer_netns_fd);
	nest_end(&m, peer);
	nest_end(&m, data);
	nest_end(&m, linkinfo);
	snprintf(what, sizeof(what), "create veth %s", host_if);
	return transact(nl, &m, NULL, NULL, what, err);
}

struct index_arg {
	int index;
};

static int index_cb(const struct nlmsghdr *h, void *arg)
{
	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
		return -1;
	((struct index_arg *)arg)->index = ((const struct ifinfomsg *)NLMSG_DATA(h))->ifi_index;
	return 0;
}

int hu_nl_link_index(struct hu_nl *nl, const char *ifname, int *index, hu_err *err)
{
	struct nl_msg m;
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	struct index_arg a = {0};
	char what[64];

	msg_init(&m, RTM_GETLINK, 0, &ifi, sizeof(ifi));
	put_str(&m, IFLA_IFNAME, ifname);
	snprintf(what, sizeof(what), "find link %s", ifname);
	if (transact(nl, &m, index_cb, &a, what, err) < 0)
		return -1;
	if (a.index <= 0)
		return hu_err_set(err, ENODEV, "%s", what);
	*index = a.index;
	return 0;
}

int hu_nl_link_config(struct hu_nl *nl, int index, const struct hu_nl_linkconf *conf, hu_err *err)
{
	struct nl_msg m;
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = index};
	char what[64];

	if (conf->up) {
		ifi.ifi_flags = IFF_UP;
		ifi.ifi_change = IFF_UP;
	}
	msg_init(&m, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
	struct rtattr *af = nest_start(&m, IFLA_AF_SPEC);
	if (conf->set_inet) {
		struct rtattr *inet = nest_start(&m, AF_INET);
		struct rtattr *cf = nest_start(&m, IFLA_INET_CONF);
		put_u32(&m, IPV4_DEVCONF_FORWARDING, conf->forwarding ? 1 : 0);
		/* never: a packet for 127/8 from a sandbox is a martian */
		put_u32(&m, IPV4_DEVCONF_ROUTE_LOCALNET, 0);
		nest_end(&m, cf);
		nest_end(&m, inet);
	}
	if (conf->no_ipv6) {
		struct rtattr *inet6 = nest_start(&m, AF_INET6);
		uint8_t mode = IN6_ADDR_GEN_MODE_NONE;
		put_attr(&m, IFLA_INET6_ADDR_GEN_MODE, &mode, sizeof(mode));
		nest_end(&m, inet6);
	}
	nest_end(&m, af);
	snprintf(what, sizeof(what), "configure link %d", index);
	return transact(nl, &m, NULL, NULL, what, err);
}

int hu_nl_addr_add(struct hu_nl *nl, int index, uint32_t addr, uint8_t len, hu_err *err)
{
	struct nl_msg m;
	struct ifaddrmsg ifa = {.ifa_family = AF_INET, .ifa_prefixlen = len, .ifa_index = (uint32_t)index};
	uint32_t be = htonl(addr);

	msg_init(&m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof(ifa));
	put_attr(&m, IFA_LOCAL, &be, 4);
	put_attr(&m, IFA_ADDRESS, &be, 4);
	return transact(nl, &m, NULL, NULL, "add address", err);
}

int hu_nl_route_default(struct hu_nl *nl, int index, uint32_t gw, hu_err *err)
{
	struct nl_msg m;
	struct rtmsg rt = {
		.rtm_family = AF_INET, .rtm_table = RT_TABLE_MAIN, .rtm_protocol = RTPROT_STATIC,
		.rtm_scope = RT_SCOPE_UNIVERSE, .rtm_type = RTN_UNICAST,
	};
	uint32_t be = htonl(gw);

	msg_init(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &rt, sizeof(rt));
	put_attr(&m, RTA_GATEWAY, &be, 4);
	put_u32(&m, RTA_OIF, (uint32_t)index);
	return transact(nl, &m, NULL, NULL, "add default route", err);
}

int hu_nl_link_del(struct hu_nl *nl, const char *ifname, hu_err *err)
{
	struct nl_msg m;
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
	char what[64];

	msg_init(&m, RTM_DELLINK, 0, &ifi, sizeof(ifi));
	put_str(&m, IFLA_IFNAME, ifname);
	snprintf(what, sizeof(what), "delete link %s", ifname);
	return transact(nl, &m, NULL, NULL, what, err);
}

struct route_arg {
	int oif;
	int bad;
	int family; /* 0 = AF_INET */
};

static int route_cb(const struct nlmsghdr *h, void *arg)
{
	struct route_arg *a = arg;
	const struct rtmsg *rt = NLMSG_DATA(h);
	int len;

	if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(*rt)))
		return -1;
	if (rt->rtm_family != (a->family ? a->family : AF_INET) || rt->rtm_dst_len != 0 || rt->rtm_table != RT_TABLE_MAIN || a->oif)
		return 0;
	len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*rt)));
	for (const struct rtattr *at = RTM_RTA(rt); RTA_OK(at, len); at = RTA_NEXT(at, len))
		if (at->rta_type == RTA_OIF && RTA_PAYLOAD(at) >= 4)
			memcpy(&a->oif, RTA_DATA(at), 4);
	return 0;
}

int hu_nl_default_oif(struct hu_nl *nl, int *index, hu_err *err)
{
	struct nl_msg m;
	struct rtmsg rt = {.rtm_family = AF_INET};
	struct route_arg a = {0};

	msg_init(&m, RTM_GETROUTE, NLM_F_DUMP, &rt, sizeof(rt));
	if (transact(nl, &m, route_cb, &a, "list routes", err) < 0)
		return -1;
	if (a.oif <= 0)
		return hu_err_set(err, ENETUNREACH, "the host has no IPv4 default route (set the network uplink)");
	*index = a.oif;
	return 0;
}

/* IPv6 (net6.c) */

int hu_nl_addr6_add(struct hu_nl *nl, int index, const uint8_t addr[16], uint8_t len, hu_err *err)
{
	struct nl_msg m;
	/* no duplicate address detection: both ends of a veth are ours, and a
	 * tentative address could not be used for the first second */
	struct ifaddrmsg ifa = {
		.ifa_family = AF_INET6, .ifa_prefixlen = len, .ifa_flags = IFA_F_NODAD,
		.ifa_scope = addr[0] == 0xfe && (addr[1] & 0xc0) == 0x80 ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE,
		.ifa_index = (uint32_t)index,
	};

	msg_init(&m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof(ifa));
	put_attr(&m, IFA_LOCAL, addr, 16);
	put_attr(&m, IFA_ADDRESS, addr, 16);
	put_u32(&m, IFA_FLAGS, IFA_F_NODAD);
	return transact(nl, &m, NULL, NULL, "add IPv6 address", err);
}

int hu_nl_route6_default(struct hu_nl *nl, int index, const uint8_t gw[16], hu_err *err)
{
	struct nl_msg m;
	struct rtmsg rt = {
		.rtm_family = AF_INET6, .rtm_table = RT_TABLE_MAIN, .rtm_protocol = RTPROT_STATIC,
		.rtm_scope = RT_SCOPE_UNIVERSE, .rtm_type = RTN_UNICAST,
	};

	msg_init(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &rt, sizeof(rt));
	put_attr(&m, RTA_GATEWAY, gw, 16);
	put_u32(&m, RTA_OIF, (uint32_t)index);
	return transact(nl, &m, NULL, NULL, "add IPv6 default route", err);
}

int hu_nl_default_oif6(struct hu_nl *nl, int *index, hu_err *err)
{
	struct nl_msg m;
	struct rtmsg rt = {.rtm_family = AF_INET6};
	struct route_arg a = {.family = AF_INET6};

	msg_init(&m, RTM_GETROUTE, NLM_F_DUMP, &rt, sizeof(rt));
	if (transact(nl, &m, route_cb, &a, "list IPv6 routes", err) < 0)
		return -1;
	if (a.oif <= 0)
		return hu_err_set(err, ENETUNREACH, "the host has no IPv6 default route");
	*index = a.oif;
	return 0;
}
