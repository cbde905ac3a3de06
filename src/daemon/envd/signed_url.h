/*
 * Signed /files URLs (the SDK's uploadUrl()/downloadUrl()): a request to
 * `/files?path=P[&username=U]&signature=v1_<b64>[&signature_expiration=E]`
 * is authorised by its signature instead of X-Access-Token:
 *
 *   signature = "v1_" + unpadded base64(sha256("P:OP:U:TOKEN" [+ ":E"]))
 *
 * OP is "read" for GET and "write" for POST, U the username parameter ("" when
 * absent), TOKEN the sandbox's envdAccessToken, E unix seconds. Such URLs are
 * handed to third parties, so they may arrive without E2b-Sandbox-Id: how
 * the sandbox is found with one hash is described in docs/security.md
 * ("Signed URLs") and in signed_url.c.
 */
#ifndef HUTCH_DAEMON_SIGNED_URL_H
#define HUTCH_DAEMON_SIGNED_URL_H

#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/core/daemon.h"
#include "daemon/sandboxes/registry.h" /* HU_SIG_DIGEST_LEN */
#include "util/err.h"


/* The signature-related part of a request, parsed (pure, fuzzed). */
struct hu_signed_req {
	uint8_t digest[HU_SIG_DIGEST_LEN]; /* the decoded signature */
	bool has_expiration;
	int64_t expiration;                /* unix seconds */
	char expiration_text[24];          /* as given: it is part of the signed text */
};

/* Parse `signature` (v1_ + 43 base64 characters) and the optional
 * `signature_expiration` (decimal, no sign, at most 18 digits). -1 with
 * EINVAL and a message naming the parameter on anything else. */
int hu_signed_parse(const char *signature, const char *expiration, struct hu_signed_req *out, hu_err *err);

/* sha256 of "path:op:user:token[:expiration_text]" into out. */
void hu_signed_digest(const char *path, const char *op, const char *user, const char *token,
		      const char *expiration_text, uint8_t out[HU_SIG_DIGEST_LEN]);

/* The hash state after "path:op:user:" (the part shared by every token),
 * and a digest finished from a copy of it into work; NULL/false when out of
 * memory. The caller frees both contexts (EVP_MD_CTX_free). */
EVP_MD_CTX *hu_signed_prefix_state(const char *path, const char *op, const char *user);
bool hu_signed_finish(EVP_MD_CTX *prefix, EVP_MD_CTX *work, const char *token, const char *expiration_text,
		      uint8_t out[HU_SIG_DIGEST_LEN]);

#ifdef HU_TEST_HOOKS
/* Test build: tokens hashed so far (hu_signed_finish calls). Every signed
 * reply carries the number its request cost in X-Hutch-Test-Signature-Hashes. */
unsigned long hu_signed_hash_count(void);
#endif

/* E2B's sandbox host names, `<port>-<sandboxID>.<domain>[:port]`: the id
 * into id (cap bytes); false for any other Host. */
bool hu_signed_host_id(const char *host, char *id, size_t cap);

/* Does r carry a signature (a `signature` query parameter on /files)? */
bool hu_signed_present(struct hu_req *r);

/* r names its sandbox (header) and carries a signature: true when the
 * signature is valid for s and not expired; otherwise replies (401) and
 * returns false. */
bool hu_signed_check(struct hu_req *r, const struct hu_sbx *s);

/* r carries a signature but no E2b-Sandbox-Id: find the sandbox it was
 * signed for, trying at most one token (the sandbox its Host names, or the
 * one the signature index remembers) unless the daemon runs with
 * signed_url.scan. Returns it, or NULL: after replying (401 expired or
 * invalid, 429 when scans are over their rate, 503 when a node cannot
 * reach the store), or without replying when the sandbox is another
 * node's; then `elsewhere` (cap bytes, "" otherwise) holds its id, not
 * verified here: its owner verifies the signature. */
struct hu_sbx *hu_signed_resolve(struct hu_req *r, char *elsewhere, size_t cap);

#endif
