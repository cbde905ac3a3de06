/*
 * The network boundary of sandboxes.
 *
 * Every sandbox has its own network namespace. With the runtime's network
 * mode "none", or a sandbox created without internet access, it holds only
 * loopback. Otherwise (mode "nat") the sandbox gets a veth pair: the host end
 * is named <net_name>-<slot>, the sandbox end eth0, and both addresses come
 * from the sandbox's uid slot (a /31 out of the pool: gateway = pool + 2*slot,
 * sandbox = pool + 2*slot + 1), so everything a sandbox owns on the network
 * can be found again from (id, slot) alone after a restart. Where the host
 * has IPv6 (net6.c), the slot also names a /127 of the IPv6 pool, and both
 * ends get fixed link-local addresses (host fe80::1, sandbox fe80::2).
 *
 * Filtering is done on the host side, keyed by the host interface, because
 * root inside the sandbox owns its namespace and may change its own
 * addresses and routes at will. One nftables table per runtime name holds
 * rules shared by every sandbox (set up once, idempotently, when the runtime
 * opens); a sandbox's allowOut/denyOut are elements "<name>-<slot>" . cidr
 * of two shared sets (netfilter.c). docs/security.md lists the rules.
 */
#ifndef HUTCH_RUNTIME_NET_H
#define HUTCH_RUNTIME_NET_H

#include <net/if.h>
#include <stdint.h>

#include "util/err.h"

#define HU_NET_RULES_MAX 256
/* "fd" and "hutch" in ASCII (68 75 74 63 68) as the ULA's global ID,
 * subnet 0: fixed, so that every hutch host's sandboxes look the same */
#define HU_NET_POOL6_DEFAULT "fd68:7574:6368::/64"
#define HU_NET_NAME_MAX 9 /* <name>-<slot> (up to 5 digits) fits IFNAMSIZ - 1 */

/* An IPv4 prefix (host byte order, address masked to the prefix). */
struct hu_cidr4 {
	uint32_t addr;
	uint8_t len;
};

/* Domain rules (netdomain.c): names in allowOut, as E2B takes them. */
#define HU_NET_DOMAINS_MAX 64
#define HU_NET_DOMAINS_TEXT 4096 /* their text together, NULs included */
#define HU_DOMAIN_MAX 253 /* a name's text, without the trailing dot */

/* An IPv6 prefix (network byte order, address masked to the prefix). */
struct hu_cidr6 {
	uint8_t addr[16];
	uint8_t len;
};

/* A sandbox's own egress rules (E2B's network.allowOut / denyOut), each
 * family in lists of its own (nftables keeps them in sets of their own). */
struct hu_net_rules {
	unsigned n_allow, n_deny;
	struct hu_cidr4 allow[HU_NET_RULES_MAX];
	struct hu_cidr4 deny[HU_NET_RULES_MAX];
	/* allowOut's domain names, lower case without a trailing dot; a
	 * leading "*." matches every name below it (not the name itself).
	 * The daemon's DNS proxy turns what they resolve to into allow
	 * elements (dns_proxy.c). Packed (name i at allow_dom_text +
	 * allow_dom_at[i]): every sandbox carries this struct, and 64 names
	 * of 253 characters each are not what rules look like. */
	unsigned n_allow_dom;
	uint16_t allow_dom_at[HU_NET_DOMAINS_MAX];
	uint16_t allow_dom_used;
	char allow_dom_text[HU_NET_DOMAINS_TEXT];
	unsigned n_allow6, n_deny6;
	struct hu_cidr6 allow6[HU_NET_RULES_MAX];
	struct hu_cidr6 deny6[HU_NET_RULES_MAX];
};

/* The i-th domain name of rules' allowOut. */
static inline const char *hu_net_rules_domain(const struct hu_net_rules *rules, unsigned i)
{
	return rules->allow_dom_text + rules->allow_dom_at[i];
}

/* What a sandbox asks for at create time. */
struct hu_net_spec {
	int internet; /* 0 = loopback only */
	struct hu_net_rules rules;
};

