// fuzz-sources: src/daemon/envd/signature.c
/*
 * libFuzzer driver for signed URL parsing: the input is what a client
 * controls, `signature` NUL `signature_expiration` NUL `Host`, each part
 * optional. A parsed signature must be exactly 32 bytes that re-encode to a
 * signature the parser takes again with the same digest; the expiry text
 * must be what was given; the host parser must only ever hand out ids of
 * [a-z0-9]. The digest of arbitrary path/user strings must not crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/envd/signed_url.h"
#include "util/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 3);
	struct hu_signed_req sig, again;
	hu_err err;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = buf[size + 2] = '\0';
	const char *s = buf;
	const char *exp = s + strlen(s) + 1;
	const char *host = exp + strlen(exp) + 1;
	if (exp > buf + size)
		exp = NULL;
	if (host > buf + size)
		host = NULL;

	if (hu_signed_parse(s, exp, &sig, &err) == 0) {
		char b64[64], text[80];
		hu_base64_encode(sig.digest, HU_SIG_DIGEST_LEN, b64);
		b64[43] = '\0'; /* unpadded, as the SDK sends it */
		snprintf(text, sizeof(text), "v1_%s", b64);
		if (hu_signed_parse(text, exp, &again, &err) < 0 || memcmp(sig.digest, again.digest, HU_SIG_DIGEST_LEN))
			abort();
		if (exp && (!sig.has_expiration || strcmp(sig.expiration_text, exp) || sig.expiration < 0))
			abort();
		uint8_t d[HU_SIG_DIGEST_LEN];
		hu_signed_digest(s, "read", exp ? exp : "", host ? host : "", sig.has_expiration ? sig.expiration_text : NULL,
				 d);
	} else if (err.code != EINVAL) {
		abort();
	}
	char id[32];
	if (host && hu_signed_host_id(host, id, sizeof(id)) &&
	    (!id[0] || strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") != strlen(id)))
		abort();
	free(buf);
	return 0;
}
