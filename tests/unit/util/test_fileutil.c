/* hu_replace_private_at: the write-then-rename that the seccomp cache and the
 * init keeper's record rely on. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileutil.h"

struct scratch {
	char dir[64];
	int fd;
};

static int setup(void **state)
{
	static struct scratch s;
	snprintf(s.dir, sizeof(s.dir), "/tmp/hutch-fileutil.XXXXXX");
	if (!mkdtemp(s.dir))
		return -1;
	s.fd = open(s.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = &s;
	return s.fd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	struct scratch *s = *state;
	hu_err err;
	close(s->fd);
	return hu_rm_rf(s->dir, &err);
}

/* entries of the scratch dir other than . and .. */
static int entries(const struct scratch *s)
{
	DIR *d = opendir(s->dir);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	if (d)
		closedir(d);
	return n;
}

static void test_parts_written_private(void **state)
{
	struct scratch *s = *state;
	struct iovec parts[] = {{.iov_base = "head,", .iov_len = 5}, {.iov_base = "body", .iov_len = 4}};
	hu_err err;
	char buf[32] = {0};
	struct stat st;

	mode_t old = umask(0);
	assert_int_equal(hu_replace_private_at(s->fd, "entry", parts, 2, &err), 0);
	umask(old);
	int fd = openat(s->fd, "entry", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 9);
	assert_string_equal(buf, "head,body");
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	close(fd);
	assert_int_equal(entries(s), 1);
}

/* a symlink planted under the name is replaced, and its target untouched */
static void test_symlink_replaced_not_followed(void **state)
{
	struct scratch *s = *state;
	struct iovec part = {.iov_base = "new", .iov_len = 3};
	hu_err err;
	struct stat st;

	int fd = openat(s->fd, "target", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "old", 3), 3);
	close(fd);
	assert_int_equal(symlinkat("target", s->fd, "link"), 0);
	assert_int_equal(hu_replace_private_at(s->fd, "link", &part, 1, &err), 0);
	assert_int_equal(fstatat(s->fd, "link", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(fstatat(s->fd, "target", &st, 0), 0);
	assert_int_equal(st.st_size, 3);
	char buf[8] = {0};
	fd = openat(s->fd, "target", O_RDONLY | O_CLOEXEC);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 3);
	close(fd);
	assert_string_equal(buf, "old");
}

/* a name that cannot be renamed over (a non-empty directory) fails and
 * leaves no temporary file behind */
static void test_failure_leaves_nothing(void **state)
{
	struct scratch *s = *state;
	struct iovec part = {.iov_base = "x", .iov_len = 1};
	hu_err err;

	assert_int_equal(mkdirat(s->fd, "dir", 0700), 0);
	int fd = openat(s->fd, "dir/inside", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	int before = entries(s);
	assert_int_equal(hu_replace_private_at(s->fd, "dir", &part, 1, &err), -1);
	assert_non_null(strstr(err.msg, "rename"));
	assert_int_equal(entries(s), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_parts_written_private, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_replaced_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_leaves_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
