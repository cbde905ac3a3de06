#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "util/hex.h"

static void test_encode(void **state)
{
	char out[16];
	hu_hex_encode("\x00\x0f\xa5\xff", 4, out);
	assert_string_equal(out, "000fa5ff");
	hu_hex_encode("", 0, out);
	assert_string_equal(out, "");
}

static void test_random(void **state)
{
	char a[65], b[65];
	hu_err err;
	assert_int_equal(hu_random_hex(a, 32, &err), 0);
	assert_int_equal(hu_random_hex(b, 32, &err), 0);
	assert_int_equal(strlen(a), 64);
	assert_int_equal(strspn(a, "0123456789abcdef"), 64);
	assert_string_not_equal(a, b);
	char big[1024];
	assert_int_equal(hu_random_hex(big, 300, &err), -1);
	assert_int_equal(err.code, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_encode), cmocka_unit_test(test_random)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
