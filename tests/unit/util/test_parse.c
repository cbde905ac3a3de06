#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "util/parse.h"

static void test_sizes(void **state)
{
	uint64_t v;
	hu_err err;
	assert_int_equal(hu_parse_size("512M", &v, &err), 0);
	assert_int_equal(v, 512ull << 20);
	assert_int_equal(hu_parse_size("1G", &v, &err), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(hu_parse_size("64Mi", &v, &err), 0);
	assert_int_equal(v, 64ull << 20);
	assert_int_equal(hu_parse_size("2GB", &v, &err), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(hu_parse_size("4096", &v, &err), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(hu_parse_size("1k", &v, &err), 0);
	assert_int_equal(v, 1024);
}

static void test_bad_sizes(void **state)
{
	uint64_t v;
	hu_err err;
	const char *bad[] = {"", "M", "-1M", "12X", "1.5G", "1G junk", "99999999999999999999", "17179869184T"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(hu_parse_size(bad[i], &v, &err), -1);
		assert_true(err.code == EINVAL || err.code == ERANGE);
		assert_non_null(strstr(err.msg, bad[i]));
	}
}

static void test_durations(void **state)
{
	uint64_t v;
	hu_err err;
	assert_int_equal(hu_parse_duration_ms("30s", &v, &err), 0);
	assert_int_equal(v, 30000);
	assert_int_equal(hu_parse_duration_ms("500ms", &v, &err), 0);
	assert_int_equal(v, 500);
	assert_int_equal(hu_parse_duration_ms("5m", &v, &err), 0);
	assert_int_equal(v, 300000);
	assert_int_equal(hu_parse_duration_ms("1h", &v, &err), 0);
	assert_int_equal(v, 3600000);
	assert_int_equal(hu_parse_duration_ms("7", &v, &err), 0);
	assert_int_equal(v, 7000);
	assert_int_equal(hu_parse_duration_ms("5x", &v, &err), -1);
	assert_int_equal(hu_parse_duration_ms("-5s", &v, &err), -1);
	assert_int_equal(hu_parse_duration_ms("s", &v, &err), -1);
}

static void test_cpus(void **state)
{
	uint32_t v;
	hu_err err;
	assert_int_equal(hu_parse_cpus("1", &v, &err), 0);
	assert_int_equal(v, 1000);
	assert_int_equal(hu_parse_cpus("0.5", &v, &err), 0);
	assert_int_equal(v, 500);
	assert_int_equal(hu_parse_cpus(".25", &v, &err), 0);
	assert_int_equal(v, 250);
	assert_int_equal(hu_parse_cpus("2.1234", &v, &err), 0);
	assert_int_equal(v, 2123);
	assert_int_equal(hu_parse_cpus("0", &v, &err), -1);
	assert_int_equal(hu_parse_cpus("abc", &v, &err), -1);
	assert_int_equal(hu_parse_cpus("1.5x", &v, &err), -1);
	assert_int_equal(hu_parse_cpus("5000", &v, &err), -1);
}

static void test_u64(void **state)
{
	uint64_t v;
	hu_err err;
	assert_int_equal(hu_parse_u64("256", &v, &err), 0);
	assert_int_equal(v, 256);
	assert_int_equal(hu_parse_u64("", &v, &err), -1);
	assert_int_equal(hu_parse_u64("12a", &v, &err), -1);
	assert_int_equal(hu_parse_u64("18446744073709551616", &v, &err), -1);
	assert_int_equal(err.code, ERANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes), cmocka_unit_test(test_bad_sizes), cmocka_unit_test(test_durations),
		cmocka_unit_test(test_cpus), cmocka_unit_test(test_u64),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
