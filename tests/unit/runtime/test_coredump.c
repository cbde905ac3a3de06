/*
 * Which kernel.core_pattern values let sandboxes start (runtime/coredump.h):
 * files and pipes yes (RLIMIT_CORE 1 stops both), sockets no (the kernel
 * ignores RLIMIT_CORE for them). The live behaviour is tested with real
 * patterns in tests/security/core_pattern.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "runtime/coredump.h"

static void test_files_and_pipes_are_safe(void **state)
{
	static const char *const ok[] = {"core", "", "/var/crash/core.%p", "|/usr/lib/systemd/systemd-coredump %P %u",
					 "|/usr/share/apport/apport -p%p", " @not-first", "core@host"};
	hu_err err;
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_int_equal(hu_core_pattern_safe(ok[i], &err), 0);
}

static void test_sockets_are_refused(void **state)
{
	static const char *const bad[] = {"@/run/systemd/coredump", "@@/run/coredump.socket", "@"};
	hu_err err;
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(hu_core_pattern_safe(bad[i], &err), -1);
		assert_int_equal(err.code, EPERM);
		assert_non_null(strstr(err.msg, "kernel.core_pattern is a socket"));
		assert_non_null(strstr(err.msg, bad[i]));
		assert_null(strstr(err.msg, "Operation not permitted")); /* the message says why, once */
	}
}

static void test_this_host_is_readable(void **state)
{
	char pat[256];
	hu_err err;
	(void)state;
	assert_int_equal(hu_core_pattern_read(pat, sizeof(pat), &err), 0);
	assert_null(strchr(pat, '\n'));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_files_and_pipes_are_safe),
		cmocka_unit_test(test_sockets_are_refused),
		cmocka_unit_test(test_this_host_is_readable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