/* The operator's settings (parsed from the runtime configuration strings). */
enum hu_net_mode { HU_NET_NONE = 0, HU_NET_NAT = 1 };
struct hu_net_config {
	enum hu_net_mode mode;
	char name[HU_NET_NAME_MAX + 1]; /* table name and interface prefix */
	struct hu_cidr4 pool;           /* /17 or larger covers every uid slot */
	uint32_t resolver;              /* where the sandboxes' DNS goes (0 = none) */
	char uplinks[4][IF_NAMESIZE];   /* interfaces whose forwarding is turned on */
	unsigned n_uplinks;
	struct hu_net_rules op;         /* allow: exceptions to the built-in denials; deny: more of them */
	uint16_t dns_proxy_port;        /* the daemon's DNS proxy (host port), 0 = none (hutch run) */
	unsigned flows;                 /* live connections (conntrack entries) a sandbox may hold, 0 = no limit */
	/* IPv6 (net6.c): the pool (a /127 per uid slot; has_pool6 0 = "none"),
	 * and whether sandboxes get IPv6 on this host (decided when the
	 * runtime opens: a pool, an IPv6 uplink, and a way to forward) */
	int has_pool6;
	struct hu_cidr6 pool6;
	int v6;
	const char *v6_off; /* without IPv6: why (a constant string) */
	char v6_uplinks[4][IF_NAMESIZE];
	unsigned n_v6_uplinks;
};

/* Parse "a.b.c.d" or "a.b.c.d/len" (no leading zeros, no spaces). The
 * address is masked to its prefix. */
int hu_cidr4_parse(const char *s, struct hu_cidr4 *out, hu_err *err);
/* Append the entries of a comma-separated CIDR list to rules->allow
 * (which = 'a') or rules->deny ('d'). */
int hu_net_rules_add_list(struct hu_net_rules *rules, char which, const char *list, hu_err *err);
/* Append one entry (E2B rule text, an IPv4 or IPv6 address or CIDR) to a
 * list; a domain name only in allowOut (hu_domain_rule_parse). */
int hu_net_rules_add(struct hu_net_rules *rules, char which, const char *entry, hu_err *err);
/* Whether a sandbox's denyOut covers every IPv4 address (0.0.0.0/0): its
 * allowOut is then an allowlist, and its DNS goes through the daemon's
 * proxy, which answers only names its allowOut lists. */
int hu_net_rules_allowlist(const struct hu_net_rules *rules);
/* E2B's rule: domain names in allowOut need denyOut to cover everything
 * (without it they would allow nothing that is not allowed already). */
int hu_net_rules_check(const struct hu_net_rules *rules, hu_err *err);
/* Validate a domain rule ("example.com", "*.example.com"; a trailing dot
 * and upper case are accepted) and write its canonical form into out
 * (HU_DOMAIN_MAX + 1 bytes). */
int hu_domain_rule_parse(const char *s, char *out, hu_err *err);
/* Whether name (a DNS name as text, any case, trailing dot allowed)
 * matches the canonical rule. */
int hu_domain_match(const char *rule, const char *name);
/* Whether one of rules' domain rules matches name. */
int hu_net_rules_match_name(const struct hu_net_rules *rules, const char *name);
/* "a.b.c.d/len" into buf (at least 19 bytes). */
void hu_cidr4_format(const struct hu_cidr4 *c, char *buf, size_t n);

/* Parse an IPv6 address or CIDR (inet_pton's syntax, then "/len"); the
 * address is masked to its prefix. */
int hu_cidr6_parse(const char *s, struct hu_cidr6 *out, hu_err *err);
/* "addr/len" into buf (at least HU_CIDR6_TEXT bytes). */
#define HU_CIDR6_TEXT 48
void hu_cidr6_format(const struct hu_cidr6 *c, char *buf, size_t n);
/* The built-in denials (netdeny.c): CIDRs no sandbox reaches unless the
 * operator's network_allow lists an exception. */
extern const char *const hu_net_builtin_deny4[];
extern const size_t hu_net_builtin_deny4_len;
extern const char *const hu_net_builtin_deny6[];
extern const size_t hu_net_builtin_deny6_len;
/* Whether an address (host order; IPv6: 16 bytes, network order) lies in
 * one of them: 1 or 0. */
int hu_net_builtin_denied4(uint32_t addr);
int hu_net_builtin_denied6(const uint8_t addr[16]);
/* Whether the rules hold any entry (of either family). */
int hu_net_rules_any(const struct hu_net_rules *rules);
/* The operator's IPv6 pool: "none" or an IPv6 CIDR of /126 or shorter. */
int hu_net_pool6_parse(struct hu_net_config *cfg, const char *pool6, hu_err *err);
/* The IPv6 addresses of slot `slot` (a /127): gateway and sandbox end. */
int hu_net6_slot_addrs(const struct hu_net_config *cfg, uint32_t slot, uint8_t gw[16], uint8_t addr[16], hu_err *err);

