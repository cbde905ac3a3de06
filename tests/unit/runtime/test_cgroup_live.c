/*
 * cgroups for real, on the running host (needs root; skipped otherwise or when
 * no usable cgroup setup is found). Groups are "test-<pid>-<n>" under the
 * parent "hutch-test"; every test's teardown kills and removes what it made,
 * and every wait is bounded.
 */
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/cgroup.h"
#include "runtime/clone3.h"
#include "util/fileutil.h"

#define PARENT "hutch-test"
#define CHILD_LIFETIME_S 30 /* children die by themselves should the test die */

struct live {
	int usable;
	struct hu_cgroup_env env;
	struct hu_cgroup *cg;
	char name[HU_CGROUP_NAME_MAX + 1];
	pid_t child;
};

/* ---- helpers -------------------------------------------------------------- */

static const char *hier_root(const struct live *l, int i)
{
	const char *roots[] = { l->env.v1_memory,  l->env.v1_pids,    l->env.v1_cpu, l->env.v1_cpuacct,
				l->env.v1_freezer, l->env.v1_blkio, l->env.v2_root };
	return roots[i];
}
#define NROOTS 7

static void group_path(const char *root, const char *name, const char *knob, char *buf, size_t n)
{
	int len = snprintf(buf, n, "%s/%s/%s%s%s", root, PARENT, name, knob ? "/" : "", knob ? knob : "");
	assert_true(len > 0 && (size_t)len < n);
}

static void read_knob(const char *root, const char *name, const char *knob, char *buf, size_t n)
{
	char path[512];
	hu_err err;

	group_path(root, name, knob, path, sizeof(path));
	if (hu_read_file(path, buf, n, &err) < 0)
		fail_msg("%s", err.msg);
	buf[strcspn(buf, "\n")] = '\0';
}

static void expect_knob(const char *root, const char *name, const char *knob, const char *want)
{
	char got[256];

	read_knob(root, name, knob, got, sizeof(got));
	assert_string_equal(got, want);
}

static int dir_exists(const char *root, const char *name)
{
	char path[512];
	struct stat st;

	group_path(root, name, NULL, path, sizeof(path));
	return stat(path, &st) == 0;
}

static void expect_gone_everywhere(const struct live *l, const char *name)
{
	for (int i = 0; i < NROOTS; i++)
		if (hier_root(l, i)[0] && dir_exists(hier_root(l, i), name))
			fail_msg("group %s left behind under %s", name, hier_root(l, i));
}

/* The value of "key v" in cgroup.events of the cgroup2 group. */
static long events_value(const struct live *l, const char *key)
{
	char path[512], buf[256];
	hu_err err;

	group_path(l->env.v2_root, l->name, "cgroup.events", path, sizeof(path));
	if (hu_read_file(path, buf, sizeof(buf), &err) < 0)
		fail_msg("%s", err.msg);
	const char *p = strstr(buf, key);
	assert_non_null(p);
	return strtol(p + strlen(key) + 1, NULL, 10);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

/* waitpid, bounded: -1 if pid is still running after timeout_ms. */
static int wait_child(pid_t pid, int timeout_ms, int *status)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0)
			return -1;
		usleep(2000);
	} while (ms_since(&t0) < timeout_ms);
	return -1;
}

static void expect_killed(pid_t pid)
{
	int status = 0;

	assert_int_equal(wait_child(pid, 10000, &status), 0);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
}

/* Reap `n` reparented descendants, bounded. */
static void reap_orphans(int n)
{
	struct timespec t0;
	int status;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (n > 0 && ms_since(&t0) < 5000) {
		pid_t r = waitpid(-1, &status, WNOHANG);
		if (r > 0)
			n--;
		else
			usleep(2000);
	}
	assert_int_equal(n, 0);
}

/* Block until the child writes its ready byte (bounded). */
static void wait_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	assert_int_equal(poll(&p, 1, 5000), 1);
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(c, 'R');
}

