// fuzz-sources: src/daemon/cluster/forward_auth.c
/*
 * libFuzzer driver for the forwarding proof (X-Hutch-Forwarded, what a
 * client can send to any node): the input is `method` NUL `target` NUL
 * `header value`. The verifier must never crash, and never accept a value
 * that was not signed with the secret (a fuzzer cannot find an HMAC); what
 * the signer makes of the same method and target must verify.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/forward_auth.h"

#define SECRET "fuzzing-secret-0123456789"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 3);
	struct hu_fwd_claim claim;
	char value[HU_FWD_VALUE_MAX];
	hu_err err;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = buf[size + 2] = '\0';
	/* three NUL-terminated parts; a missing one is the empty string at
	 * the end of buf (the two extra NULs) */
	const char *method = buf;
	const char *target = method + strlen(method) + 1;
	if (target > buf + size)
		target = buf + size + 1;
	const char *v = target + strlen(target) + 1;
	if (v > buf + size + 1)
		v = buf + size + 2;
	if (hu_fwd_verify(SECRET, strlen(SECRET), method, target, v, 1760000000000LL, &claim, &err) == 0)
		abort(); /* a forged proof got through */
	if (hu_fwd_sign(SECRET, strlen(SECRET), method, target, "n1", NULL, "127.0.0.1", 1760000000000LL, value,
			sizeof(value), &err) == 0 &&
	    hu_fwd_verify(SECRET, strlen(SECRET), method, target, value, 1760000000000LL, &claim, &err) != 0)
		abort();
	free(buf);
	return 0;
}
