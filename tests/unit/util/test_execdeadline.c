/*
 * hu_exec_deadline_arm: the child is SIGKILLed when it does not exec in
 * time, and a successful execve deletes the timer (the program runs past the
 * deadline). alarm() is the contrast: it survives execve, which is why
 * init/spawn.c cannot use it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/execdeadline.h"

#define DEADLINE_MS 100
/* the program exec'd runs this long: well past the deadline */
#define PROGRAM "sleep 0.4; exit 7"

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Fork a child that arms the limit (or alarm()), then execs PROGRAM or, with
 * exec false, hangs; its wait status. */
static int run_child(bool use_alarm, bool exec)
{
	int status;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		hu_err err;
		if (use_alarm) {
			signal(SIGALRM, SIG_DFL);
			alarm(1);
		} else if (hu_exec_deadline_arm(DEADLINE_MS, &err) < 0) {
			_exit(100);
		}
		if (exec)
			execl("/bin/sh", "sh", "-c", use_alarm ? "sleep 1.5; exit 7" : PROGRAM, (char *)NULL);
		for (;;)
			pause();
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void test_kills_a_child_that_does_not_exec(void **state)
{
	(void)state;
	long t0 = now_ms();
	int status = run_child(false, false);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	assert_true(now_ms() - t0 >= DEADLINE_MS);
}

static void test_execve_deletes_it(void **state)
{
	(void)state;
	int status = run_child(false, true);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 7);
}

/* Why not alarm(): the same sequence, and the program dies of SIGALRM. */
static void test_alarm_would_survive_execve(void **state)
{
	(void)state;
	int status = run_child(true, true);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGALRM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kills_a_child_that_does_not_exec),
		cmocka_unit_test(test_execve_deletes_it),
		cmocka_unit_test(test_alarm_would_survive_execve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
