/*
 * The pure part of signed URLs (signed_url.h): parsing the signature and its
 * expiry, the digest, and E2B's per-sandbox host names. No daemon state, so
 * the fuzz driver (tests/fuzz/fuzz_signed_url.c) links only this.
 */
#include "daemon/envd/signed_url.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "util/base64.h"

#define SIG_PREFIX "v1_"
#define SIG_B64_LEN 43 /* unpadded base64 of 32 bytes */
#define EXP_MAX_DIGITS 18

int hu_signed_parse(const char *signature, const char *expiration, struct hu_signed_req *out, hu_err *err)
{
	uint8_t buf[64];
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!signature || strncmp(signature, SIG_PREFIX, 3) || strlen(signature + 3) != SIG_B64_LEN)
		return hu_err_set(err, EINVAL, "signature: expected v1_ followed by %d base64 characters", SIG_B64_LEN);
	if (hu_base64_decode(signature + 3, SIG_B64_LEN, buf, &n, err) < 0 || n != HU_SIG_DIGEST_LEN)
		return hu_err_set(err, EINVAL, "signature: not base64 of a sha256 digest");
	/* 43 characters carry 258 bits: the last one's two low bits are not
	 * the digest's and must be 0, so that one digest has one spelling per
	 * alphabet (a signature with one character changed is never the same
	 * signature) */
	if (hu_base64_sextet((unsigned char)signature[3 + SIG_B64_LEN - 1]) & 3)
		return hu_err_set(err, EINVAL, "signature: not the canonical base64 of a sha256 digest");
	memcpy(out->digest, buf, HU_SIG_DIGEST_LEN);
	if (!expiration)
		return 0;
	size_t len = strlen(expiration);
	if (len == 0 || len > EXP_MAX_DIGITS || strspn(expiration, "0123456789") != len)
		return hu_err_set(err, EINVAL, "signature_expiration: expected unix seconds");
	out->expiration = 0;
	for (size_t i = 0; i < len; i++)
		out->expiration = out->expiration * 10 + (expiration[i] - '0');
	memcpy(out->expiration_text, expiration, len + 1);
	out->has_expiration = true;
	return 0;
}

/* The hash state after "path:op:user:", shared by every candidate token. */
EVP_MD_CTX *hu_signed_prefix_state(const char *path, const char *op, const char *user)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	if (!c)
		return NULL;
	if (!EVP_DigestInit_ex(c, EVP_sha256(), NULL) || !EVP_DigestUpdate(c, path, strlen(path)) ||
	    !EVP_DigestUpdate(c, ":", 1) || !EVP_DigestUpdate(c, op, strlen(op)) || !EVP_DigestUpdate(c, ":", 1) ||
	    !EVP_DigestUpdate(c, user, strlen(user)) || !EVP_DigestUpdate(c, ":", 1)) {
		EVP_MD_CTX_free(c);
		return NULL;
	}
	return c;
}

#ifdef HU_TEST_HOOKS
static unsigned long hashes; /* one event loop: no lock */

unsigned long hu_signed_hash_count(void)
{
	return hashes;
}
#endif

/* Finish a copy of the prefix state with token[:expiration]; false on OOM.
 * Every token tried passes here (hu_signed_digest too): the test build
 * counts them. */
bool hu_signed_finish(EVP_MD_CTX *prefix, EVP_MD_CTX *work, const char *token, const char *exp,
			  uint8_t out[HU_SIG_DIGEST_LEN])
{
	unsigned len = 0;
#ifdef HU_TEST_HOOKS
	hashes++;
#endif
	if (!EVP_MD_CTX_copy_ex(work, prefix) || !EVP_DigestUpdate(work, token, strlen(token)))
		return false;
	if (exp && (!EVP_DigestUpdate(work, ":", 1) || !EVP_DigestUpdate(work, exp, strlen(exp))))
		return false;
	return EVP_DigestFinal_ex(work, out, &len) && len == HU_SIG_DIGEST_LEN;
}

void hu_signed_digest(const char *path, const char *op, const char *user, const char *token,
		      const char *expiration_text, uint8_t out[HU_SIG_DIGEST_LEN])
{
	EVP_MD_CTX *prefix = hu_signed_prefix_state(path, op, user), *work = EVP_MD_CTX_new();
	if (!prefix || !work || !hu_signed_finish(prefix, work, token, expiration_text, out))
		memset(out, 0, HU_SIG_DIGEST_LEN); /* matches no signature: v1_ + 43 chars never decodes to this by chance */
	EVP_MD_CTX_free(prefix);
	EVP_MD_CTX_free(work);
}

/* `<port>-<id>.<domain>` (E2B's sandbox host names) -> id; false otherwise. */
bool hu_signed_host_id(const char *host, char *id, size_t cap)
{
	if (!host)
		return false;
	size_t digits = strspn(host, "0123456789");
	if (digits == 0 || digits > 5 || host[digits] != '-')
		return false;
	const char *start = host + digits + 1;
	size_t len = strcspn(start, ".:");
	if (len == 0 || len >= cap || start[len] != '.')
		return false;
	memcpy(id, start, len);
	id[len] = '\0';
	/* sandbox ids are [a-z0-9]; the registry decides whether it exists */
	return strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") == len;
}

