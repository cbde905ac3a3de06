/*
 * The IPv6 lines of the network boundary's nftables table (netfilter.c
 * writes the batch and calls these at their places). The rules for IPv6
 * are those for IPv4, in the same order, on sets of their own:
 *
 *   input: neighbour discovery from a sandbox (solicitations and
 *     advertisements with hop limit 255, i.e. from the link itself) is
 *     accepted before anything else: without it the host and the sandbox
 *     cannot find each other's link address. No other ICMPv6 to the host.
 *   from_sbx (after the shared reverse-path check, which covers IPv6 too):
 *     the IPv6 pool (other sandboxes); host addresses (fib daddr type
 *     local) and the operator's denials (opdeny6) unless the operator's
 *     exceptions (opallow6) allow; the sandbox's own uallow6 (accept),
 *     dallow6 (accept: the AAAA records its allowed names resolved to,
 *     learned by the daemon's DNS proxy like dallow for IPv4) and udeny6
 *     (drop); the shared final accept. dallow6 comes after the pool, host
 *     and operator drops, so an answer naming fc00::1, ::ffff:10.0.0.1 or
 *     64:ff9b::a00:1 opens nothing; before udeny6 (which holds ::/0 for an
 *     allowlist), as dallow before udeny.
 *   post: masquerade what leaves the IPv6 pool through a non-sandbox link.
 * Without IPv6 on this host (net6.c) a sandbox's IPv6 is dropped first
 * thing, as it always was.
 *
 * A sandbox whose denyOut holds 0.0.0.0/0 (an allowlist) gets ::/0 in
 * udeny6 too unless its denyOut names ::/0 itself: an allowlist written for
 * IPv4 must not leave IPv6 open. Its IPv6 allowOut entries are then the
 * only IPv6 it reaches.
 */
#include <string.h>

#include "runtime/net6.h"
#include "util/cleanup.h"

static void put_list6(FILE *f, const char *t, const char *set, const struct hu_cidr6 *list, unsigned n)
{
	char c[HU_CIDR6_TEXT];

	for (unsigned i = 0; i < n; i++) {
		hu_cidr6_format(&list[i], c, sizeof(c));
		fprintf(f, "add element inet %s %s { %s }\n", t, set, c);
	}
}

void hu_nft6_put_sets(FILE *f, const struct hu_net_config *cfg)
{
	const char *t = cfg->name;

	fprintf(f, "add set inet %s opdeny6 { type ipv6_addr; flags interval; auto-merge; }\n", t);
	fprintf(f, "add set inet %s opallow6 { type ipv6_addr; flags interval; auto-merge; }\n", t);
	/* the live sandboxes' state: created if missing, never flushed here */
	fprintf(f, "add set inet %s uallow6 { type ifname . ipv6_addr; flags interval; }\n", t);
	fprintf(f, "add set inet %s udeny6 { type ifname . ipv6_addr; flags interval; }\n", t);
	/* even without IPv6: teardown lists every per-sandbox set */
	fprintf(f, "add set inet %s dallow6 { type ifname . ipv6_addr; flags timeout; }\n", t);
	fprintf(f, "flush set inet %s opdeny6\nflush set inet %s opallow6\n", t, t);
	hu_nft_put_elements(f, t, "opdeny6", hu_net_builtin_deny6, hu_net_builtin_deny6_len);
	put_list6(f, t, "opdeny6", cfg->op.deny6, cfg->op.n_deny6);
	put_list6(f, t, "opallow6", cfg->op.allow6, cfg->op.n_allow6);
}

void hu_nft6_put_input(FILE *f, const struct hu_net_config *cfg)
{
	if (!cfg->v6)
		return;
	fprintf(f,
		"add rule inet %s input iifname \"%s-*\" icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } "
		"ip6 hoplimit 255 accept\n",
		cfg->name, cfg->name);
}

void hu_nft6_put_from_sbx_first(FILE *f, const struct hu_net_config *cfg)
{
	if (!cfg->v6)
		fprintf(f, "add rule inet %s from_sbx meta nfproto ipv6 drop\n", cfg->name);
}

void hu_nft6_put_from_sbx(FILE *f, const struct hu_net_config *cfg)
{
	const char *t = cfg->name;
	char pool[HU_CIDR6_TEXT];

	if (!cfg->v6)
		return;
	hu_cidr6_format(&cfg->pool6, pool, sizeof(pool));
	hu_nft_put_dest_rules(f, t, "ip6", "6", pool);
}

void hu_nft6_put_post(FILE *f, const struct hu_net_config *cfg)
{
	char pool[HU_CIDR6_TEXT];

	if (!cfg->v6)
		return;
	hu_cidr6_format(&cfg->pool6, pool, sizeof(pool));
	fprintf(f, "add rule inet %s post ip6 saddr %s oifname != \"%s-*\" masquerade\n", cfg->name, pool, cfg->name);
}

/* Whether prefix a lies inside prefix b. */
static int within6(const struct hu_cidr6 *a, const struct hu_cidr6 *b)
{
	if (a->len < b->len)
		return 0;
	unsigned full = b->len / 8, rest = b->len % 8;
	if (memcmp(a->addr, b->addr, full))
		return 0;
	return rest == 0 || ((a->addr[full] ^ b->addr[full]) & (uint8_t)(0xff00u >> rest)) == 0;
}

/* As netfilter.c's put_rules: prefixes nest or are disjoint, and only the
 * outermost of each nest (the first of equal ones) goes in, so that the
 * interval set sees no overlap. */
static void put_rules6(FILE *f, const char *t, const char *set, const char *ifname, const struct hu_cidr6 *list,
		       unsigned n)
{
	char c[HU_CIDR6_TEXT];

	for (unsigned i = 0; i < n; i++) {
		int covered = 0;
		for (unsigned j = 0; j < n && !covered; j++)
			covered = j != i && within6(&list[i], &list[j]) && (list[i].len != list[j].len || j < i);
		if (covered)
			continue;
		hu_cidr6_format(&list[i], c, sizeof(c));
		fprintf(f, "add element inet %s %s { \"%s\" . %s }\n", t, set, ifname, c);
	}
}

/* Whether a list holds a /0. */
static int has_all4(const struct hu_cidr4 *list, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (list[i].len == 0)
			return 1;
	return 0;
}

static int has_all6(const struct hu_cidr6 *list, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (list[i].len == 0)
			return 1;
	return 0;
}

void hu_nft6_put_sandbox_rules(FILE *f, const struct hu_net_config *cfg, const char *ifname,
			       const struct hu_net_rules *rules)
{
	put_rules6(f, cfg->name, "uallow6", ifname, rules->allow6, rules->n_allow6);
	put_rules6(f, cfg->name, "udeny6", ifname, rules->deny6, rules->n_deny6);
	/* an IPv4 allowlist blocks the IPv6 it does not list */
	if (has_all4(rules->deny, rules->n_deny) && !has_all6(rules->deny6, rules->n_deny6))
		fprintf(f, "add element inet %s udeny6 { \"%s\" . ::/0 }\n", cfg->name, ifname);
}
