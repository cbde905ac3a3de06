/*
 * A small rtnetlink client: the few link, address and route operations the
 * network boundary needs, done over a NETLINK_ROUTE socket of the network
 * namespace that was current when it was opened (no `ip` processes).
 */
#ifndef HUTCH_RUNTIME_NETLINK_H
#define HUTCH_RUNTIME_NETLINK_H

#include <stdint.h>

#include "util/err.h"

struct hu_nl {
	int fd;
	uint32_t seq;
};

/* Per-link settings applied together with IFF_UP. */
struct hu_nl_linkconf {
	int forwarding;     /* IPv4 forwarding on this interface */
	int no_ipv6;        /* no IPv6 link-local address (addr_gen_mode none) */
	int set_inet;       /* apply forwarding, and route_localnet off (else leave them) */
	int up;
};

int hu_nl_open(struct hu_nl *nl, hu_err *err);
void hu_nl_close(struct hu_nl *nl);
/* A veth pair: host_if here, peer_if created directly in the namespace of peer_netns_fd. */
int hu_nl_veth_create(struct hu_nl *nl, const char *host_if, const char *peer_if, int peer_netns_fd, hu_err *err);
/* ifindex of `ifname` (ENODEV when there is none). */
int hu_nl_link_index(struct hu_nl *nl, const char *ifname, int *index, hu_err *err);
int hu_nl_link_config(struct hu_nl *nl, int index, const struct hu_nl_linkconf *conf, hu_err *err);
int hu_nl_addr_add(struct hu_nl *nl, int index, uint32_t addr, uint8_t len, hu_err *err);
int hu_nl_route_default(struct hu_nl *nl, int index, uint32_t gw, hu_err *err);
/* Delete a link by name; ENODEV when it does not exist. */
int hu_nl_link_del(struct hu_nl *nl, const char *ifname, hu_err *err);
/* The output interface of the main table's IPv4 default route. */
int hu_nl_default_oif(struct hu_nl *nl, int *index, hu_err *err);

/* IPv6: an address (without duplicate address detection), a default route
 * through `gw` on `index`, and the output interface of the main table's
 * IPv6 default route. */
int hu_nl_addr6_add(struct hu_nl *nl, int index, const uint8_t addr[16], uint8_t len, hu_err *err);
int hu_nl_route6_default(struct hu_nl *nl, int index, const uint8_t gw[16], hu_err *err);
int hu_nl_default_oif6(struct hu_nl *nl, int *index, hu_err *err);

#endif
