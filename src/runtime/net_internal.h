/* The network boundary's pieces inside the runtime (not part of its API). */
#ifndef HUTCH_RUNTIME_NET_INTERNAL_H
#define HUTCH_RUNTIME_NET_INTERNAL_H

#include <sys/types.h>

#include "runtime/net.h"
#include "runtime/runtime_internal.h"

struct nft_ctx;

/* netfilter.c: one libnftables batch per operation */
int hu_nft_open(struct nft_ctx **out, hu_err *err);
int hu_nft_run(struct nft_ctx *ctx, const char *batch, const char *what, hu_err *err);
int hu_nft_host_setup(struct nft_ctx *ctx, const struct hu_net_config *cfg, hu_err *err);
/* Put a sandbox's allowOut/denyOut in (nothing to do without any). */
int hu_nft_sandbox_add(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname,
		       const struct hu_net_rules *rules, hu_err *err);
/* Replace them, whatever they were (read back from the kernel). */
int hu_nft_sandbox_rules(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname,
			 const struct hu_net_rules *rules, hu_err *err);
/* Remove every set element keyed by the sandbox's interface. */
int hu_nft_sandbox_del(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname, hu_err *err);

/* Allow ifname to reach addrs for ttl seconds (set dallow, fresh timeouts). */
int hu_nft_learn(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname, const uint32_t *addrs,
		 unsigned n, unsigned ttl, hu_err *err);
/* The same for IPv6 addresses (16 bytes each, network order): set dallow6. */
int hu_nft_learn6(struct nft_ctx *ctx, const struct hu_net_config *cfg, const char *ifname,
		  const uint8_t (*addrs)[16], unsigned n, unsigned ttl, hu_err *err);

/* Several sandboxes' learned addresses in one transaction (the DNS
 * proxy's worker batches them, net.h hu_net_learner_run). */
struct hu_nft_learn_entry {
	char ifname[IF_NAMESIZE];
	const uint32_t *a4;
	unsigned n4, ttl4;
	const uint8_t (*a6)[16]; /* NULL where sandboxes have no IPv6 */
	unsigned n6, ttl6;
	int remove; /* take these elements out instead (whether they are there or not) */
};
int hu_nft_learn_batch(struct nft_ctx *ctx, const struct hu_net_config *cfg, const struct hu_nft_learn_entry *e,
		       unsigned n, hu_err *err);

/* net.c: called by runtime.c and sandbox.c */
int hu_net_runtime_open(struct hu_runtime *rt, hu_err *err);
void hu_net_runtime_close(struct hu_runtime *rt);
/* Give the sandbox whose init is `pid` its veth, addresses, route, rules and
 * resolv.conf (in <upper>/etc, owned by upper_root: the sandbox's root as
 * that upper dir stores it). Nothing is left behind on failure. */
int hu_net_attach(struct hu_runtime *rt, const char *id, uint32_t slot, pid_t pid, const char *upper,
		  uint32_t upper_root, const struct hu_net_spec *spec, hu_err *err);
/* Remove every nft object of the sandbox, and with delete_link its host
 * end (which takes the sandbox end with it; without, the pair goes when the
 * kernel frees the dead sandbox's namespace). Missing pieces are fine. */
int hu_net_detach(struct hu_runtime *rt, const char *id, uint32_t slot, int delete_link, hu_err *err);

/* Re-adoption (a restarted daemon taking over a live sandbox on `slot`):
 * whether it has a network of its own (its host interface exists), i.e.
 * whether its teardown must call hu_net_detach. Nothing else needs
 * rebuilding: interface, addresses and rules are kernel state named after
 * the slot. */
int hu_net_adopt(struct hu_runtime *rt, uint32_t slot);
/* hu_net_detach for a sandbox without a handle (its slot is looked up). */
int hu_net_cleanup_leftover(struct hu_runtime *rt, const char *id, hu_err *err);

#endif
