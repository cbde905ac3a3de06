/* IPv6 for sandboxes (net6.c, netfilter6.c): not part of the runtime's API. */
#ifndef HUTCH_RUNTIME_NET6_H
#define HUTCH_RUNTIME_NET6_H

#include <stdio.h>

#include "runtime/net.h"
#include "runtime/netlink.h"

/* Decide whether sandboxes get IPv6 on this host (cfg->v6, else why in
 * cfg->v6_off), and if so turn on forwarding from the IPv6 uplinks. Called
 * after the IPv4 setup. */
int hu_net6_runtime_open(struct hu_net_config *cfg, hu_err *err);
/* The same decision without changing anything (hutch doctor): reads the
 * routes and /proc/sys only. */
int hu_net6_plan(struct hu_net_config *cfg, hu_err *err);
/* How the host can forward IPv6 arriving on ifname: a phrase, or NULL when
 * it cannot (all.forwarding off and no force_forwarding). */
const char *hu_net6_forwarding(const char *ifname);
/* A sandbox's host end `index` (named ifname) on `slot`: fe80::1/64, the
 * gateway's /127, forwarding. Nothing without IPv6. */
int hu_net6_host_end(const struct hu_net_config *cfg, struct hu_nl *nl, int index, const char *ifname, uint32_t slot,
		     hu_err *err);
/* Its eth0 (nl is a socket of the sandbox's namespace): fe80::2/64, the
 * sandbox's /127, the default route through fe80::1. */
int hu_net6_sandbox_end(const struct hu_net_config *cfg, struct hu_nl *nl, int index, uint32_t slot, hu_err *err);

/* netfilter.c: a family's destination rules in from_sbx, in the one order
 * both families share: the pool, host addresses, the operator's denials
 * (unless allowed), then the sandbox's allowOut, learned names, denyOut.
 * family "ip" or "ip6"; sets carry the suffix ("" or "6"). */
void hu_nft_put_dest_rules(FILE *f, const char *table, const char *family, const char *suffix, const char *pool);
/* netfilter.c: one "add element" line putting every CIDR of list into set. */
void hu_nft_put_elements(FILE *f, const char *table, const char *set, const char *const *list, size_t n);

/* netfilter6.c: lines of the host-wide batch (netfilter.c writes them in
 * its own order; each is nothing or "meta nfproto ipv6 drop" without IPv6) */
void hu_nft6_put_sets(FILE *f, const struct hu_net_config *cfg);
void hu_nft6_put_input(FILE *f, const struct hu_net_config *cfg);
void hu_nft6_put_from_sbx_first(FILE *f, const struct hu_net_config *cfg);
void hu_nft6_put_from_sbx(FILE *f, const struct hu_net_config *cfg);
void hu_nft6_put_post(FILE *f, const struct hu_net_config *cfg);
/* A sandbox's IPv6 allowOut/denyOut as elements of uallow6/udeny6. */
void hu_nft6_put_sandbox_rules(FILE *f, const struct hu_net_config *cfg, const char *ifname,
			       const struct hu_net_rules *rules);

#endif
