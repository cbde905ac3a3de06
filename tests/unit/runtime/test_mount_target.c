/* hu_mount_target_check: where a volume, host mount or tmpfs may go in a
 * sandbox; hu_mounts_check: a list of them as a whole; hu_tmpfs_arg_parse:
 * `hutch run --tmpfs PATH[:SIZE]`. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
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

static void test_tmpfs_arg(void **state)
{
	struct hu_mount_spec m;
	hu_err err;
	char a[] = "/tmp", b[] = "/scratch:256M", c[] = "/x:65536";

	assert_int_equal(hu_tmpfs_arg_parse(a, &m, &err), 0);
	assert_int_equal(m.type, HU_MOUNT_TYPE_TMPFS);
	assert_string_equal(m.target, "/tmp");
	assert_int_equal(m.tmpfs_bytes, 0); /* the caller's default */
	assert_int_equal(m.source_fd, -1);
	assert_null(m.source);
	assert_int_equal(hu_tmpfs_arg_parse(b, &m, &err), 0);
	assert_string_equal(m.target, "/scratch");
	assert_int_equal(m.tmpfs_bytes, 256ull << 20);
	assert_int_equal(hu_tmpfs_arg_parse(c, &m, &err), 0);
	assert_int_equal(m.tmpfs_bytes, 65536);
}

static void test_tmpfs_arg_refuses(void **state)
{
	static const char *const bad[] = {"/t:0",	 "/t:0M",  "/t:",	"/t:lots", "/t:-1",	"/t:1M:2M",
					  "/t:99999999999999999999", "/t:99999999999T", "rel:1M", "/proc:1M",
					  "/dev/shm",	 "/sys/x", "/usr",	"/",	   "/a/../b:1M", "/a/",
					  ":1M",	 ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char arg[64];
		struct hu_mount_spec m;
		hu_err err = {0};
		snprintf(arg, sizeof(arg), "%s", bad[i]);
		assert_int_equal(hu_tmpfs_arg_parse(arg, &m, &err), -1);
		assert_true(err.code == EINVAL || err.code == ERANGE);
		assert_non_null(strstr(err.msg, "--tmpfs"));
	}
}

static void test_mounts_check(void **state)
{
	struct hu_mount_spec m[HU_MOUNTS_MAX + 1];
	char targets[HU_MOUNTS_MAX + 1][8];
	hu_err err;

	for (size_t i = 0; i < HU_MOUNTS_MAX + 1; i++) {
		snprintf(targets[i], sizeof(targets[i]), "/t%zu", i);
		m[i] = (struct hu_mount_spec){.type = HU_MOUNT_TYPE_TMPFS, .source_fd = -1, .target = targets[i],
					      .tmpfs_bytes = 1 << 20};
	}
	assert_int_equal(hu_mounts_check(m, HU_MOUNTS_MAX, 512 << 20, &err), 0);
	assert_int_equal(hu_mounts_check(m, HU_MOUNTS_MAX + 1, 512 << 20, &err), -1);
	assert_non_null(strstr(err.msg, "at most"));
	/* a tmpfs of the whole memory limit is fine, a byte more is not */
	m[0].tmpfs_bytes = 512 << 20;
	assert_int_equal(hu_mounts_check(m, 1, 512 << 20, &err), 0);
	m[0].tmpfs_bytes++;
	assert_int_equal(hu_mounts_check(m, 1, 512 << 20, &err), -1);
	assert_non_null(strstr(err.msg, "memory limit"));
	assert_int_equal(hu_mounts_check(m, 1, 0, &err), 0); /* no memory limit */
	m[0].tmpfs_bytes = 0; /* tmpfs reads 0 as unlimited */
	assert_int_equal(hu_mounts_check(m, 1, 0, &err), -1);
	assert_int_equal(err.code, EINVAL);
	m[0].tmpfs_bytes = 1 << 20;
	/* one target twice, whatever the types */
	m[1].target = "/t0";
	assert_int_equal(hu_mounts_check(m, 2, 512 << 20, &err), -1);
	assert_non_null(strstr(err.msg, "twice"));
	m[1].type = HU_MOUNT_TYPE_DIR;
	assert_int_equal(hu_mounts_check(m, 2, 512 << 20, &err), -1);
	m[1].target = targets[1];
	assert_int_equal(hu_mounts_check(m, 2, 512 << 20, &err), 0); /* a directory's size is not looked at */
	m[1].type = (enum hu_mount_type)7;
	assert_int_equal(hu_mounts_check(m, 2, 512 << 20, &err), -1);
	m[1].type = HU_MOUNT_TYPE_TMPFS;
	m[1].target = "/proc/x";
	assert_int_equal(hu_mounts_check(m, 2, 512 << 20, &err), -1);
}

static void test_shm_bytes(void **state)
{
	struct hu_cgroup_limits l = {.memory_bytes = 512ull << 20};
	assert_int_equal(hu_sandbox_shm_bytes(&l), 256ull << 20);
	l.memory_bytes = 0;
	assert_int_equal(hu_sandbox_shm_bytes(&l), 64ull << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepts),	     cmocka_unit_test(test_refuses),
		cmocka_unit_test(test_tmpfs_arg),    cmocka_unit_test(test_tmpfs_arg_refuses),
		cmocka_unit_test(test_mounts_check), cmocka_unit_test(test_shm_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
