/* The code interpreter recipe's progress lines (provision.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "daemon/sandboxes/provision.h"

static int parse(struct hu_provision_progress *p, const char *line)
{
	return hu_provision_parse_line(p, line, strlen(line));
}

static void test_steps(void **state)
{
	struct hu_provision_progress p = {0};

	assert_int_equal(parse(&p, "code-interpreter: step 2/5: apt-get install 31 packages\r"), 1);
	assert_int_equal(p.step, 2);
	assert_int_equal(p.steps, 5);
	assert_string_equal(p.what, "apt-get install 31 packages");
	assert_string_equal(p.last, "step 2/5: apt-get install 31 packages");
	/* other lines leave the step alone and become the latest line */
	assert_int_equal(parse(&p, "code-interpreter:   Unpacking python3 (3.11.2-1+b1) ..."), 0);
	assert_int_equal(p.step, 2);
	assert_string_equal(p.last, "  Unpacking python3 (3.11.2-1+b1) ...");
	assert_int_equal(parse(&p, "code-interpreter: step 10/12: x"), 1);
	assert_int_equal(p.step, 10);
}

static void test_not_steps(void **state)
{
	static const char *const bad[] = {
		"code-interpreter: step 0/5: zero", "code-interpreter: step 6/5: past the end",
		"code-interpreter: step 100/120: three digits", "code-interpreter: step 2/5 no colon",
		"code-interpreter: step 2/5:", "code-interpreter: step /5: none", "step 1/2: no prefix",
		"code-interpreter: step 1/x: letters", "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hu_provision_progress p = {0};
		assert_int_equal(parse(&p, bad[i]), 0);
		assert_int_equal(p.step, 0);
	}
	/* control bytes never reach the log or the API */
	struct hu_provision_progress p = {0};
	assert_int_equal(parse(&p, "code-interpreter: step 1/2: a\033[31mred\001"), 1);
	assert_string_equal(p.what, "a?[31mred?");
	/* an overlong line is cut to the buffer */
	char longline[1024];
	memset(longline, 'x', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	parse(&p, longline);
	assert_int_equal(strlen(p.last), sizeof(p.last) - 1);
	assert_string_equal(hu_provision_state_name(HU_PROV_WAITING), "waiting");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steps),
		cmocka_unit_test(test_not_steps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
