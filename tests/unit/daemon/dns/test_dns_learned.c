/*
 * The DNS proxy's per-sandbox account of learned addresses
 * (src/daemon/dns/dns_learned.c): a sandbox resolving ever new names stops
 * at HU_DNS_LEARNED_MAX live addresses, another sandbox is not affected,
 * entries expire with their TTL, a known address is refreshed, not counted
 * twice, and buckets of many sandboxes come and go.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "daemon/dns/dns_learned.h"

static void addr(uint8_t out[16], uint32_t n)
{
	memset(out, 0, 16);
	out[10] = out[11] = 0xff;
	out[12] = 93, out[13] = (uint8_t)(n >> 16), out[14] = (uint8_t)(n >> 8), out[15] = (uint8_t)n;
}

#define A 0x0ac80002u
#define B 0x0ac80004u

static void test_bounded_per_sandbox(void **state)
{
	struct hu_dns_learned *l = hu_dns_learned_new();
	uint8_t one[1][16], two[2][16];
	int ok = 0;

	assert_non_null(l);
	for (uint32_t i = 0; i < 1000; i++) {
		addr(one[0], i);
		ok += hu_dns_learned_admit(l, A, (const uint8_t (*)[16])one, 1, 60, 1000) == 0;
	}
	assert_int_equal(ok, HU_DNS_LEARNED_MAX);
	assert_int_equal(hu_dns_learned_count(l, A, 1000), HU_DNS_LEARNED_MAX);
	/* a known address is refreshed, not refused */
	addr(one[0], 5);
	assert_int_equal(hu_dns_learned_admit(l, A, (const uint8_t (*)[16])one, 1, 600, 1000), 0);
	/* all or nothing: one known and one new does not fit */
	addr(two[0], 5), addr(two[1], 5000);
	assert_int_equal(hu_dns_learned_admit(l, A, (const uint8_t (*)[16])two, 2, 60, 1000), -1);
	/* another sandbox learns as usual */
	addr(one[0], 7);
	assert_int_equal(hu_dns_learned_admit(l, B, (const uint8_t (*)[16])one, 1, 60, 1000), 0);
	assert_int_equal(hu_dns_learned_count(l, B, 1000), 1);
	/* after the TTL only the refreshed one is left */
	assert_int_equal(hu_dns_learned_count(l, A, 1061), 1);
	addr(one[0], 9999);
	assert_int_equal(hu_dns_learned_admit(l, A, (const uint8_t (*)[16])one, 1, 60, 1061), 0);
	hu_dns_learned_free(l);
}

static void test_many_sandboxes_come_and_go(void **state)
{
	struct hu_dns_learned *l = hu_dns_learned_new();
	uint8_t one[1][16];

	addr(one[0], 1);
	/* 3000 sandboxes, each learning once, in waves whose entries expire */
	for (int wave = 0; wave < 5; wave++) {
		int64_t now = 1000 + wave * 100;
		for (uint32_t s = 0; s < 3000; s++)
			assert_int_equal(hu_dns_learned_admit(l, A + 2 * (s + 3000 * (uint32_t)wave), (const uint8_t (*)[16])one, 1, 10, now), 0);
		for (uint32_t s = 0; s < 3000; s += 97)
			assert_int_equal(hu_dns_learned_count(l, A + 2 * (s + 3000 * (uint32_t)wave), now), 1);
		/* the next wave finds them expired; admits tidy the table as they go */
	}
	hu_dns_learned_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounded_per_sandbox),
		cmocka_unit_test(test_many_sandboxes_come_and_go),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
