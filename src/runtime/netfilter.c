/*
 * The nftables side of the network boundary, in-process through
 * libnftables: every change is one batch (one netlink transaction, applied
 * atomically or not at all), never an `nft` process.
 *
 * Table inet <name>:
 *   forward, input (filter hooks): traffic from a sandbox interface jumps to
 *     from_sbx; traffic towards one is accepted only as part of a connection
 *     the sandbox started.
 *   from_sbx: IPv6 dropped; the verdict map `sbx` (host interface ->
 *     goto sbx_<id>) sends the packet to its sandbox's chain; anything else
 *     is dropped.
 *   sbx_<id>: anti-spoofing (only the sandbox's own address), established
 *     flows, DNS to the configured resolver (only through the DNAT, only port
 *     53, rate-limited), then the hard denials (the pool: other sandboxes),
 *     the operator's denials (host addresses, private, link-local, multicast,
 *     reserved) unless the operator's exceptions allow, the sandbox's
 *     allowOut (accept), denyOut (drop), accept.
 *   pre (nat): DNS sent to any host address from a sandbox -> the resolver.
 *   post (nat): masquerade what leaves the pool through a non-sandbox link.
 */
#include <nftables/libnftables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/net_internal.h"

/* Ranges no sandbox reaches unless the operator lists an exception:
 * "this network", private (RFC 1918), shared (CGNAT), loopback, link-local
 * and cloud metadata, IETF protocol assignments, benchmarking, multicast,
 * reserved and broadcast. */
static const char op_deny_v4[] = "0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12, "
				 "192.0.0.0/24, 192.168.0.0/16, 198.18.0.0/15, 224.0.0.0/4, 240.0.0.0/4";

