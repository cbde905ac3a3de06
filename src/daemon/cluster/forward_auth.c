/* The forwarding proof (forward_auth.h). */
#include "daemon/cluster/forward_auth.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hex.h"

#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
#define ADDR_CHARS "0123456789abcdefABCDEF.:"

/* A node name or placement id: what the header can carry unquoted. */
static int token_ok(const char *s, size_t cap)
{
	size_t n = strlen(s);
	return n >= 1 && n < cap && strspn(s, NAME_CHARS) == n;
}

/* A client address: IPv4 or IPv6 text, no scope ("-": unknown). */
static int client_ok(const char *s)
{
	size_t n = strlen(s);
	return n >= 1 && n < HU_FWD_CLIENT_MAX && (!strcmp(s, "-") || strspn(s, ADDR_CHARS) == n);
}

/* hex HMAC-SHA256 over
 * "hutch-forward-v2\n<method>\n<target>\n<t>\n<node>\n<placement>\n<client>" */
static int mac(const void *secret, size_t secret_len, const char *method, const char *target, int64_t at_ms,
	       const char *node, const char *placement, const char *client, char hex[65], hu_err *err)
{
	unsigned char out[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char t[24];
	int tn = snprintf(t, sizeof(t), "%" PRId64, at_ms);
	size_t mlen = strlen(method), tlen = strlen(target), nlen = strlen(node), plen = strlen(placement);
	size_t len = 17 + mlen + 1 + tlen + 1 + (size_t)tn + 1 + nlen + 1 + plen + 1 + strlen(client);
	char *msg = malloc(len + 1);

	if (!msg)
		return hu_err_set(err, ENOMEM, "forwarding proof");
	snprintf(msg, len + 1, "hutch-forward-v2\n%s\n%s\n%s\n%s\n%s\n%s", method, target, t, node, placement, client);
	int ok = HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)msg, len, out, &n) != NULL && n == 32;
	OPENSSL_cleanse(msg, len);
	free(msg);
	if (!ok)
		return hu_err_set(err, -EIO, "forwarding proof: HMAC failed");
	hu_hex_encode(out, n, hex);
	return 0;
}

int hu_fwd_sign(const void *secret, size_t secret_len, const char *method, const char *target, const char *node,
		const char *placement, const char *client, int64_t now_ms, char *out, size_t cap, hu_err *err)
{
	char hex[65];
	const char *p = placement && *placement ? placement : "-";
	/* an address the format cannot carry is sent as unknown: the owner
	 * then names no client rather than the wrong one */
	const char *c = client && *client && client_ok(client) ? client : "-";

	if (!token_ok(node, sizeof(((struct hu_fwd_claim *)0)->node)) || !token_ok(p, HU_FWD_PLACEMENT_MAX))
		return hu_err_set(err, -EINVAL, "forwarding proof: node name or placement id not of [A-Za-z0-9._-]");
	if (mac(secret, secret_len, method, target, now_ms, node, p, c, hex, err) < 0)
		return -1;
	if ((size_t)snprintf(out, cap, "v2 t=%" PRId64 " n=%s p=%s c=%s s=%s", now_ms, node, p, c, hex) >= cap)
		return hu_err_set(err, -ENAMETOOLONG, "forwarding proof: too long");
	return 0;
}

/* The next " key=" field of *s into val (cap bytes); -1 when it is not there. */
static int field(const char **s, const char *key, char *val, size_t cap)
{
	size_t klen = strlen(key);
	if (**s != ' ' || strncmp(*s + 1, key, klen) || (*s)[1 + klen] != '=')
		return -1;
	const char *v = *s + 2 + klen;
	size_t n = strcspn(v, " ");
	if (n == 0 || n >= cap)
		return -1;
	memcpy(val, v, n);
	val[n] = '\0';
	*s = v + n;
	return 0;
}

int hu_fwd_verify(const void *secret, size_t secret_len, const char *method, const char *target, const char *value,
		  int64_t now_ms, struct hu_fwd_claim *claim, hu_err *err)
{
	char t[24], node[sizeof(claim->node)], p[HU_FWD_PLACEMENT_MAX], c[HU_FWD_CLIENT_MAX], sig[72], want[65];
	const char *s = value;
	char *end;

	if (!value || strlen(value) >= HU_FWD_VALUE_MAX || strncmp(s, "v2", 2))
		return hu_err_set(err, -EACCES, "%s: not a forwarding proof of this version", HU_FWD_HEADER);
	s += 2;
	if (field(&s, "t", t, sizeof(t)) < 0 || field(&s, "n", node, sizeof(node)) < 0 ||
	    field(&s, "p", p, sizeof(p)) < 0 || field(&s, "c", c, sizeof(c)) < 0 ||
	    field(&s, "s", sig, sizeof(sig)) < 0 || *s)
		return hu_err_set(err, -EACCES, "%s: malformed", HU_FWD_HEADER);
	if (strspn(t, "0123456789") != strlen(t) || !token_ok(node, sizeof(node)) || !token_ok(p, sizeof(p)) ||
	    !client_ok(c) || strlen(sig) != 64)
		return hu_err_set(err, -EACCES, "%s: malformed", HU_FWD_HEADER);
	errno = 0;
	long long at = strtoll(t, &end, 10);
	if (errno || *end)
		return hu_err_set(err, -EACCES, "%s: malformed time", HU_FWD_HEADER);
	if (mac(secret, secret_len, method, target, at, node, p, c, want, err) < 0)
		return -1;
	if (CRYPTO_memcmp(want, sig, 64) != 0)
		return hu_err_set(err, -EACCES, "%s: the proof does not match (not signed with this cluster's secret)",
				  HU_FWD_HEADER);
	if (at > now_ms + HU_FWD_VALID_MS || at < now_ms - HU_FWD_VALID_MS)
		return hu_err_set(err, -EACCES, "%s: the proof is %lld ms off this node's clock (at most %d)",
				  HU_FWD_HEADER, (long long)(at - now_ms), HU_FWD_VALID_MS);
	claim->at_ms = at;
	snprintf(claim->node, sizeof(claim->node), "%s", node);
	snprintf(claim->placement, sizeof(claim->placement), "%s", strcmp(p, "-") ? p : "");
	snprintf(claim->client, sizeof(claim->client), "%s", strcmp(c, "-") ? c : "");
	return 0;
}
