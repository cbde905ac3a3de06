#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/ratelimit.h"

static int taken(struct hu_ratelimit *rl, int n, int64_t at)
{
	int ok = 0;
	for (int i = 0; i < n; i++)
		ok += hu_ratelimit_take(rl, at);
	return ok;
}

static void test_burst_then_rate(void **state)
{
	struct hu_ratelimit rl = HU_RATELIMIT_INIT(10, 5);
	assert_int_equal(taken(&rl, 100, 1000), 5); /* the burst, at one instant */
	assert_int_equal(rl.refused, 95);
	assert_int_equal(taken(&rl, 100, 1100), 1); /* 100 ms at 10/s: one more */
	assert_int_equal(taken(&rl, 100, 1600), 5); /* 500 ms: five */
	assert_int_equal(taken(&rl, 100, 60000), 5); /* a long pause refills only to the burst */
}

static void test_clock_going_back_gives_nothing(void **state)
{
	struct hu_ratelimit rl = HU_RATELIMIT_INIT(1, 1);
	assert_int_equal(taken(&rl, 3, 5000), 1);
	assert_int_equal(taken(&rl, 3, 4000), 0);
	assert_int_equal(taken(&rl, 3, 5999), 0);
	assert_int_equal(taken(&rl, 3, 6001), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_burst_then_rate),
					   cmocka_unit_test(test_clock_going_back_gives_nothing)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
