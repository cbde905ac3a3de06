/*
 * ns_floor: the kernel's floor under a sandbox's create+destroy on this
 * machine. Workers clone a child that exits at once and reap it, in a loop,
 * for a fixed time; the figure is children per second over all workers.
 *
 *   ns_floor [--seconds S] [--workers W]
 *
 * Two rows, run one after the other:
 *   fork         clone(SIGCHLD): a process and nothing else
 *   namespaces   clone with the seven namespaces a hutch sandbox gets (user,
 *                mount, pid, network, uts, ipc, cgroup)
 *
 * No exec, no mounts, no cgroups, no seccomp, no HTTP: what no runtime with
 * fresh namespaces per sandbox can go below. pool_bench.mjs prints it beside
 * hutch's sustained create+destroy rate (docs/benchmarks.md).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Children made and reaped by one worker until `end`. */
static long worker(unsigned long flags, double end)
{
	long n = 0;
	while (now_s() < end) {
		/* raw clone: no fork handlers, and the child touches nothing */
		pid_t pid = (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
		if (pid == 0)
			_exit(0);
		if (pid < 0) {
			perror("clone");
			return -1;
		}
		if (waitpid(pid, NULL, 0) < 0)
			return -1;
		n++;
	}
	return n;
}

/* Children per second with `workers` workers for `secs` seconds; -1 on error. */
static double run(unsigned long flags, int workers, double secs)
{
	int p[2];
	long total = 0;
	int ok = 1;

	if (pipe(p) < 0)
		return -1;
	double start = now_s(), end = start + secs;
	for (int w = 0; w < workers; w++) {
		pid_t pid = fork();
		if (pid == 0) {
			long n = worker(flags, end);
			_exit(write(p[1], &n, sizeof(n)) == sizeof(n) ? 0 : 1);
		}
		if (pid < 0)
			ok = 0;
	}
	close(p[1]);
	for (long n; read(p[0], &n, sizeof(n)) == sizeof(n);) {
		if (n < 0)
			ok = 0;
		total += n;
	}
	close(p[0]);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return ok ? (double)total / (now_s() - start) : -1;
}

int main(int argc, char **argv)
{
	double secs = 5;
	int workers = 8;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seconds"))
			secs = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--workers"))
			workers = atoi(argv[i + 1]);
		else {
			fprintf(stderr, "usage: ns_floor [--seconds S] [--workers W]\n");
			return 2;
		}
	}
	if (secs <= 0 || workers <= 0) {
		fprintf(stderr, "ns_floor: --seconds and --workers must be positive\n");
		return 2;
	}
	const unsigned long all = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS |
				  CLONE_NEWIPC | CLONE_NEWCGROUP;
	double fork_rate = run(0, workers, secs);
	double ns_rate = run(all, workers, secs);
	if (fork_rate < 0 || ns_rate < 0) {
		fprintf(stderr, "ns_floor: a worker failed\n");
		return 1;
	}
	printf("fork %.0f/s\nnamespaces %.0f/s\n", fork_rate, ns_rate);
	return 0;
}