/* The per-sandbox flow limit (HUTCH_NET_FLOWS, network_flows): "0" (no
 * limit) or 16 .. HU_NET_FLOWS_MAX. */
#define HU_NET_FLOWS_DEFAULT "1024"
#define HU_NET_FLOWS_MAX 1048576u
int hu_net_flows_parse(const char *v, unsigned *out, hu_err *err);

/* Parse the operator's strings (mode, name, pool, resolver, uplinks,
 * exceptions, extra denials); a missing resolver means the host's first
 * nameserver. */
int hu_net_config_parse(struct hu_net_config *cfg, const char *mode, const char *name, const char *pool,
			const char *dns, const char *uplinks, const char *allow, const char *deny, hu_err *err);

struct hu_runtime;
/* The runtime's network mode (the daemon decides from it what
 * allow_internet_access gives). */
enum hu_net_mode hu_runtime_net_mode(const struct hu_runtime *rt);
/* The sandboxes' resolver (host order; 0 = none). */
uint32_t hu_net_resolver(const struct hu_runtime *rt);
/* One line for the log: the network mode, and whether sandboxes get IPv6
 * (through which uplinks) or why not. */
void hu_runtime_net_describe(const struct hu_runtime *rt, char *buf, size_t n);
/* Replace the allowOut/denyOut rules of a live sandbox that has internet
 * access (one nftables transaction). */
int hu_net_update(struct hu_runtime *rt, const char *id, const struct hu_net_rules *rules, hu_err *err);

/* The daemon's DNS proxy (dns_proxy.c) asks the runtime: which sandbox
 * sent from `addr` (a sandbox end of the pool; its slot file names it),
 * into id (HU_ID_MAX + 1 bytes). ENOENT when none. */
int hu_net_addr_owner(struct hu_runtime *rt, uint32_t addr, char *id, size_t cap, hu_err *err);
/* Allow the sandbox at sbx_addr (one hu_net_addr_owner accepted) to reach
 * addrs (host order) for ttl seconds: elements of the shared set dallow
 * that time out on their own. */
int hu_net_learn(struct hu_runtime *rt, uint32_t sbx_addr, const uint32_t *addrs, unsigned n, unsigned ttl,
		 hu_err *err);
/* The same for IPv6 addresses (AAAA records; 16 bytes each, network order):
 * elements of dallow6. Where sandboxes have no IPv6 (this host gives them
 * none) it does nothing and returns 0: there is nothing to open. */
int hu_net_learn6(struct hu_runtime *rt, uint32_t sbx_addr, const uint8_t (*addrs)[16], unsigned n, unsigned ttl,
		  hu_err *err);

/* The same, for many answers at once and off the event loop: a learner
 * has its own nftables context, so one thread (the DNS proxy's worker) may
 * run it while the runtime's own context serves the loop. It reads the
 * runtime's network configuration, which is fixed once the runtime is
 * open; free it before closing the runtime. */
struct hu_net_learner;
struct hu_net_learn_req {
	uint32_t sbx_addr;       /* as for hu_net_learn */
	const uint32_t *a4;      /* host order */
	unsigned n4, ttl4;
	const uint8_t (*a6)[16]; /* network order; skipped where sandboxes have no IPv6 */
	unsigned n6, ttl6;
	int remove;              /* take them out again (their sandbox went meanwhile) */
};
int hu_net_learner_open(struct hu_runtime *rt, struct hu_net_learner **out, hu_err *err);
/* Every request's elements in one nftables transaction: all or none. */
int hu_net_learner_run(struct hu_net_learner *l, const struct hu_net_learn_req *reqs, unsigned n, hu_err *err);
void hu_net_learner_free(struct hu_net_learner *l);

/* The addresses of slot `slot`: gateway (host end) and sandbox end. */
int hu_net_slot_addrs(const struct hu_net_config *cfg, uint32_t slot, uint32_t *gw, uint32_t *addr, hu_err *err);
/* The host interface name of slot `slot`. */
void hu_net_ifname(const struct hu_net_config *cfg, uint32_t slot, char buf[IF_NAMESIZE]);

#endif