static void burn_cpu_and_memory(void)
{
	volatile unsigned long x = 0;
	char *mem = malloc(4 << 20);
	struct timespec t0;

	if (mem)
		memset(mem, 1, 4 << 20); /* charged to the group: it was joined first */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ms_since(&t0) < 20)
		x++;
	(void)x;
	free(mem);
}

/* A child that joins the group itself, uses a little memory and CPU there,
 * reports ready and sleeps until killed. */
static pid_t spawn_sleeper(struct hu_cgroup *cg)
{
	int p[2];
	hu_err err;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(CHILD_LIFETIME_S);
		if (hu_cgroup_attach(cg, getpid(), 0, &err) < 0) {
			fprintf(stderr, "child: %s\n", err.msg);
			_exit(2);
		}
		burn_cpu_and_memory();
		if (write(p[1], "R", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(p[1]);
	wait_ready(p[0]);
	close(p[0]);
	return pid;
}

static void new_group(struct live *l, const struct hu_cgroup_limits *lim)
{
	static int seq;
	hu_err err;

	snprintf(l->name, sizeof(l->name), "test-%d-%d", (int)getpid(), ++seq);
	if (hu_cgroup_create(&l->env, l->name, lim, &l->cg, &err) < 0)
		fail_msg("%s", err.msg);
}

static void destroy_group(struct live *l)
{
	hu_err err;
	int rc = hu_cgroup_destroy(l->cg, &err);

	l->cg = NULL;
	if (rc < 0)
		fail_msg("%s", err.msg);
	expect_gone_everywhere(l, l->name);
}

/* Kill the group's child through the group, then remove the group. */
static void kill_and_destroy(struct live *l)
{
	hu_err err;

	if (hu_cgroup_kill_all(l->cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_killed(l->child);
	l->child = 0;
	destroy_group(l);
}

/* ---- fixtures ------------------------------------------------------------- */

static int setup(void **state)
{
	struct live *l = calloc(1, sizeof(*l));
	hu_err err;

	if (!l)
		return -1;
	l->usable = geteuid() == 0 && hu_cgroup_detect(&l->env, &err) == 0;
	strcpy(l->env.parent, PARENT);
	*state = l;
	return 0;
}

/* Kill and remove whatever a (possibly failed) test left. */
static int teardown(void **state)
{
	struct live *l = *state;
	hu_err err;
	int status;

	if (l->child > 0) {
		kill(l->child, SIGKILL);
		wait_child(l->child, 5000, &status);
	}
	if (!l->cg && l->name[0] && hu_cgroup_open(&l->env, l->name, &l->cg, &err) < 0)
		l->cg = NULL;
	if (l->cg) {
		hu_cgroup_kill_all(l->cg, &err);
		hu_cgroup_destroy(l->cg, &err);
	}
	while (waitpid(-1, &status, WNOHANG) > 0) /* reparented grandchildren */
		;
	free(l);
	return 0;
}

static struct live *ready(void **state)
{
	struct live *l = *state;
	if (!l->usable)
		skip();
	return l;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_detect_hybrid_here(void **state)
{
	struct live *l = ready(state);

	assert_int_equal(l->env.mode, HU_CGROUP_HYBRID);
	assert_string_equal(l->env.v2_root, "/sys/fs/cgroup/unified");
	assert_string_equal(l->env.v1_memory, "/sys/fs/cgroup/memory");
	assert_string_equal(l->env.v1_pids, "/sys/fs/cgroup/pids");
	assert_string_equal(l->env.v1_cpu, "/sys/fs/cgroup/cpu");
	assert_string_equal(l->env.v1_cpuacct, "/sys/fs/cgroup/cpuacct");
	assert_string_equal(l->env.v1_freezer, "/sys/fs/cgroup/freezer");
	assert_string_equal(l->env.v1_blkio, "/sys/fs/cgroup/blkio");
}

/* Whether the kernel reports the group frozen, in the hierarchy the mode
 * freezes with. */
static int is_frozen(const struct live *l)
{
	char state[32];

	if (l->env.mode == HU_CGROUP_V1) {
		read_knob(l->env.v1_freezer, l->name, "freezer.state", state, sizeof(state));
		return !strcmp(state, "FROZEN");
	}
	return events_value(l, "frozen") == 1;
}

static void expect_procs(const struct live *l, const char *root, pid_t pid)
{
	char want[24], got[64];

	snprintf(want, sizeof(want), "%d", (int)pid);
	read_knob(root, l->name, "cgroup.procs", got, sizeof(got));
	assert_string_equal(got, want);
}

/* The same test in hybrid and, with the host's v1 mounts, pure v1 mode. */
static void lifecycle(struct live *l)
{
	struct hu_cgroup_limits lim = { .memory_bytes = 64ull << 20, .pids = 32, .cpu_millis = 500 };
	struct hu_cgroup_stats st;
	hu_err err;

	new_group(l, &lim);
	expect_knob(l->env.v1_memory, l->name, "memory.limit_in_bytes", "67108864");
	expect_knob(l->env.v1_memory, l->name, "memory.memsw.limit_in_bytes", "67108864");
	expect_knob(l->env.v1_pids, l->name, "pids.max", "32");
	expect_knob(l->env.v1_cpu, l->name, "cpu.cfs_quota_us", "50000");

	l->child = spawn_sleeper(l->cg);
	for (int i = 0; i < NROOTS; i++)
		if (hier_root(l, i)[0] && dir_exists(hier_root(l, i), l->name))
			expect_procs(l, hier_root(l, i), l->child);

	if (hu_cgroup_freeze(l->cg, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(is_frozen(l));
	if (hu_cgroup_thaw(l->cg, &err) < 0)
		fail_msg("%s", err.msg);
	assert_false(is_frozen(l));

	if (hu_cgroup_stats(l->cg, &st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(st.memory_bytes > 0);
	assert_int_equal(st.memory_limit, 64ull << 20);
	assert_true(st.cpu_usage_usec > 0);
	assert_int_equal(st.pids_current, 1);
	assert_int_equal(st.oom_kills, 0);

	kill_and_destroy(l);
}

static void test_lifecycle(void **state)
{
	struct live *l = ready(state);

	lifecycle(l);
}

/* Hybrid freezes and accounts CPU in cgroup2: no v1 freezer/cpuacct group. */
static void test_hybrid_uses_cgroup2_not_v1_freezer(void **state)
{
	struct live *l = ready(state);

	new_group(l, NULL);
	assert_true(dir_exists(l->env.v2_root, l->name));
	assert_false(dir_exists(l->env.v1_freezer, l->name));
	assert_false(dir_exists(l->env.v1_cpuacct, l->name));
	destroy_group(l);
}

/* Pure v1, run on this host's v1 mounts by ignoring its cgroup2 tree:
 * freezer.state, kill by enumeration, cpuacct. */
static struct live *ready_v1(void **state)
{
	struct live *l = ready(state);

	l->env.mode = HU_CGROUP_V1;
	l->env.v2_root[0] = '\0';
	if (!l->env.v1_freezer[0] || !l->env.v1_cpuacct[0])
		skip();
	return l;
}

static void test_lifecycle_pure_v1(void **state)
{
	lifecycle(ready_v1(state));
}

/* kill_all gets a whole process tree, not only the direct child. */
static void kill_descendants(struct live *l)
{
	struct hu_cgroup_limits lim = { .pids = 16 };
	struct hu_cgroup_stats st;
	int p[2];
	hu_err err;

	new_group(l, &lim);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	l->child = fork();
	assert_true(l->child >= 0);
	if (l->child == 0) {
		alarm(CHILD_LIFETIME_S);
		if (hu_cgroup_attach(l->cg, getpid(), 0, &err) < 0)
			_exit(2);
		for (int i = 0; i < 3; i++)
			if (fork() == 0) {
				alarm(CHILD_LIFETIME_S);
				for (;;)
					pause();
			}
		if (write(p[1], "R", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(p[1]);
	wait_ready(p[0]);
	close(p[0]);
	assert_int_equal(hu_cgroup_stats(l->cg, &st, &err), 0);
	assert_int_equal(st.pids_current, 4);
	if (hu_cgroup_kill_all(l->cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_killed(l->child);
	l->child = 0;
	char procs[64];
	read_knob(l->env.v1_memory, l->name, "cgroup.procs", procs, sizeof(procs));
	assert_string_equal(procs, "");
	/* the grandchildren are zombies now, reparented to this process (the
	 * subreaper) but not reaped: they must not keep the group alive */
	destroy_group(l);
	reap_orphans(3);
}

static void test_kill_all_gets_descendants(void **state)
{
	kill_descendants(ready(state));
}

static void test_kill_all_gets_descendants_pure_v1(void **state)
{
	kill_descendants(ready_v1(state));
}

/* hu_cgroup_kill_destroy: an empty group is only removed; a busy one has its
 * process killed first, and goes from every hierarchy either way. */
static void kill_destroy(struct live *l)
{
	hu_err err;
	int rc;

	new_group(l, NULL);
	rc = hu_cgroup_kill_destroy(l->cg, &err);
	l->cg = NULL;
	if (rc < 0)
		fail_msg("%s", err.msg);
	expect_gone_everywhere(l, l->name);

	new_group(l, NULL);
	l->child = spawn_sleeper(l->cg);
	rc = hu_cgroup_kill_destroy(l->cg, &err);
	l->cg = NULL;
	if (rc < 0)
		fail_msg("%s", err.msg);
	expect_killed(l->child);
	l->child = 0;
	expect_gone_everywhere(l, l->name);
}

static void test_kill_destroy(void **state)
{
	kill_destroy(ready(state));
}

static void test_kill_destroy_pure_v1(void **state)
{
	kill_destroy(ready_v1(state));
}

/* A child over its memory limit is OOM-killed; the test process is not. */
static void test_memory_limit_kills_the_child(void **state)
{
	struct live *l = ready(state);
	struct hu_cgroup_limits lim = { .memory_bytes = 64ull << 20 };
	struct hu_cgroup_stats st;
	hu_err err;

	new_group(l, &lim);
	l->child = fork();
	assert_true(l->child >= 0);
	if (l->child == 0) {
		const size_t size = 256ul << 20;
		alarm(CHILD_LIFETIME_S);
		if (hu_cgroup_attach(l->cg, getpid(), 0, &err) < 0)
			_exit(2);
		char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			_exit(3);
		for (size_t off = 0; off < size; off += 4096)
			mem[off] = 1;
		_exit(0); /* not reached when the limit holds */
	}
	expect_killed(l->child);
	l->child = 0;
	if (hu_cgroup_stats(l->cg, &st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(st.oom_kills >= 1);
	destroy_group(l);
}

/* clone3(CLONE_INTO_CGROUP) starts the child inside the cgroup2 group; attach
 * then adds it to the v1 hierarchies only. */
static void test_clone_into_cgroup(void **state)
{
	struct live *l = ready(state);
	struct hu_cgroup_limits lim = { .pids = 8 };
	char want[128], line[512];
	hu_err err;

	new_group(l, &lim);
	int fd = hu_cgroup_clone_fd(l->cg);
	assert_true(fd >= 0);
	struct clone_args args = {
		.flags = CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
		.cgroup = (uint64_t)fd,
	};
	long pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0)
		fail_msg("clone3: %s", strerror(errno));
	if (pid == 0) {
		alarm(CHILD_LIFETIME_S);
		for (;;)
			pause();
	}
	l->child = (pid_t)pid;

	snprintf(want, sizeof(want), "%ld", pid);
	read_knob(l->env.v2_root, l->name, "cgroup.procs", line, sizeof(line));
	assert_string_equal(line, want);
	read_knob(l->env.v1_memory, l->name, "cgroup.procs", line, sizeof(line));
	assert_string_equal(line, ""); /* not yet in v1 */
	if (hu_cgroup_attach(l->cg, l->child, 1, &err) < 0)
		fail_msg("%s", err.msg);
	read_knob(l->env.v1_memory, l->name, "cgroup.procs", line, sizeof(line));
	assert_string_equal(line, want);
	read_knob(l->env.v1_pids, l->name, "cgroup.procs", line, sizeof(line));
	assert_string_equal(line, want);

	kill_and_destroy(l);
}

/* What a sandbox's init does before its exec (runtime/sandbox.c): clone3
 * with CLONE_VM | CLONE_VFORK straight into the cgroup2 group, and the
 * child, sharing our memory, writes "0" into the v1 `tasks` files the
 * parent opened. The exec'd child is then in every hierarchy. */
struct self_attach_args {
	const int *fds;
	size_t n;
	int wrote; /* set by the child, in our memory */
};

__attribute__((no_sanitize("address", "undefined"))) static int self_attach_child(void *arg)
{
	struct self_attach_args *a = arg;
	char *const argv[] = {"sleep", "30", NULL};

	for (size_t i = 0; i < a->n; i++)
		if (write(a->fds[i], "0", 1) != 1)
			_exit(126);
	a->wrote = 1;
	execv("/bin/sleep", argv);
	_exit(127);
}

static void test_clone3_vm_self_attach(void **state)
{
	struct live *l = ready(state);
	struct hu_cgroup_limits lim = { .pids = 8 };
	int fds[HU_CGROUP_V1_MAX], pidfd = -1;
	size_t n = 0;
	char want[32], line[512];
	hu_err err;

	new_group(l, &lim);
	if (hu_cgroup_open_self_attach(l->cg, fds, &n, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(n >= 3); /* memory, pids, cpu at least */
	char *stack = malloc(64 * 1024);
	assert_non_null(stack);
	struct self_attach_args a = { .fds = fds, .n = n };
	int cgfd = hu_cgroup_clone_fd(l->cg);
	struct hu_clone_args ca = {
		.flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | (cgfd >= 0 ? CLONE_INTO_CGROUP : 0),
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		.exit_signal = SIGCHLD,
		.stack = (uint64_t)(uintptr_t)stack,
		.stack_size = 64 * 1024,
		.cgroup = cgfd >= 0 ? (uint64_t)cgfd : 0,
	};
	pid_t pid = hu_clone3_call(&ca, self_attach_child, &a);
	free(stack);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	if (pid < 0)
		fail_msg("clone3: %s", strerror(errno));
	l->child = pid;
	assert_true(pidfd >= 0);
	close(pidfd);
	assert_int_equal(a.wrote, 1); /* CLONE_VFORK: it has executed by now */

	snprintf(want, sizeof(want), "%d", (int)pid);
	read_knob(l->env.v1_memory, l->name, "cgroup.procs", line, sizeof(line));
	assert_string_equal(line, want);
	read_knob(l->env.v1_pids, l->name, "cgroup.procs", line, sizeof(line));
	assert_string_equal(line, want);
	read_knob(l->env.v1_cpu, l->name, "cgroup.procs", line, sizeof(line));
	assert_string_equal(line, want);
	if (cgfd >= 0) {
		read_knob(l->env.v2_root, l->name, "cgroup.procs", line, sizeof(line));
		assert_string_equal(line, want);
	}

	kill_and_destroy(l);
}

/* A group whose v1 directory vanished: an error naming the file, and no
 * descriptor left open. */
static void test_self_attach_fails_clean(void **state)
{
	struct live *l = ready(state);
	int fds[HU_CGROUP_V1_MAX];
	size_t n = 99;
	char path[512];
	hu_err err = {0};

	new_group(l, NULL);
	group_path(l->env.v1_pids, l->name, NULL, path, sizeof(path));
	assert_int_equal(rmdir(path), 0);
	int before = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(before);
	assert_int_equal(hu_cgroup_open_self_attach(l->cg, fds, &n, &err), -1);
	assert_int_equal(n, 0);
	assert_non_null(strstr(err.msg, "tasks"));
	int after = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(after);
	assert_int_equal(after, before); /* the lowest free fd did not move */
	destroy_group(l);
}

/* Raising and lowering the v1 memory limit keeps memsw in step. */
static void test_set_limits_up_and_down(void **state)
{
	struct live *l = ready(state);
	struct hu_cgroup_limits lim = { .memory_bytes = 64ull << 20, .cpu_millis = 250 };
	hu_err err;

	new_group(l, &lim);
	lim = (struct hu_cgroup_limits){ .memory_bytes = 128ull << 20, .pids = 5, .cpu_millis = 2000 };
	if (hu_cgroup_set_limits(l->cg, &lim, &err) < 0)
		fail_msg("%s", err.msg);
	expect_knob(l->env.v1_memory, l->name, "memory.limit_in_bytes", "134217728");
	expect_knob(l->env.v1_memory, l->name, "memory.memsw.limit_in_bytes", "134217728");
	expect_knob(l->env.v1_pids, l->name, "pids.max", "5");
	expect_knob(l->env.v1_cpu, l->name, "cpu.cfs_quota_us", "200000");
	lim.memory_bytes = 32ull << 20;
	assert_int_equal(hu_cgroup_set_limits(l->cg, &lim, &err), 0);
	expect_knob(l->env.v1_memory, l->name, "memory.limit_in_bytes", "33554432");
	expect_knob(l->env.v1_memory, l->name, "memory.memsw.limit_in_bytes", "33554432");
	lim = (struct hu_cgroup_limits){ 0 };
	if (hu_cgroup_set_limits(l->cg, &lim, &err) < 0)
		fail_msg("%s", err.msg);
	expect_knob(l->env.v1_pids, l->name, "pids.max", "max");
	expect_knob(l->env.v1_cpu, l->name, "cpu.cfs_quota_us", "-1");
	struct hu_cgroup_stats st;
	assert_int_equal(hu_cgroup_stats(l->cg, &st, &err), 0);
	assert_int_equal(st.memory_limit, 0);
	destroy_group(l);
}

/* A limit the kernel refuses, after every group exists: all are removed. */
static void test_failed_create_leaves_nothing(void **state)
{
	struct live *l = ready(state);
	struct hu_cgroup_limits lim = { .pids = 1ull << 40 }; /* above PID_MAX_LIMIT */
	struct hu_cgroup *cg = NULL;
	hu_err err;

	snprintf(l->name, sizeof(l->name), "test-%d-refused", (int)getpid());
	assert_int_equal(hu_cgroup_create(&l->env, l->name, &lim, &cg, &err), -1);
	assert_null(cg);
	assert_int_equal(err.code, EINVAL);
	expect_gone_everywhere(l, l->name);

	/* the cgroup2 step fails after the v1 groups were made */
	struct hu_cgroup_env broken = l->env;
	strcpy(broken.v2_root, "/dev/null");
	assert_int_equal(hu_cgroup_create(&broken, l->name, NULL, &cg, &err), -1);
	assert_int_equal(err.code, ENOTDIR);
	expect_gone_everywhere(l, l->name);
}

static void test_open_existing(void **state)
{
	struct live *l = ready(state);
	struct hu_cgroup *again = NULL;
	hu_err err;

	new_group(l, NULL);
	if (hu_cgroup_open(&l->env, l->name, &again, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(hu_cgroup_clone_fd(again) >= 0);
	hu_cgroup_close(l->cg);
	l->cg = again;
	destroy_group(l);
	assert_int_equal(hu_cgroup_open(&l->env, l->name, &again, &err), -1);
	assert_int_equal(err.code, ENOENT);
}

/* Block I/O on this host's real controller (v1 blkio here; io on cgroup2
 * hosts): the weight and a cap on the disk holding "/" land in the kernel's
 * files, a member process is in the blkio group, and destroy removes it. */
static void test_block_io_here(void **state)
{
	struct live *l = ready(state);
	struct hu_cgroup_limits lim = { .io = { .weight = 300, .bps = 8 << 20, .iops = 400, .n_dev = 1 } };
	struct hu_cgroup_io_support io;
	char path[96], want[96], got[256];
	struct stat st;
	hu_err err;

	if (hu_cgroup_io_probe(&l->env, &io, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(stat("/", &st), 0);
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition", major(st.st_dev), minor(st.st_dev));
	if (!io.controller || io.unknown || !io.weight || !io.caps || access(path, F_OK) == 0 ||
	    snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev)) < 0 ||
	    access(path, F_OK) < 0)
		skip(); /* no controller, or "/" on no whole disk of its own */
	lim.io.dev[0].major = major(st.st_dev);
	lim.io.dev[0].minor = minor(st.st_dev);
	new_group(l, &lim);
	const char *root = l->env.v1_blkio[0] ? l->env.v1_blkio : l->env.v2_root;
	read_knob(root, l->name, io.weight, got, sizeof(got));
	assert_true(!strcmp(got, "300") || !strcmp(got, "default 300"));
	if (l->env.v1_blkio[0]) {
		snprintf(want, sizeof(want), "%u:%u 8388608", major(st.st_dev), minor(st.st_dev));
		expect_knob(root, l->name, "blkio.throttle.read_bps_device", want);
		snprintf(want, sizeof(want), "%u:%u 400", major(st.st_dev), minor(st.st_dev));
		expect_knob(root, l->name, "blkio.throttle.write_iops_device", want);
		l->child = spawn_sleeper(l->cg);
		expect_procs(l, root, l->child);
		if (hu_cgroup_kill_all(l->cg, &err) < 0)
			fail_msg("%s", err.msg);
		expect_killed(l->child);
		l->child = 0;
	} else {
		snprintf(want, sizeof(want), "%u:%u rbps=8388608 wbps=8388608 riops=400 wiops=400", major(st.st_dev),
			 minor(st.st_dev));
		expect_knob(root, l->name, "io.max", want);
	}
	destroy_group(l);
}

/* Remove the test parent group where no other run still uses it. */
static int remove_parents(void **state)
{
	struct live l;
	hu_err err;
	char path[512];

	if (hu_cgroup_detect(&l.env, &err) < 0)
		return 0;
	for (int i = 0; i < NROOTS; i++)
		if (hier_root(&l, i)[0] && snprintf(path, sizeof(path), "%s/%s", hier_root(&l, i), PARENT) > 0)
			rmdir(path);
	return 0;
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_detect_hybrid_here),
		T(test_lifecycle),
		T(test_hybrid_uses_cgroup2_not_v1_freezer),
		T(test_lifecycle_pure_v1),
		T(test_kill_all_gets_descendants),
		T(test_kill_all_gets_descendants_pure_v1),
		T(test_kill_destroy),
		T(test_kill_destroy_pure_v1),
		T(test_memory_limit_kills_the_child),
		T(test_clone_into_cgroup),
		T(test_clone3_vm_self_attach),
		T(test_self_attach_fails_clean),
		T(test_set_limits_up_and_down),
		T(test_failed_create_leaves_nothing),
		T(test_open_existing),
		T(test_block_io_here),
	};
#undef T
	/* grandchildren of a killed child are reaped here, not left as zombies */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	return cmocka_run_group_tests(tests, NULL, remove_parents);
}
