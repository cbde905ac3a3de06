/*
 * The sandboxes' shared /sys view (src/runtime/sysfs_view.c): made once, in
 * a network namespace of its own (only lo), read-only on a read-only
 * superblock, and every clone a new mount of that one superblock. The
 * calling thread's network namespace is the same before and after. Needs
 * root and a kernel that clones detached mounts; skipped otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "runtime/runtime_internal.h"
#include "runtime/sysfs_view.h"

#define SYSFS_MAGIC_ 0x62656572

static ino_t netns_ino(void)
{
	struct stat st;
	return stat("/proc/thread-self/ns/net", &st) == 0 ? st.st_ino : 0;
}

/* The names in the view's class/net, each followed by a space, in readdir order. */
static void net_names(int view, char *buf, size_t n)
{
	buf[0] = '\0';
	int fd = openat(view, "class/net", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	DIR *d = fdopendir(fd);
	assert_non_null(d);
	size_t len = 0;
	for (struct dirent *de; (de = readdir(d));)
		if (de->d_name[0] != '.' && len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s ", de->d_name);
	closedir(d);
}

static void test_view_is_one_readonly_sysfs_with_only_lo(void **state)
{
	(void)state;
	struct hu_runtime rt = {.sysfs_view = HU_SYSFS_VIEW_UNTRIED, .sysfs_netns = -1};
	hu_err err = {0};
	int a = -1, b = -1;

	if (geteuid() != 0)
		skip();
	ino_t before = netns_ino();
	assert_int_equal(hu_sysfs_view_clone(&rt, &a, &err), 0);
	if (a < 0) {
		hu_sysfs_view_close(&rt);
		skip(); /* this kernel offers no view: sandboxes mount their own */
	}
	assert_int_equal(hu_sysfs_view_shared(&rt), 1);
	assert_true(netns_ino() == before);
	assert_int_equal(hu_sysfs_view_clone(&rt, &b, &err), 0);
	assert_true(b >= 0 && b != a);

	struct statfs sf;
	struct statvfs sv;
	struct stat sa, sb;
	assert_int_equal(fstatfs(a, &sf), 0);
	assert_true(sf.f_type == SYSFS_MAGIC_);
	assert_int_equal(fstatvfs(a, &sv), 0);
	assert_true(sv.f_flag & ST_RDONLY);
	assert_true(sv.f_flag & ST_NOSUID);
	assert_true(sv.f_flag & ST_NODEV);
	assert_true(sv.f_flag & ST_NOEXEC);
	assert_int_equal(fstat(a, &sa), 0);
	assert_int_equal(fstat(b, &sb), 0);
	assert_true(sa.st_dev == sb.st_dev); /* one superblock */

	char names[256];
	net_names(a, names, sizeof(names));
	assert_string_equal(names, "lo ");
	/* read-only for root too */
	assert_int_equal(openat(a, "class/net/lo/mtu", O_WRONLY | O_CLOEXEC), -1);
	assert_int_equal(errno, EROFS);

	close(a);
	close(b);
	hu_sysfs_view_close(&rt);
	assert_int_equal(hu_sysfs_view_shared(&rt), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_view_is_one_readonly_sysfs_with_only_lo),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
