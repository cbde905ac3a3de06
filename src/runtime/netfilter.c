/*
 * The nftables side of the network boundary, in-process through
 * libnftables: every change is one batch (one netlink transaction, applied
 * atomically or not at all), never an `nft` process.
 *
 * All rules are shared by every sandbox and keyed by the host interface a
 * packet came from, so a sandbox without allowOut/denyOut costs no nftables
 * work at all when it is created or destroyed, and no per-sandbox chain
 * exists. (libnftables 1.0.6 reads the whole table before any change to set
 * elements; two sets and a chain per sandbox made that read, and so every
 * create, grow with the number of live sandboxes.)
 *
 * Table inet <name>:
 *   forward, input (filter hooks): traffic from a sandbox interface jumps to
 *     from_sbx; traffic towards one is accepted only as part of a connection
 *     the sandbox started.
 *   from_sbx: IPv6 dropped (unless this host gives sandboxes IPv6: then
 *     netfilter6.c's rules, in the same order); a source address that does not route back
 *     through the interface it came from (reverse path: spoofing) dropped;
 *     a new flow (either family) dropped while the interface already holds
 *     cfg->flows live connections (dynamic set flows, ct count): the host's
 *     conntrack table is shared, and one sandbox must not fill it;
 *     (no shortcut for established flows: a rule change applies to open
 *     connections at once); DNS to the configured resolver only through the
 *     DNAT below, port 53, at most 20 new flows a second per interface
 *     (dynamic set dnsrate); the pool (other sandboxes); host addresses and
 *     the operator's denials (opdeny: the built-in ones of netdeny.c,
 *     private, link-local, metadata, multicast, reserved, and the
 *     operator's network_deny) unless the operator's exceptions (opallow) allow;
 *     then the sandbox's own rules: uallow (ifname . address range, accept)
 *     before udeny (drop); else accept.
 *   pre (nat): DNS sent to any host address from a sandbox -> the resolver.
 *   post (nat): masquerade what leaves the pool through a non-sandbox link.
 * A sandbox's own rules are the elements of uallow/udeny keyed by its
 * interface name; teardown removes them (and its dnsrate entry).
 *
 * Domain rules and allowlists (the daemon's DNS proxy, daemon/dns_proxy.c):
 *   dnsproxy (ifname): the sandboxes whose denyOut covers everything. Their
 *     DNS (UDP) is redirected to the proxy's port on their gateway, never
 *     to the resolver (a runtime without the proxy leaves them no DNS:
 *     closed, not open); TCP DNS is dropped.
 *   dallow (ifname . address, timeout): what their allowed names resolved
 *     to, put there by the proxy before it hands the answer over, gone
 *     when the record's TTL (clamped) ends. Accepted like uallow.
 *   dallow6 (ifname . IPv6 address, timeout): the same for AAAA records,
 *     only where sandboxes have IPv6 (netfilter6.c places its rule).
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/net6.h"
#include "runtime/net_internal.h"
#include "runtime/nft_lib.h"
#include "util/cleanup.h"

/* The sets whose elements carry a sandbox's interface name. */
static const char *const per_sandbox_sets[] = {"uallow", "udeny", "dnsrate", "dallow", "dnsproxy", "uallow6", "udeny6",
					      "dallow6", "flows"};

int hu_nft_open(struct nft_ctx **out, hu_err *err)
{
	if (hu_nft_lib_load(err) < 0)
		return -1;
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!ctx)
		return hu_err_set(err, ENOMEM, "nftables context");
	if (nft_ctx_buffer_error(ctx) < 0 || nft_ctx_buffer_output(ctx) < 0) {
		nft_ctx_free(ctx);
		return hu_err_set(err, ENOMEM, "nftables buffers");
	}
	*out = ctx;
	return 0;
}

