/* hu_mount_target_check: where a volume or host mount may go in a sandbox. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "runtime/sandbox.h"

static void test_accepts(void **state)
{
	static const char *const ok[] = {"/data", "/home/user/work", "/workspace", "/a/b/c", "/procs", "/usrdata",
					 "/mnt/.hidden", "/x..y", "/tmp/dev"};
	hu_err err;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_int_equal(hu_mount_target_check(ok[i], &err), 0);
}

static void test_refuses(void **state)
{
	static const char *const bad[] = {"", "data", "/", "//", "/proc", "/proc/x", "/sys", "/sys/fs", "/dev",
					  "/dev/shm", "/usr", "/usr/local", "/a/../proc", "/a/./b", "/a//b", "/a/",
					  "/..", "/.", "relative/path"};
	hu_err err;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.code = 0;
		assert_int_equal(hu_mount_target_check(bad[i], &err), -1);
		assert_int_equal(err.code, EINVAL);
		assert_non_null(strstr(err.msg, "mount path"));
	}
	char longp[HU_MOUNT_TARGET_MAX + 2];
	memset(longp, 'a', sizeof(longp));
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(hu_mount_target_check(longp, &err), -1);
	longp[HU_MOUNT_TARGET_MAX - 1] = '\0'; /* 255 bytes: the longest allowed */
	assert_int_equal(hu_mount_target_check(longp, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_accepts), cmocka_unit_test(test_refuses)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
