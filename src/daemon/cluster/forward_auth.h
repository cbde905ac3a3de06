/*
 * The proof a node adds to a request it forwards to another node of the
 * cluster (forward.h): the header X-Hutch-Forwarded,
 *
 *   v2 t=<unix ms> n=<sending node> p=<placement id or -> c=<client or -> s=<hex HMAC>
 *
 * where s is HMAC-SHA256 under the cluster secret (cluster.secret) over the
 * method, the raw request target, t, n, p and c. c is the address the
 * sending node got the call from (the client's): the receiver uses it as
 * the client's address (X-Forwarded-For to a sandbox's port) and trusts no
 * X-Forwarded-For a client sends, to it or through a node. It checks the proof
 * (a request with the header and no valid proof is refused: a client must
 * not pass for a node, which would let it pick where creates land) and
 * strips it. A proof is good for HU_FWD_VALID_MS either side of the
 * receiver's clock (the nodes' clocks must agree that closely; doctor
 * checks their skew), so a captured one cannot be replayed later, and it
 * binds the method and target, so it cannot be moved to another call.
 * The body is not covered: the channel's integrity is TLS's job where the
 * link between nodes is not trusted (docs/security.md).
 */
#ifndef HUTCH_DAEMON_CLUSTER_FORWARD_AUTH_H
#define HUTCH_DAEMON_CLUSTER_FORWARD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define HU_FWD_HEADER "X-Hutch-Forwarded"
#define HU_FWD_VALID_MS 10000
#define HU_FWD_VALUE_MAX 320
#define HU_FWD_PLACEMENT_MAX 40
#define HU_FWD_CLIENT_MAX 46 /* INET6_ADDRSTRLEN */

struct hu_fwd_claim {
	int64_t at_ms;
	char node[64];
	char placement[HU_FWD_PLACEMENT_MAX]; /* "" when the request is no placed create */
	char client[HU_FWD_CLIENT_MAX];       /* the client's address, "" when the sender did not know it */
};

/* The header's value for a request from `node` (placement NULL or "" for
 * none) that came from `client` (an IP address; NULL, "" or anything else
 * than IPv4/IPv6 text: unknown) at now_ms into out (HU_FWD_VALUE_MAX
 * bytes). -1 when the node name or placement does not fit or holds a
 * character the format cannot carry. */
int hu_fwd_sign(const void *secret, size_t secret_len, const char *method, const char *target, const char *node,
		const char *placement, const char *client, int64_t now_ms, char *out, size_t cap, hu_err *err);
/* Check a header value. 0 with *claim filled when it is well formed, fresh
 * and its HMAC matches (compared in constant time); -1 with EACCES
 * otherwise, the message saying which. */
int hu_fwd_verify(const void *secret, size_t secret_len, const char *method, const char *target, const char *value,
		  int64_t now_ms, struct hu_fwd_claim *claim, hu_err *err);

#endif
