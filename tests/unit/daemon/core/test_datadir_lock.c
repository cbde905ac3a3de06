/* The data dir lock: shared holders coexist, an exclusive taker is refused
 * while any holds it (and learns who), a holder's death frees it, and a
 * symlink at the lock's name is refused. POSIX locks are per process, so
 * the other holders are forked children. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/core/datadir_lock.h"
#include "util/fileutil.h"

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/hutch-ut-lock-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	hu_err err;
	return hu_rm_rf(dir, &err);
}

/* A child that holds the lock shared until killed; returns once it does. */
static pid_t holder_child(void)
{
	int p[2];
	char c;
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		hu_err err;
		int fd = hu_datadir_lock_shared(dir, &err);
		(void)!write(p[1], fd >= 0 ? "y" : "n", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	assert_int_equal(c, 'y');
	return pid;
}

static void stop_child(pid_t pid)
{
	int st;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

static void test_shared_blocks_exclusive(void **state)
{
	hu_err err;
	pid_t holder;
	pid_t a = holder_child(), b = holder_child(); /* two shared holders at once */

	assert_int_equal(hu_datadir_lock_exclusive(dir, &holder, &err), -1);
	assert_int_equal(err.code, EBUSY);
	assert_true(holder == a || holder == b);
	stop_child(a);
	assert_int_equal(hu_datadir_lock_exclusive(dir, &holder, &err), -1);
	assert_int_equal(holder, b);
	/* the last holder's death frees it: no stale lock after a crash */
	stop_child(b);
	int fd = hu_datadir_lock_exclusive(dir, &holder, &err);
	assert_true(fd >= 0);
	close(fd);
}

static void test_exclusive_holder_then_shared(void **state)
{
	hu_err err;
	pid_t holder;
	int fd = hu_datadir_lock_exclusive(dir, &holder, &err);
	assert_true(fd >= 0);
	/* a daemon starting meanwhile waits, says so (naming the holder) on
	 * stderr, then gets it */
	char logpath[128], log[512] = "", want[64];
	snprintf(logpath, sizeof(logpath), "%s/stderr", dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		hu_err e;
		int out = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (out < 0 || dup2(out, STDERR_FILENO) < 0)
			_exit(2);
		_exit(hu_datadir_lock_shared(dir, &e) >= 0 ? 0 : 1);
	}
	usleep(200 * 1000);
	int st;
	assert_int_equal(waitpid(pid, &st, WNOHANG), 0); /* still waiting */
	close(fd);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	hu_err err2;
	assert_true(hu_read_file(logpath, log, sizeof(log), &err2) > 0);
	snprintf(want, sizeof(want), "locked by pid %d", (int)getpid());
	if (!strstr(log, want) || !strstr(log, "waiting"))
		fail_msg("no waiting message naming the holder: %s", log);
}

static void test_symlink_refused(void **state)
{
	char path[128], target[128];
	hu_err err;
	pid_t holder;

	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	snprintf(path, sizeof(path), "%s/%s", dir, HU_DATADIR_LOCK_FILE);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(hu_datadir_lock_exclusive(dir, &holder, &err), -1);
	assert_int_equal(err.code, ELOOP);
	assert_int_equal(access(target, F_OK), -1); /* nothing created through it */
	assert_int_equal(hu_datadir_lock_shared(dir, &err), -1);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_shared_blocks_exclusive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exclusive_holder_then_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