int hu_nft_open(struct nft_ctx **out, hu_err *err)
{
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

static void put_elements(FILE *f, const char *table, const char *set, const struct hu_cidr4 *list, unsigned n)
{
	char c[24];
	if (n == 0)
		return;
	fprintf(f, "add element inet %s %s { ", table, set);
	for (unsigned i = 0; i < n; i++) {
		hu_cidr4_format(&list[i], c, sizeof(c));
		fprintf(f, "%s%s", i ? ", " : "", c);
	}
	fprintf(f, " }\n");
}

static void ipv4_text(uint32_t a, char *buf, size_t n)
{
	snprintf(buf, n, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

/* nft identifiers take no '-': sandbox ids ([a-z0-9-]) map to [a-z0-9_],
 * one to one, since '_' never occurs in an id. */
static void nft_name(const char *id, char buf[HU_ID_MAX])
{
	size_t i = 0;
	for (; id[i] && i < HU_ID_MAX - 1; i++)
		buf[i] = id[i] == '-' ? '_' : id[i];
	buf[i] = '\0';
}

int hu_nft_host_setup(struct nft_ctx *ctx, const struct hu_net_config *cfg, hu_err *err)
{
	const char *t = cfg->name;
	struct batch b;
	char pool[24], res[16];

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
	/* the map holds the live sandboxes: created if missing, never flushed */
	fprintf(f, "add map inet %s sbx { type ifname : verdict; }\n", t);
	fprintf(f, "add set inet %s opdeny { type ipv4_addr; flags interval; auto-merge; }\n", t);
	fprintf(f, "add set inet %s opallow { type ipv4_addr; flags interval; auto-merge; }\n", t);
	/* idempotent: a second runtime (hutch run beside the daemon) rewrites
	 * the same rules in one transaction, never leaving a gap */
	fprintf(f, "flush chain inet %s forward\nflush chain inet %s input\nflush chain inet %s pre\n", t, t, t);
	fprintf(f, "flush chain inet %s post\nflush chain inet %s from_sbx\n", t, t);
	fprintf(f, "flush set inet %s opdeny\nflush set inet %s opallow\n", t, t);
	fprintf(f, "add element inet %s opdeny { %s }\n", t, op_deny_v4);
	put_elements(f, t, "opallow", cfg->op.allow, cfg->op.n_allow);
	put_elements(f, t, "opdeny", cfg->op.deny, cfg->op.n_deny);
	fprintf(f, "add rule inet %s forward iifname \"%s-*\" jump from_sbx\n", t, t);
	fprintf(f, "add rule inet %s forward oifname \"%s-*\" ct state established,related accept\n", t, t);
	fprintf(f, "add rule inet %s forward oifname \"%s-*\" drop\n", t, t);
	fprintf(f, "add rule inet %s input iifname \"%s-*\" jump from_sbx\n", t, t);
	fprintf(f, "add rule inet %s from_sbx meta nfproto ipv6 drop\n", t);
	fprintf(f, "add rule inet %s from_sbx iifname vmap @sbx\n", t);
	fprintf(f, "add rule inet %s from_sbx drop\n", t);
	if (cfg->resolver) {
		ipv4_text(cfg->resolver, res, sizeof(res));
		fprintf(f,
			"add rule inet %s pre iifname \"%s-*\" fib daddr type local meta l4proto { tcp, udp } th dport 53 "
			"dnat ip to %s:53\n",
			t, t, res);
	}
	fprintf(f, "add rule inet %s post ip saddr %s oifname != \"%s-*\" masquerade\n", t, pool, t);
	if (batch_close(&b, err) < 0)
		return -1;
	int rc = hu_nft_run(ctx, b.buf, "host-wide setup", err);
	free(b.buf);
	return rc;
}

int hu_nft_sandbox_add(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *raw_id, const char *ifname,
		       uint32_t addr, const struct hu_net_rules *rules, hu_err *err)
{
	char id[HU_ID_MAX];
	const char *t = cfg->name;
	struct batch b;
	char a[16], res[16], pool[24], setname[HU_ID_MAX + 8];
	nft_name(raw_id, id);

	if (batch_open(&b, err) < 0)
		return -1;
	ipv4_text(addr, a, sizeof(a));
	hu_cidr4_format(&cfg->pool, pool, sizeof(pool));
	FILE *f = b.f;
	fprintf(f, "add chain inet %s sbx_%s\n", t, id);
	fprintf(f, "add set inet %s allow_%s { type ipv4_addr; flags interval; auto-merge; }\n", t, id);
	fprintf(f, "add set inet %s deny_%s { type ipv4_addr; flags interval; auto-merge; }\n", t, id);
	snprintf(setname, sizeof(setname), "allow_%s", id);
	put_elements(f, t, setname, rules->allow, rules->n_allow);
	snprintf(setname, sizeof(setname), "deny_%s", id);
	put_elements(f, t, setname, rules->deny, rules->n_deny);
	fprintf(f, "add rule inet %s sbx_%s ip saddr != %s drop\n", t, id, a);
	fprintf(f, "add rule inet %s sbx_%s ct state established,related accept\n", t, id);
	if (cfg->resolver) {
		ipv4_text(cfg->resolver, res, sizeof(res));
		fprintf(f,
			"add rule inet %s sbx_%s ct status dnat ip daddr %s meta l4proto { tcp, udp } th dport 53 "
			"limit rate over 20/second burst 40 packets drop\n",
			t, id, res);
		fprintf(f, "add rule inet %s sbx_%s ct status dnat ip daddr %s meta l4proto { tcp, udp } th dport 53 accept\n",
			t, id, res);
	}
	fprintf(f, "add rule inet %s sbx_%s ip daddr %s drop\n", t, id, pool);
	fprintf(f, "add rule inet %s sbx_%s fib daddr type local ip daddr != @opallow drop\n", t, id);
	fprintf(f, "add rule inet %s sbx_%s ip daddr @opdeny ip daddr != @opallow drop\n", t, id);
	fprintf(f, "add rule inet %s sbx_%s ip daddr @allow_%s accept\n", t, id, id);
	fprintf(f, "add rule inet %s sbx_%s ip daddr @deny_%s drop\n", t, id, id);
	fprintf(f, "add rule inet %s sbx_%s accept\n", t, id);
	/* last: the map element that makes the chain reachable (one transaction) */
	fprintf(f, "add element inet %s sbx { \"%s\" : goto sbx_%s }\n", t, ifname, id);
	if (batch_close(&b, err) < 0)
		return -1;
	int rc = hu_nft_run(ctx, b.buf, "add sandbox rules", err);
	free(b.buf);
	return rc;
}

int hu_nft_sandbox_rules(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *raw_id,
			 const struct hu_net_rules *rules, hu_err *err)
{
	char id[HU_ID_MAX];
	const char *t = cfg->name;
	struct batch b;
	char setname[HU_ID_MAX + 8];
	nft_name(raw_id, id);

	if (batch_open(&b, err) < 0)
		return -1;
	fprintf(b.f, "flush set inet %s allow_%s\nflush set inet %s deny_%s\n", t, id, t, id);
	snprintf(setname, sizeof(setname), "allow_%s", id);
	put_elements(b.f, t, setname, rules->allow, rules->n_allow);
	snprintf(setname, sizeof(setname), "deny_%s", id);
	put_elements(b.f, t, setname, rules->deny, rules->n_deny);
	if (batch_close(&b, err) < 0)
		return -1;
	int rc = hu_nft_run(ctx, b.buf, "update sandbox rules", err);
	free(b.buf);
	return rc;
}

int hu_nft_sandbox_del(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *raw_id, const char *ifname,
		       hu_err *err)
{
	char id[HU_ID_MAX];
	const char *t = cfg->name;
	char cmds[5][160];
	int n = 0, rc = 0;
	nft_name(raw_id, id);

	/* the map element first (nothing reaches the chain any more), then the
	 * chain (its rules reference the sets), then the sets */
	if (ifname)
		snprintf(cmds[n++], sizeof(cmds[0]), "delete element inet %s sbx { \"%s\" }\n", t, ifname);
	snprintf(cmds[n++], sizeof(cmds[0]), "flush chain inet %s sbx_%s\n", t, id);
	snprintf(cmds[n++], sizeof(cmds[0]), "delete chain inet %s sbx_%s\n", t, id);
	snprintf(cmds[n++], sizeof(cmds[0]), "delete set inet %s allow_%s\n", t, id);
	snprintf(cmds[n++], sizeof(cmds[0]), "delete set inet %s deny_%s\n", t, id);
	char all[sizeof(cmds)];
	all[0] = '\0';
	for (int i = 0; i < n; i++)
		strcat(all, cmds[i]);
	if (nft_run_cmd_from_buffer(ctx, all) == 0)
		return 0;
	/* Part of it is already gone (a half-made sandbox, a leftover): remove
	 * what is there, one object at a time. nftables 1.0.6 has no "destroy"
	 * (delete-if-present) command. */
	for (int i = 0; i < n; i++)
		if (nft_run_cmd_from_buffer(ctx, cmds[i]) != 0 && i >= 2 && rc == 0 &&
		    hu_nft_object_exists(ctx, cfg, cmds[i]))
			rc = hu_err_set(err, EIO, "nftables: %.*s failed", (int)strcspn(cmds[i], "\n"), cmds[i]);
	return rc;
}

/* Whether the object a failed "delete chain/set ..." named still exists:
 * a "list" of it succeeds. */
int hu_nft_object_exists(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *delete_cmd)
{
	char cmd[200];
	(void)cfg;
	if (strncmp(delete_cmd, "delete ", 7) != 0)
		return 0;
	snprintf(cmd, sizeof(cmd), "list %s", delete_cmd + 7);
	return nft_run_cmd_from_buffer(ctx, cmd) == 0;
}
