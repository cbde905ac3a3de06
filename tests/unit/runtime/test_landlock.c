/*
 * Landlock confinement (src/runtime/landlock.c). Each case runs in a forked
 * child, because confinement is irreversible: the child makes a private
 * mount namespace, chroots into a fresh tmpfs (as a sandbox's init has
 * pivoted into its root), keeps a directory fd of the world outside, and
 * confines itself. The outside fd must then open and create nothing, the
 * inside must work as before, and no device node can be made. Needs root
 * and Landlock ABI 2; skipped otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/landlock.h"
#include "unit/testutil.h"

/* What the child saw, one errno (0 = success) per probe. */
struct probes {
	int confined; /* hu_landlock_confine_to_root's result */
	int outside_read, outside_create, outside_mkdir, inside_read, inside_create, inside_rename, fifo, chardev;
};

struct setting {
	int outdir_parent;
	const char *inside;
};

static void child(void *arg, void *out)
{
	const struct setting *set = arg;
	int outdir_parent = set->outdir_parent;
	const char *inside = set->inside;
	struct probes *pp = out, p = {0};
	hu_err err = {0};

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", inside, "tmpfs", 0, "size=1m") < 0 || chroot(inside) < 0 || chdir("/") < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(2);
	int fd = open("/own", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || mkdir("/d1", 0755) < 0 || mkdir("/d2", 0755) < 0 || hu_test_open_errno(AT_FDCWD, "/d1/f", O_WRONLY | O_CREAT))
		_exit(3);
	close(fd);
	p.confined = hu_landlock_confine_to_root(&err);
	p.outside_read = hu_test_open_errno(outdir_parent, "secret", O_RDONLY);
	p.outside_create = hu_test_open_errno(outdir_parent, "created", O_WRONLY | O_CREAT);
	p.outside_mkdir = hu_test_errno_of(mkdirat(outdir_parent, "made", 0755));
	p.inside_read = hu_test_open_errno(AT_FDCWD, "/own", O_RDONLY);
	p.inside_create = hu_test_open_errno(AT_FDCWD, "/new", O_WRONLY | O_CREAT);
	p.inside_rename = hu_test_errno_of(rename("/d1/f", "/d2/f")); /* needs REFER (ABI 2) */
	p.fifo = hu_test_errno_of(mkfifo("/fifo", 0600));
	p.chardev = hu_test_errno_of(mknod("/null", S_IFCHR | 0666, makedev(1, 3)));
	*pp = p;
}

static void test_confined_to_root(void **state)
{
	(void)state;
	if (geteuid() != 0 || hu_landlock_abi() < 2) {
		skip();
		return;
	}
	char dir[] = "/tmp/hutch-landlock-test.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[sizeof(dir) + 16];
	snprintf(path, sizeof(path), "%s/secret", dir);
	int s = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(s >= 0);
	close(s);
	snprintf(path, sizeof(path), "%s/inside", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	int outdir = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(outdir >= 0);
	struct setting set = {.outdir_parent = outdir, .inside = path};
	struct probes p;
	int ran = hu_test_in_child(child, &set, &p, sizeof(p));
	close(outdir);
	/* the child's tmpfs went with its mount namespace */
	char sub[sizeof(dir) + 16];
	snprintf(sub, sizeof(sub), "%s/secret", dir);
	unlink(sub);
	rmdir(path);
	struct stat st;
	snprintf(sub, sizeof(sub), "%s/created", dir);
	int created = stat(sub, &st) == 0;
	unlink(sub);
	snprintf(sub, sizeof(sub), "%s/made", dir);
	int made = stat(sub, &st) == 0;
	rmdir(sub);
	rmdir(dir);

	assert_int_equal(ran, 0);
	assert_int_equal(p.confined, 1);
	assert_int_equal(p.outside_read, EACCES);
	assert_int_equal(p.outside_create, EACCES);
	assert_int_equal(p.outside_mkdir, EACCES);
	assert_false(created);
	assert_false(made);
	assert_int_equal(p.inside_read, 0);
	assert_int_equal(p.inside_create, 0);
	assert_int_equal(p.inside_rename, 0);
	assert_int_equal(p.fifo, 0);
	/* root of the host could make /dev/null here without Landlock */
	assert_int_equal(p.chardev, EACCES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_confined_to_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
