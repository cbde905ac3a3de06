/* Reading the daemon's log lines back (log_parse.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "daemon/common/log_parse.h"

static struct hu_log_entry e;

static int parse(const char *line)
{
	return hu_log_parse_line(line, strlen(line), &e);
}

static void test_good_lines(void **state)
{
	assert_int_equal(parse("2026-11-29T10:00:00.123Z level=info sandbox=iabc req=12 msg=\"created\"\n"), 0);
	assert_string_equal(e.level, "info");
	assert_string_equal(e.sandbox, "iabc");
	assert_string_equal(e.req, "12");
	assert_string_equal(e.msg, "created");
	assert_int_equal(e.time_ms, 1795946400123LL);
	assert_int_equal(parse("2026-11-29T10:00:00.000Z level=warn sandbox=- req=- msg=\"a \\\"q\\\" \\\\ \\x01\\n\""), 0);
	assert_string_equal(e.sandbox, "");
	assert_string_equal(e.req, "");
	assert_string_equal(e.msg, "a \"q\" \\ \x01\n");
}

static void test_bad_lines(void **state)
{
	assert_int_equal(parse(""), -1);
	assert_int_equal(parse("garbage"), -1);
	assert_int_equal(parse("2026-13-29T10:00:00.123Z level=info sandbox=- req=- msg=\"x\""), -1);
	assert_int_equal(parse("2026-11-29T10:00:00.123Z level=loud sandbox=- req=- msg=\"x\""), -1);
	assert_int_equal(parse("2026-11-29T10:00:00.123Z level=info sandbox=- req=- msg=\"x"), -1);
	assert_int_equal(parse("2026-11-29T10:00:00.123Z level=info sandbox=- req=- msg=\"x\"y\""), -1);
	assert_int_equal(parse("2026-11-29T10:00:00.123Z level=info sandbox=- req=- msg=\"\\x00\""), -1);
	assert_int_equal(parse("2026-11-29T10:00:00.123Z level=info sandbox=- req=- msg=\"\\q\""), -1);
	assert_int_equal(parse("2026-11-29T10:00:00.123Z level=info req=- msg=\"x\""), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_lines),
		cmocka_unit_test(test_bad_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
