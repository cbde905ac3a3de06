/*
 * The DNS proxy's queries in flight (src/daemon/dns/dns_slots.c): one
 * sandbox flooding the proxy stays within its share and an unrelated one
 * still gets slots; upstream ids are the 16 random bits drawn, whatever the
 * slot; expired queries free their slot and their id.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "daemon/dns/dns_slots.h"

/* xorshift: a reproducible stream of 16-bit ids */
static int seq(uint16_t *out, void *arg)
{
	uint32_t *x = arg;
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	*out = (uint16_t)(*x >> 8);
	return 0;
}

static int fixed(uint16_t *out, void *arg)
{
	*out = *(uint16_t *)arg;
	return 0;
}

#define A 0x0ac80002u /* 10.200.0.2 */
#define B 0x0ac80004u

static void test_flood_stays_within_its_share(void **state)
{
	struct hu_dns_slots *t = calloc(1, sizeof(*t));
	uint32_t x = 12345;
	uint16_t id;
	int got = 0;

	for (int i = 0; i < 5000; i++)
		got += hu_dns_slots_take(t, A, 100, seq, &x, &id) >= 0;
	assert_int_equal(got, HU_DNS_SLOT_SHARE);
	assert_int_equal(hu_dns_slots_in_flight(t, A, 100), HU_DNS_SLOT_SHARE);
	/* the unrelated sandbox resolves meanwhile */
	int slot = hu_dns_slots_take(t, B, 100, seq, &x, &id);
	assert_true(slot >= 0);
	assert_int_equal(hu_dns_slots_find(t, id, 101), slot);
	/* A's queries expire: it gets its share again, no more */
	got = 0;
	for (int i = 0; i < 5000; i++)
		got += hu_dns_slots_take(t, A, 100 + HU_DNS_SLOT_TTL_S + 1, seq, &x, &id) >= 0;
	assert_int_equal(got, HU_DNS_SLOT_SHARE);
	free(t);
}

static void test_every_slot_is_used_before_refusing(void **state)
{
	struct hu_dns_slots *t = calloc(1, sizeof(*t));
	uint32_t x = 99;
	uint16_t id;
	int got = 0;

	/* many sandboxes, a few queries each: the whole table fills */
	for (uint32_t s = 0; s < 2 * HU_DNS_SLOTS / 4; s++)
		for (int q = 0; q < 4; q++)
			got += hu_dns_slots_take(t, A + 2 * s, 7, seq, &x, &id) >= 0;
	assert_int_equal(got, HU_DNS_SLOTS);
	free(t);
}

static void test_ids_are_the_random_bits(void **state)
{
	struct hu_dns_slots *t = calloc(1, sizeof(*t));
	uint16_t want = 0xbeef, id;
	uint32_t x = 7;
	unsigned seen_high[64] = {0};

	int slot = hu_dns_slots_take(t, A, 5, fixed, &want, &id);
	assert_true(slot >= 0);
	assert_int_equal(id, 0xbeef);
	/* a live id is never handed out twice: the next draw of it fails */
	assert_int_equal(hu_dns_slots_take(t, B, 5, fixed, &want, &id), -1);
	assert_int_equal(hu_dns_slots_find(t, 0xbeef, 5), slot);
	assert_int_equal(hu_dns_slots_find(t, 0xbeee, 5), -1);
	hu_dns_slots_release(t, slot);
	assert_int_equal(hu_dns_slots_find(t, 0xbeef, 5), -1);
	/* the id does not depend on the slot: its high bits vary across slots */
	for (int i = 0; i < 64; i++) {
		assert_true(hu_dns_slots_take(t, A + 2 * (uint32_t)i, 5, seq, &x, &id) >= 0);
		seen_high[id >> 10]++;
	}
	unsigned distinct = 0;
	for (int i = 0; i < 64; i++)
		distinct += seen_high[i] > 0;
	assert_true(distinct > 20); /* 64 draws into 64 bins */
	/* an expired query's id finds nothing */
	assert_int_equal(hu_dns_slots_find(t, id, 5 + HU_DNS_SLOT_TTL_S + 1), -1);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flood_stays_within_its_share),
		cmocka_unit_test(test_every_slot_is_used_before_refusing),
		cmocka_unit_test(test_ids_are_the_random_bits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
