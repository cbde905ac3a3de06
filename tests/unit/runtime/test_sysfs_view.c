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
#include <sched.h>
#include <sys/wait.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "runtime/mountapi.h"
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

/* A view handed over by another process (the layers keeper, init_keep.h)
 * is used only if hu_sysfs_view_check accepts it: the real view passes;
 * the host's own /sys (writable, or made read-only: it lists the host's
 * interfaces), the view paired with the host's network namespace, with a
 * namespace a user namespace other than ours owns, or with no network
 * namespace at all, and a file system that is not sysfs are refused. */
static void test_check_refuses_all_but_the_view(void **state)
{
	(void)state;
	struct hu_runtime rt = {.sysfs_view = HU_SYSFS_VIEW_UNTRIED, .sysfs_netns = -1};
	hu_err err = {0};
	int a = -1;

	if (geteuid() != 0)
		skip();
	assert_int_equal(hu_sysfs_view_clone(&rt, &a, &err), 0);
	if (a < 0) {
		hu_sysfs_view_close(&rt);
		skip();
	}
	close(a);
	int view = rt.sysfs_view, netns = rt.sysfs_netns;
	assert_int_equal(hu_sysfs_view_check(view, netns), 1);

	int host = hu_open_tree(AT_FDCWD, "/sys", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	assert_true(host >= 0);
	assert_int_equal(hu_sysfs_view_check(host, netns), 0);
	struct hu_mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					       MOUNT_ATTR_NOEXEC};
	assert_int_equal(hu_mount_setattr(host, "", AT_EMPTY_PATH, &ro), 0);
	char names[256];
	net_names(host, names, sizeof(names));
	if (strcmp(names, "lo ") != 0) /* a host with interfaces besides lo */
		assert_int_equal(hu_sysfs_view_check(host, netns), 0);
	close(host);

	int host_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int mnt_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	assert_true(host_net >= 0 && mnt_ns >= 0);
	assert_int_equal(hu_sysfs_view_check(view, host_net), 0);
	assert_int_equal(hu_sysfs_view_check(view, mnt_ns), 0);
	close(host_net);
	close(mnt_ns);

	/* a network namespace of a child user namespace (a sandbox's kind) */
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
			_exit(1);
		close(pipefd[1]);
		_exit(read(pipefd[0], &c, 1) < 0); /* until the parent has looked */
	}
	close(pipefd[0]);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	struct stat own, child;
	for (int i = 0; i < 200; i++) { /* until the child has unshared */
		if (stat(path, &child) == 0 && stat("/proc/self/ns/user", &own) == 0 && child.st_ino != own.st_ino)
			break;
		usleep(5000);
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	int other = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(other >= 0);
	assert_int_equal(hu_sysfs_view_check(view, other), 0);
	close(other);
	close(pipefd[1]);
	waitpid(pid, NULL, 0);

	int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(proc >= 0);
	assert_int_equal(hu_sysfs_view_check(proc, netns), 0);
	close(proc);
	hu_sysfs_view_close(&rt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_view_is_one_readonly_sysfs_with_only_lo),
		cmocka_unit_test(test_check_refuses_all_but_the_view),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
