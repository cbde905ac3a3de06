/* The descriptor budget's arithmetic (fd_budget.h): what one more sandbox
 * needs, and how many fit, agree with each other at the boundary. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "daemon/sandboxes/fd_budget.h"

static void test_reserve(void **state)
{
	assert_int_equal(hu_fd_reserve(0), HU_FD_RESERVE_MIN);
	assert_int_equal(hu_fd_reserve(128), HU_FD_RESERVE_MIN);
	assert_int_equal(hu_fd_reserve(1024), 128);
	assert_int_equal(hu_fd_reserve(1048576), 131072);
}

static void test_needed(void **state)
{
	/* 20 base + 32 reserve + 10 x 2 + 1 x 16 */
	assert_int_equal(hu_fd_needed(20, 128, 10, 1), 20 + 32 + 20 + 16);
	assert_int_equal(hu_fd_needed(20, 128, 0, 0), 52);
}

/* created one at a time, the allowed count is the last that fits */
static void check_boundary(uint64_t base, uint64_t limit)
{
	uint64_t n = hu_fd_sandboxes_allowed(base, limit);
	if (n > 0)
		assert_true(hu_fd_needed(base, limit, n, 1) <= limit);
	assert_true(hu_fd_needed(base, limit, n + 1, 1) > limit);
}

static void test_allowed(void **state)
{
	/* 1024: (1024 - 24 - 128 - 16) / 2 */
	assert_int_equal(hu_fd_sandboxes_allowed(24, 1024), 428);
	assert_int_equal(hu_fd_sandboxes_allowed(24, 1048576), (1048576 - 24 - 131072 - 16) / 2);
	/* too small for even one */
	assert_int_equal(hu_fd_sandboxes_allowed(24, 64), 0);
	assert_int_equal(hu_fd_sandboxes_allowed(100, 32), 0);
	for (uint64_t limit = 40; limit < 5000; limit += 37)
		for (uint64_t base = 0; base < 200; base += 13)
			check_boundary(base, limit);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_needed),
		cmocka_unit_test(test_allowed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