int hu_nft_run(struct nft_ctx *ctx, const char *batch, const char *what, hu_err *err)
{
	if (nft_run_cmd_from_buffer(ctx, batch) == 0)
		return 0;
	const char *e = nft_ctx_get_error_buffer(ctx);
	char msg[300];
	/* first line of nft's report: the rest repeats the input */
	snprintf(msg, sizeof(msg), "%s", e ? e : "");
	msg[strcspn(msg, "\n")] = '\0';
	return hu_err_set(err, EIO, "nftables: %s: %s", what, msg[0] ? msg : "failed");
}

/* A batch under construction (open_memstream: no size bookkeeping). */
struct batch {
	FILE *f;
	char *buf;
	size_t len;
};

static int batch_open(struct batch *b, hu_err *err)
{
	b->buf = NULL;
	b->f = open_memstream(&b->buf, &b->len);
	if (!b->f)
		return hu_err_sys(err, "open_memstream");
	return 0;
}

static int batch_close(struct batch *b, hu_err *err)
{
	int bad = ferror(b->f);
	if (fclose(b->f) != 0 || bad) {
		free(b->buf);
		b->buf = NULL;
		return hu_err_set(err, ENOMEM, "nftables batch");
	}
	return 0;
}

static int batch_run(struct nft_ctx *ctx, struct batch *b, const char *what, hu_err *err)
{
	if (batch_close(b, err) < 0)
		return -1;
	int rc = b->len ? hu_nft_run(ctx, b->buf, what, err) : 0;
	free(b->buf);
	return rc;
}

