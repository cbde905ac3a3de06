/*
 * The template builder's confinement (src/template/tpl_confine.c), in a
 * forked child because it is irreversible: once confined, the builder
 * works beneath its build root, reads /usr, and reaches nothing
 * else: no other file, no network, no signal to its parent, no mount.
 * Needs root and Landlock ABI 6 (for the signal scope); skipped otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/landlock.h"
#include "unit/testutil.h"
#include "template/template.h"

struct probes {
	int confine, write_inside, rename_inside, read_usr, read_etc, write_tmp, signal_parent, connect_lo, mount_tmpfs;
};

static void child(void *arg, void *out)
{
	const char *dir = arg;
	struct probes *pp = out, p = {0};
	char a[256], b[256];
	hu_err err = {0};

	int root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	p.confine = root < 0 ? errno : hu_tpl_confine_builder(root, &err);
	snprintf(a, sizeof(a), "%s/.build-x", dir);
	snprintf(b, sizeof(b), "%s/x", dir);
	p.write_inside = hu_test_errno_of(mkdir(a, 0700));
	p.rename_inside = hu_test_errno_of(rename(a, b));
	p.read_usr = hu_test_open_errno(AT_FDCWD, "/usr/bin/true", O_RDONLY);
	p.read_etc = hu_test_open_errno(AT_FDCWD, "/etc/hostname", O_RDONLY);
	p.write_tmp = hu_test_open_errno(AT_FDCWD, "/tmp/hutch-confine-probe", O_WRONLY | O_CREAT);
	p.signal_parent = hu_test_errno_of(kill(getppid(), 0));
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in lo = {.sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	p.connect_lo = s < 0 ? errno : hu_test_errno_of(connect(s, (struct sockaddr *)&lo, sizeof(lo)));
	p.mount_tmpfs = hu_test_errno_of(mount("tmpfs", a, "tmpfs", 0, NULL));
	*pp = p;
}

static void test_builder_confined(void **state)
{
	(void)state;
	if (geteuid() != 0 || hu_landlock_abi() < 6) {
		skip();
		return;
	}
	char dir[] = "/tmp/hutch-confine-test.XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct probes p;
	int ran = hu_test_in_child(child, dir, &p, sizeof(p));
	char x[64];
	snprintf(x, sizeof(x), "%s/x", dir);
	rmdir(x);
	rmdir(dir);
	struct stat st;
	int tmp_made = stat("/tmp/hutch-confine-probe", &st) == 0;
	unlink("/tmp/hutch-confine-probe");

	assert_int_equal(ran, 0);
	assert_int_equal(p.confine, 0);
	assert_int_equal(p.write_inside, 0);
	assert_int_equal(p.rename_inside, 0);
	assert_int_equal(p.read_usr, 0);
	assert_int_equal(p.read_etc, EACCES);
	assert_int_equal(p.write_tmp, EACCES);
	assert_false(tmp_made);
	assert_int_equal(p.signal_parent, EPERM);
	assert_int_equal(p.connect_lo, EPERM); /* no socket at all */
	assert_int_equal(p.mount_tmpfs, EPERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builder_confined),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
