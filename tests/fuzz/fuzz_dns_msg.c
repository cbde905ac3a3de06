// fuzz-sources: src/daemon/dns/dns_msg.c
/*
 * libFuzzer driver for the DNS proxy's message parser (src/daemon/dns/dns_msg.c):
 * the input is tried as a query and as an answer. What is accepted must be
 * consistent: the question ends inside the message, the name is at most
 * 253 characters of lower-case text, addresses are bounded, and a REFUSED
 * reply built from a query is its question's length.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/dns/dns_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hu_dns_question q;
	struct hu_dns_answer a;
	uint8_t out[600];
	hu_err err;

	if (hu_dns_parse_query(data, size, &q, &err) == 0) {
		if (q.end > size || q.end < 12 + 5 || strlen(q.name) > HU_DNS_NAME_MAX)
			abort();
		for (const char *c = q.name; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				abort();
		long n = hu_dns_refused(data, &q, out, sizeof(out));
		if (n >= 0 && ((size_t)n != q.end || (out[3] & 0xf) != 5 || !(out[2] & 0x80)))
			abort();
	}
	if (hu_dns_parse_answer(data, size, &a, &err) == 0) {
		if (a.n_a > HU_DNS_A_MAX || a.q.end > size || strlen(a.q.name) > HU_DNS_NAME_MAX)
			abort();
		if (a.n_a == 0 && a.ttl_min != 0)
			abort();
		if (a.n_aaaa > HU_DNS_A_MAX || (a.n_aaaa == 0 && a.ttl_min6 != 0))
			abort();
	}
	return 0;
}