static void ipv4_text(uint32_t a, char *buf, size_t n)
{
	snprintf(buf, n, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

/* The allowlisted sandboxes' DNS: to the daemon's proxy, rate-limited like
 * the direct path, and never to the resolver itself. */
static void put_proxy_rules(FILE *f, const struct hu_net_config *cfg, const char *res)
{
	const char *t = cfg->name;
	unsigned port = cfg->dns_proxy_port;

	fprintf(f, "add rule inet %s from_sbx iifname @dnsproxy ct status dnat ip daddr %s drop\n", t, res);
	if (!port)
		return;
	fprintf(f,
		"add rule inet %s pre iifname @dnsproxy fib daddr type local udp dport 53 redirect to :%u\n", t, port);
	/* every datagram counts, not only new flows: the proxy runs on the
	 * daemon's loop, which one flow's flood must not keep busy */
	fprintf(f,
		"add rule inet %s from_sbx iifname @dnsproxy ct status dnat fib daddr type local "
		"udp dport %u update @dnsrate { iifname limit rate over 20/second burst 40 packets } drop\n",
		t, port);
	fprintf(f, "add rule inet %s from_sbx iifname @dnsproxy ct status dnat fib daddr type local udp dport %u accept\n",
		t, port);
	/* the proxy's socket listens on every host address: only sandboxes
	 * reach it */
	fprintf(f, "add rule inet %s input iifname != \"%s-*\" udp dport %u drop\n", t, t, port);
}

void hu_nft_put_elements(FILE *f, const char *t, const char *set, const char *const *list, size_t n)
{
	fprintf(f, "add element inet %s %s {", t, set);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s %s", i ? "," : "", list[i]);
	fprintf(f, " }\n");
}

void hu_nft_put_dest_rules(FILE *f, const char *t, const char *family, const char *suffix, const char *pool)
{
	fprintf(f, "add rule inet %s from_sbx %s daddr %s drop\n", t, family, pool);
	fprintf(f, "add rule inet %s from_sbx fib daddr type local %s daddr != @opallow%s drop\n", t, family, suffix);
	fprintf(f, "add rule inet %s from_sbx %s daddr @opdeny%s %s daddr != @opallow%s drop\n", t, family, suffix, family,
		suffix);
	fprintf(f, "add rule inet %s from_sbx iifname . %s daddr @uallow%s accept\n", t, family, suffix);
	fprintf(f, "add rule inet %s from_sbx iifname . %s daddr @dallow%s accept\n", t, family, suffix);
	fprintf(f, "add rule inet %s from_sbx iifname . %s daddr @udeny%s drop\n", t, family, suffix);
}

int hu_nft_host_setup(struct nft_ctx *ctx, const struct hu_net_config *cfg, hu_err *err)
{
	const char *t = cfg->name;
	struct batch b;
	char pool[24], res[16], c[24];

	if (batch_open(&b, err) < 0)
		return -1;
	hu_cidr4_format(&cfg->pool, pool, sizeof(pool));
	FILE *f = b.f;
	fprintf(f, "add table inet %s\n", t);
	fprintf(f, "add chain inet %s forward { type filter hook forward priority -10; policy accept; }\n", t);
	fprintf(f, "add chain inet %s input { type filter hook input priority -10; policy accept; }\n", t);
	fprintf(f, "add chain inet %s pre { type nat hook prerouting priority -110; policy accept; }\n", t);
	fprintf(f, "add chain inet %s post { type nat hook postrouting priority 110; policy accept; }\n", t);
	fprintf(f, "add chain inet %s from_sbx\n", t);
	fprintf(f, "add set inet %s opdeny { type ipv4_addr; flags interval; auto-merge; }\n", t);
	fprintf(f, "add set inet %s opallow { type ipv4_addr; flags interval; auto-merge; }\n", t);
	/* the live sandboxes' state: created if missing, never flushed here */
	fprintf(f, "add set inet %s uallow { type ifname . ipv4_addr; flags interval; }\n", t);
	fprintf(f, "add set inet %s udeny { type ifname . ipv4_addr; flags interval; }\n", t);
	fprintf(f, "add set inet %s dnsrate { type ifname; flags dynamic,timeout; timeout 60s; }\n", t);
	fprintf(f, "add set inet %s dallow { type ifname . ipv4_addr; flags timeout; }\n", t);
	fprintf(f, "add set inet %s dnsproxy { type ifname; }\n", t);
	/* one element per sandbox interface, holding the list of its live
	 * connections (the kernel drops those that ended as it counts) */
	fprintf(f, "add set inet %s flows { type ifname; flags dynamic; }\n", t);
	/* idempotent: a second runtime (hutch run beside the daemon) rewrites
	 * the same rules in one transaction, never leaving a gap */
	fprintf(f, "flush chain inet %s forward\nflush chain inet %s input\nflush chain inet %s pre\n", t, t, t);
	fprintf(f, "flush chain inet %s post\nflush chain inet %s from_sbx\n", t, t);
	fprintf(f, "flush set inet %s opdeny\nflush set inet %s opallow\n", t, t);
	hu_nft_put_elements(f, t, "opdeny", hu_net_builtin_deny4, hu_net_builtin_deny4_len);
	for (unsigned i = 0; i < cfg->op.n_deny; i++) {
		hu_cidr4_format(&cfg->op.deny[i], c, sizeof(c));
		fprintf(f, "add element inet %s opdeny { %s }\n", t, c);
	}
	for (unsigned i = 0; i < cfg->op.n_allow; i++) {
		hu_cidr4_format(&cfg->op.allow[i], c, sizeof(c));
		fprintf(f, "add element inet %s opallow { %s }\n", t, c);
	}
	hu_nft6_put_sets(f, cfg);
	fprintf(f, "add rule inet %s forward iifname \"%s-*\" jump from_sbx\n", t, t);
	fprintf(f, "add rule inet %s forward oifname \"%s-*\" ct state established,related accept\n", t, t);
	fprintf(f, "add rule inet %s forward oifname \"%s-*\" drop\n", t, t);
	hu_nft6_put_input(f, cfg);
	fprintf(f, "add rule inet %s input iifname \"%s-*\" jump from_sbx\n", t, t);
	hu_nft6_put_from_sbx_first(f, cfg);
	/* root inside may use any source address: only the one that routes
	 * back through this interface (its own) passes */
	fprintf(f, "add rule inet %s from_sbx fib saddr . iif oif missing drop\n", t);
	/* before anything accepts: every flow the host tracks for a sandbox
	 * (DNS, the proxy, the internet, either family) counts */
	if (cfg->flows)
		fprintf(f, "add rule inet %s from_sbx ct state new add @flows { iifname ct count over %u } drop\n", t,
			cfg->flows);
	/* No blanket "established: accept": every packet a sandbox sends is
	 * judged by the rules as they are now, so a PUT /network that denies a
	 * destination also stops the connections already open to it. */
	if (cfg->resolver) {
		ipv4_text(cfg->resolver, res, sizeof(res));
		put_proxy_rules(f, cfg, res);
		fprintf(f,
			"add rule inet %s from_sbx ct state new ct status dnat ip daddr %s meta l4proto { tcp, udp } "
			"th dport 53 update @dnsrate { iifname limit rate over 20/second burst 40 packets } drop\n",
			t, res);
		fprintf(f, "add rule inet %s from_sbx ct status dnat ip daddr %s meta l4proto { tcp, udp } th dport 53 accept\n",
			t, res);
		fprintf(f,
			"add rule inet %s pre iifname \"%s-*\" fib daddr type local meta l4proto { tcp, udp } th dport 53 "
			"dnat ip to %s:53\n",
			t, t, res);
	}
	hu_nft_put_dest_rules(f, t, "ip", "", pool);
	hu_nft6_put_from_sbx(f, cfg);
	fprintf(f, "add rule inet %s from_sbx accept\n", t);
	fprintf(f, "add rule inet %s post ip saddr %s oifname != \"%s-*\" masquerade\n", t, pool, t);
	hu_nft6_put_post(f, cfg);
	return batch_run(ctx, &b, "host-wide setup", err);
}

/* Whether prefix a lies inside prefix b. */
static int cidr_within(const struct hu_cidr4 *a, const struct hu_cidr4 *b)
{
	uint32_t mask = b->len ? 0xffffffffu << (32 - b->len) : 0;
	return a->len >= b->len && (a->addr & mask) == b->addr;
}

/* "add element" lines for one list. Prefixes either nest or are disjoint:
 * dropping every one that lies inside another (the first of equal ones
 * kept) leaves no overlap, which an interval set would refuse. */
static void put_rules(FILE *f, const char *t, const char *set, const char *ifname, const struct hu_cidr4 *list,
		      unsigned n)
{
	char c[24];

	for (unsigned i = 0; i < n; i++) {
		int covered = 0;
		for (unsigned j = 0; j < n && !covered; j++)
			covered = j != i && cidr_within(&list[i], &list[j]) &&
				  (list[i].len != list[j].len || j < i);
		if (covered)
			continue;
		hu_cidr4_format(&list[i], c, sizeof(c));
		fprintf(f, "add element inet %s %s { \"%s\" . %s }\n", t, set, ifname, c);
	}
}

/* "delete element" lines for every element of `set` (JSON listing) keyed by
 * ifname. Elements come back as an address, a prefix or a range. */
static void put_deletes(FILE *f, const char *t, const char *set, const json_t *elems, const char *ifname)
{
	const json_t *e, *key, *val, *part;
	size_t i;

	json_array_foreach(elems, i, e) {
		if (json_is_object(e) && json_object_get(e, "elem"))
			e = json_object_get(json_object_get(e, "elem"), "val"); /* dnsrate: elements with state */
		key = json_is_object(e) ? json_object_get(e, "concat") : NULL;
		if (key) {
			val = json_array_get(key, 1);
			key = json_array_get(key, 0);
		} else {
			key = e;
			val = NULL;
		}
		if (!json_is_string(key) || strcmp(json_string_value(key), ifname))
			continue;
		fprintf(f, "delete element inet %s %s { \"%s\"", t, set, ifname);
		if (json_is_string(val)) {
			fprintf(f, " . %s", json_string_value(val));
		} else if ((part = json_object_get(val, "prefix")) != NULL) {
			fprintf(f, " . %s/%lld", json_string_value(json_object_get(part, "addr")),
				json_integer_value(json_object_get(part, "len")));
		} else if ((part = json_object_get(val, "range")) != NULL) {
			fprintf(f, " . %s-%s", json_string_value(json_array_get(part, 0)),
				json_string_value(json_array_get(part, 1)));
		}
		fprintf(f, " }\n");
	}
}

/* Delete lines for everything the sets hold for ifname. */
static int put_current_deletes(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname, FILE *f,
			       hu_err *err)
{
	char cmd[160];

	for (size_t s = 0; s < HU_ARRAY_LEN(per_sandbox_sets); s++) {
		snprintf(cmd, sizeof(cmd), "list set inet %s %s", cfg->name, per_sandbox_sets[s]);
		unsigned flags = nft_ctx_output_get_flags(ctx);
		nft_ctx_output_set_flags(ctx, flags | NFT_CTX_OUTPUT_JSON);
		int rc = hu_nft_run(ctx, cmd, "read the sandbox rules", err);
		nft_ctx_output_set_flags(ctx, flags);
		if (rc < 0)
			return -1;
		json_t *doc = json_loads(nft_ctx_get_output_buffer(ctx), 0, NULL);
		const json_t *items = json_object_get(doc, "nftables"), *item;
		size_t i;
		json_array_foreach(items, i, item) {
			const json_t *elems = json_object_get(json_object_get(item, "set"), "elem");
			if (elems)
				put_deletes(f, cfg->name, per_sandbox_sets[s], elems, ifname);
		}
		json_decref(doc);
	}
	return 0;
}

/* A sandbox's allowOut and denyOut as set elements keyed by its interface
 * (an allowlist also joins dnsproxy). Domain rules need the proxy. */
static int put_sandbox_rules(FILE *f, const struct hu_net_config *cfg, const char *ifname,
			     const struct hu_net_rules *rules, hu_err *err)
{
	int proxy = cfg->dns_proxy_port && cfg->resolver;

	if (rules->n_allow_dom && !proxy)
		return hu_err_set(err, -EINVAL, "domain rules need the daemon's DNS proxy (and a resolver)");
	put_rules(f, cfg->name, "uallow", ifname, rules->allow, rules->n_allow);
	put_rules(f, cfg->name, "udeny", ifname, rules->deny, rules->n_deny);
	hu_nft6_put_sandbox_rules(f, cfg, ifname, rules);
	if (proxy && hu_net_rules_allowlist(rules))
		fprintf(f, "add element inet %s dnsproxy { \"%s\" }\n", cfg->name, ifname);
	return 0;
}

/* Drop a batch that will not run. */
static void batch_drop(struct batch *b)
{
	hu_err ignore;
	if (batch_close(b, &ignore) == 0)
		free(b->buf);
}

int hu_nft_sandbox_add(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname,
		       const struct hu_net_rules *rules, hu_err *err)
{
	struct batch b;

	if (!hu_net_rules_any(rules))
		return 0; /* the shared rules are all it needs */
	if (batch_open(&b, err) < 0)
		return -1;
	if (put_sandbox_rules(b.f, cfg, ifname, rules, err) < 0) {
		batch_drop(&b);
		return -1;
	}
	return batch_run(ctx, &b, "add sandbox rules", err);
}

/* A batch that starts by removing every rule the sandbox has now. */
static int open_with_deletes(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname,
			     struct batch *b, hu_err *err)
{
	if (batch_open(b, err) < 0)
		return -1;
	if (put_current_deletes(ctx, cfg, ifname, b->f, err) < 0) {
		batch_drop(b);
		return -1;
	}
	return 0;
}

int hu_nft_sandbox_rules(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname,
			 const struct hu_net_rules *rules, hu_err *err)
{
	struct batch b;

	/* the old rules out and the new ones in, in one transaction */
	if (open_with_deletes(ctx, cfg, ifname, &b, err) < 0)
		return -1;
	if (put_sandbox_rules(b.f, cfg, ifname, rules, err) < 0) {
		batch_drop(&b);
		return -1;
	}
	return batch_run(ctx, &b, "update sandbox rules", err);
}

int hu_nft_sandbox_del(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname, hu_err *err)
{
	struct batch b;

	if (open_with_deletes(ctx, cfg, ifname, &b, err) < 0)
		return -1;
	return batch_run(ctx, &b, "remove sandbox rules", err);
}

/* add (so that it exists), delete, add again: within one transaction this
 * leaves the element with a fresh timeout whether it was there or not (a
 * plain add keeps an existing element's old expiry) */
static void put_learn(FILE *f, const char *t, const char *set, const char *ifname, const char *a, unsigned ttl)
{
	fprintf(f, "add element inet %s %s { \"%s\" . %s timeout %us }\n", t, set, ifname, a, ttl);
	fprintf(f, "delete element inet %s %s { \"%s\" . %s }\n", t, set, ifname, a);
	fprintf(f, "add element inet %s %s { \"%s\" . %s timeout %us }\n", t, set, ifname, a, ttl);
}

int hu_nft_learn(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname, const uint32_t *addrs,
		 unsigned n, unsigned ttl, hu_err *err)
{
	struct batch b;
	char a[16];

	if (batch_open(&b, err) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		ipv4_text(addrs[i], a, sizeof(a));
		put_learn(b.f, cfg->name, "dallow", ifname, a, ttl);
	}
	return batch_run(ctx, &b, "allow resolved addresses", err);
}

int hu_nft_learn6(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname,
		  const uint8_t (*addrs)[16], unsigned n, unsigned ttl, hu_err *err)
{
	struct batch b;
	char a[INET6_ADDRSTRLEN];

	if (batch_open(&b, err) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		if (!inet_ntop(AF_INET6, addrs[i], a, sizeof(a))) {
			batch_drop(&b);
			return hu_err_sys(err, "inet_ntop");
		}
		put_learn(b.f, cfg->name, "dallow6", ifname, a, ttl);
	}
	return batch_run(ctx, &b, "allow resolved IPv6 addresses", err);
}

/* add then delete: gone afterwards, whether it was there or not (a plain
 * delete of a missing element fails the whole transaction) */
static void put_unlearn(FILE *f, const char *t, const char *set, const char *ifname, const char *a)
{
	fprintf(f, "add element inet %s %s { \"%s\" . %s timeout 1s }\n", t, set, ifname, a);
	fprintf(f, "delete element inet %s %s { \"%s\" . %s }\n", t, set, ifname, a);
}

/* One entry's lines into an open batch. */
static int put_learn_entry(FILE *f, const struct hu_net_config *cfg, const struct hu_nft_learn_entry *e, hu_err *err)
{
	char a[INET6_ADDRSTRLEN];

	for (unsigned i = 0; i < e->n4; i++) {
		ipv4_text(e->a4[i], a, sizeof(a));
		if (e->remove)
			put_unlearn(f, cfg->name, "dallow", e->ifname, a);
		else
			put_learn(f, cfg->name, "dallow", e->ifname, a, e->ttl4);
	}
	for (unsigned i = 0; e->a6 && i < e->n6; i++) {
		if (!inet_ntop(AF_INET6, e->a6[i], a, sizeof(a)))
			return hu_err_sys(err, "inet_ntop");
		if (e->remove)
			put_unlearn(f, cfg->name, "dallow6", e->ifname, a);
		else
			put_learn(f, cfg->name, "dallow6", e->ifname, a, e->ttl6);
	}
	return 0;
}

int hu_nft_learn_batch(struct nft_ctx *ctx, const struct hu_net_config *cfg, const struct hu_nft_learn_entry *e,
		       unsigned n, hu_err *err)
{
	struct batch b;

	if (batch_open(&b, err) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++)
		if (put_learn_entry(b.f, cfg, &e[i], err) < 0) {
			batch_drop(&b);
			return -1;
		}
	return batch_run(ctx, &b, "allow resolved addresses", err);
}
