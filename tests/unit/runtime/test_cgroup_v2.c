/*
 * cgroup backends against fake hierarchies in a temp dir: the exact strings
 * written to every knob (v2, v1, hybrid), rollback, detection from a fake
 * mountinfo, name validation and the cpu formatting helpers.
 *
 * mkdir in a plain directory creates no knob files, so each test pre-creates
 * the group directory with the (empty) files the kernel would have made;
 * hu_cgroup_create takes such an empty leftover group over, as it would after
 * a crash. Knob files start empty because hu_write_str does not truncate
 * (cgroupfs does not need it).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/cgroup.h"
#include "util/fileutil.h"

struct tree {
	char root[64];
};

/* ---- fake tree helpers ---------------------------------------------------- */

static void pathf(char *buf, size_t n, const struct tree *t, const char *rel)
{
	int len = snprintf(buf, n, "%s/%s", t->root, rel);
	assert_true(len > 0 && (size_t)len < n);
}

static void put(const struct tree *t, const char *rel, const char *content)
{
	char path[512];
	hu_err err;

	pathf(path, sizeof(path), t, rel);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	assert_int_equal(hu_mkdir_p(path, 0755, &err), 0);
	*slash = '/';
	assert_int_equal(hu_write_file(path, content, strlen(content), O_CREAT | O_TRUNC, 0644, &err), 0);
}

static void put_dir(const struct tree *t, const char *rel)
{
	char path[512];
	hu_err err;

	pathf(path, sizeof(path), t, rel);
	assert_int_equal(hu_mkdir_p(path, 0755, &err), 0);
}

static void expect_file(const struct tree *t, const char *rel, const char *want)
{
	char path[512], got[512];
	hu_err err;

	pathf(path, sizeof(path), t, rel);
	if (hu_read_file(path, got, sizeof(got), &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(got, want);
}

static int exists(const struct tree *t, const char *rel)
{
	char path[512];
	struct stat st;

	pathf(path, sizeof(path), t, rel);
	return stat(path, &st) == 0;
}

static void set_root(char *field, const struct tree *t, const char *rel)
{
	pathf(field, 256, t, rel);
}

static int setup_tree(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	if (!t)
		return -1;
	strcpy(t->root, "/tmp/hutch-cgtest-XXXXXX");
	if (!mkdtemp(t->root)) {
		free(t);
		return -1;
	}
	*state = t;
	return 0;
}

static int teardown_tree(void **state)
{
	struct tree *t = *state;
	hu_err err;
	int rc = hu_rm_rf(t->root, &err);
	free(t);
	return rc;
}

/* ---- cgroup2 -------------------------------------------------------------- */

/* A cgroup2 root with a "hutch" parent and an empty leftover group `name`. */
static void fake_v2(const struct tree *t, struct hu_cgroup_env *env, const char *name)
{
	static const char *const knobs[] = { "cgroup.procs", "memory.max", "memory.swap.max", "memory.oom.group",
					     "pids.max", "cpu.max", "cgroup.freeze" };
	char rel[256];

	put(t, "cg2/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	put(t, "cg2/cgroup.subtree_control", "");
	put(t, "cg2/hutch/cgroup.subtree_control", "");
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		snprintf(rel, sizeof(rel), "cg2/hutch/%s/%s", name, knobs[i]);
		put(t, rel, "");
	}
	snprintf(rel, sizeof(rel), "cg2/hutch/%s/cgroup.events", name);
	put(t, rel, "populated 0\nfrozen 0\n");

	memset(env, 0, sizeof(*env));
	env->mode = HU_CGROUP_V2;
	set_root(env->v2_root, t, "cg2");
	strcpy(env->parent, "hutch");
}

static void test_v2_create_writes_limits(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .memory_bytes = 256ull << 20, .pids = 100, .cpu_millis = 500 };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v2(t, &env, "sb1");
	if (hu_cgroup_create(&env, "sb1", &lim, &cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "cg2/cgroup.subtree_control", "+memory +pids +cpu +io");
	expect_file(t, "cg2/hutch/cgroup.subtree_control", "+memory +pids +cpu +io");
	expect_file(t, "cg2/hutch/sb1/memory.max", "268435456");
	expect_file(t, "cg2/hutch/sb1/memory.swap.max", "0");
	expect_file(t, "cg2/hutch/sb1/memory.oom.group", "0");
	expect_file(t, "cg2/hutch/sb1/pids.max", "100");
	expect_file(t, "cg2/hutch/sb1/cpu.max", "50000 100000");
	expect_file(t, "cg2/hutch/sb1/cgroup.freeze", "0"); /* the leftover was thawed */
	assert_true(hu_cgroup_clone_fd(cg) >= 0);
	/* a stopped (released) sandbox keeps no descriptor; a restart takes it again */
	hu_cgroup_drop_clone_fd(cg);
	assert_int_equal(hu_cgroup_clone_fd(cg), -1);
	hu_cgroup_drop_clone_fd(cg); /* twice: still none, nothing closed twice */
	assert_int_equal(hu_cgroup_take_clone_fd(cg, &err), 0);
	assert_true(hu_cgroup_clone_fd(cg) >= 0);
	int fd = hu_cgroup_clone_fd(cg);
	assert_int_equal(hu_cgroup_take_clone_fd(cg, &err), 0); /* held already: the same one */
	assert_int_equal(hu_cgroup_clone_fd(cg), fd);
	hu_cgroup_close(cg);
}

static void test_v2_unlimited(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { 0 };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v2(t, &env, "sb2");
	if (hu_cgroup_create(&env, "sb2", &lim, &cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "cg2/hutch/sb2/memory.max", "max");
	expect_file(t, "cg2/hutch/sb2/memory.swap.max", "0");
	expect_file(t, "cg2/hutch/sb2/pids.max", "max");
	expect_file(t, "cg2/hutch/sb2/cpu.max", "max 100000");
	hu_cgroup_close(cg);
}

static void test_v2_set_limits(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { 0 };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v2(t, &env, "sb3");
	assert_int_equal(hu_cgroup_create(&env, "sb3", &lim, &cg, &err), 0);
	fake_v2(t, &env, "sb3"); /* empty knobs again: the fake files are not truncated on write */
	lim = (struct hu_cgroup_limits){ .memory_bytes = 1 << 30, .pids = 7, .cpu_millis = 2500 };
	if (hu_cgroup_set_limits(cg, &lim, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "cg2/hutch/sb3/memory.max", "1073741824");
	expect_file(t, "cg2/hutch/sb3/pids.max", "7");
	expect_file(t, "cg2/hutch/sb3/cpu.max", "250000 100000");
	hu_cgroup_close(cg);
}

/* Block I/O on cgroup2: io.weight ("default N", iocost) and one io.max line
 * per disk, read and write capped alike. */
static void test_v2_io(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .io = { .weight = 300, .bps = 8 << 20, .iops = 400, .n_dev = 1 } };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	lim.io.dev[0].major = 8;
	lim.io.dev[0].minor = 16;
	fake_v2(t, &env, "io1");
	put(t, "cg2/hutch/io1/io.weight", "");
	put(t, "cg2/hutch/io1/io.max", "");
	if (hu_cgroup_create(&env, "io1", &lim, &cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "cg2/hutch/io1/io.weight", "default 300");
	expect_file(t, "cg2/hutch/io1/io.max", "8:16 rbps=8388608 wbps=8388608 riops=400 wiops=400");
	hu_cgroup_close(cg);

	/* only an iops cap: bandwidth stays unlimited; every disk gets its line
	 * (the fake file keeps the last one written) */
	lim.io = (struct hu_cgroup_io){ .weight = 100, .iops = 1000, .n_dev = 2 };
	lim.io.dev[0].major = 8;
	lim.io.dev[1].major = 259;
	lim.io.dev[1].minor = 3;
	fake_v2(t, &env, "io2");
	put(t, "cg2/hutch/io2/io.weight", "");
	put(t, "cg2/hutch/io2/io.max", "");
	assert_int_equal(hu_cgroup_create(&env, "io2", &lim, &cg, &err), 0);
	expect_file(t, "cg2/hutch/io2/io.weight", "default 100");
	expect_file(t, "cg2/hutch/io2/io.max", "259:3 rbps=max wbps=max riops=1000 wiops=1000");
	hu_cgroup_close(cg);
}

/* bfq's weight where iocost is absent (its range ends at 1000); a kernel
 * with neither knob, or without throttling, is no error. */
static void test_v2_io_fallbacks(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .io = { .weight = 5000, .bps = 1 << 20, .n_dev = 1 } };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v2(t, &env, "bfq");
	put(t, "cg2/hutch/bfq/io.bfq.weight", "");
	if (hu_cgroup_create(&env, "bfq", &lim, &cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "cg2/hutch/bfq/io.bfq.weight", "1000");
	assert_false(exists(t, "cg2/hutch/bfq/io.max"));
	hu_cgroup_close(cg);

	fake_v2(t, &env, "none");
	put(t, "cg2/cgroup.controllers", "cpu memory pids\n");
	assert_int_equal(hu_cgroup_create(&env, "none", &lim, &cg, &err), 0);
	assert_false(exists(t, "cg2/hutch/none/io.weight"));
	assert_false(exists(t, "cg2/hutch/none/io.bfq.weight"));
	hu_cgroup_close(cg);
}

/* A cap the kernel refuses fails the create (and leaves nothing): the
 * operator asked for it. The fake refuses by being a directory. */
static void test_v2_io_refused_cap_fails(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .io = { .bps = 1 << 20, .n_dev = 1 } };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v2(t, &env, "ref");
	put_dir(t, "cg2/hutch/ref/io.max");
	assert_int_equal(hu_cgroup_create(&env, "ref", &lim, &cg, &err), -1);
	assert_non_null(strstr(err.msg, "io.max"));
	assert_null(cg);
}

/* Controllers already delegated (the kernel lists them without '+') are
 * not written again; ones the root lacks are never requested. */
static void test_v2_delegation_only_what_is_missing(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v2(t, &env, "sb4");
	put(t, "cg2/cgroup.controllers", "memory pids\n");
	put(t, "cg2/cgroup.subtree_control", "memory pids\n");
	put(t, "cg2/hutch/cgroup.subtree_control", "pids\n");
	assert_int_equal(hu_cgroup_create(&env, "sb4", NULL, &cg, &err), 0);
	expect_file(t, "cg2/cgroup.subtree_control", "memory pids\n");
	expect_file(t, "cg2/hutch/cgroup.subtree_control", "+memory");
	hu_cgroup_close(cg);
}

/* A group of the same name with processes in it belongs to someone else. */
static void test_v2_busy_group_is_refused_and_kept(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v2(t, &env, "busy");
	put(t, "cg2/hutch/busy/cgroup.procs", "4242\n");
	assert_int_equal(hu_cgroup_create(&env, "busy", NULL, &cg, &err), -1);
	assert_int_equal(err.code, EEXIST);
	assert_null(cg);
	assert_true(exists(t, "cg2/hutch/busy/cgroup.procs"));
	expect_file(t, "cg2/hutch/busy/memory.max", "");
}

static void test_v2_stats(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup *cg = NULL;
	struct hu_cgroup_stats st;
	hu_err err;

	fake_v2(t, &env, "st");
	put(t, "cg2/hutch/st/memory.current", "1234567\n");
	put(t, "cg2/hutch/st/memory.max", "max\n");
	put(t, "cg2/hutch/st/cpu.stat", "usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\n");
	put(t, "cg2/hutch/st/pids.current", "3\n");
	put(t, "cg2/hutch/st/memory.events", "low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\noom_group_kill 0\n");
	if (hu_cgroup_open(&env, "st", &cg, &err) < 0)
		fail_msg("%s", err.msg);
	if (hu_cgroup_stats(cg, &st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(st.memory_bytes, 1234567);
	assert_int_equal(st.memory_limit, 0);
	assert_int_equal(st.cpu_usage_usec, 5000);
	assert_int_equal(st.pids_current, 3);
	assert_int_equal(st.oom_kills, 2);
	put(t, "cg2/hutch/st/memory.max", "67108864\n");
	assert_int_equal(hu_cgroup_stats(cg, &st, &err), 0);
	assert_int_equal(st.memory_limit, 67108864);
	hu_cgroup_close(cg);
}

static void test_v2_freeze(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v2(t, &env, "fz");
	assert_int_equal(hu_cgroup_open(&env, "fz", &cg, &err), 0);
	/* the "kernel" never reports frozen: bounded wait, then undone */
	assert_int_equal(hu_cgroup_freeze(cg, &err), -1);
	assert_int_equal(err.code, ETIMEDOUT);
	expect_file(t, "cg2/hutch/fz/cgroup.freeze", "0");
	/* a "kernel" that reports it at once */
	put(t, "cg2/hutch/fz/cgroup.events", "populated 1\nfrozen 1\n");
	if (hu_cgroup_freeze(cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "cg2/hutch/fz/cgroup.freeze", "1");
	hu_cgroup_close(cg);
}

static void test_v2_open_missing_group(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v2(t, &env, "there");
	assert_int_equal(hu_cgroup_open(&env, "not-there", &cg, &err), -1);
	assert_int_equal(err.code, ENOENT);
	assert_null(cg);
}

/* ---- v1 ------------------------------------------------------------------- */

static void fake_v1_group(const struct tree *t, const char *name)
{
	static const char *const files[][2] = {
		{ "memory", "cgroup.procs" }, { "memory", "memory.limit_in_bytes" },
		{ "memory", "memory.memsw.limit_in_bytes" }, { "pids", "cgroup.procs" },
		{ "pids", "pids.max" }, { "cpu", "cgroup.procs" },
		{ "cpu", "cpu.cfs_quota_us" }, { "cpuacct", "cgroup.procs" },
		{ "freezer", "cgroup.procs" },
	};
	char rel[256];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(rel, sizeof(rel), "%s/hutch/%s/%s", files[i][0], name, files[i][1]);
		put(t, rel, "");
	}
	snprintf(rel, sizeof(rel), "cpu/hutch/%s/cpu.cfs_period_us", name);
	put(t, rel, "100000\n");
	snprintf(rel, sizeof(rel), "freezer/hutch/%s/freezer.state", name);
	put(t, rel, "THAWED");
}

static void fake_v1_env(const struct tree *t, struct hu_cgroup_env *env, enum hu_cgroup_mode mode)
{
	memset(env, 0, sizeof(*env));
	env->mode = mode;
	set_root(env->v1_memory, t, "memory");
	set_root(env->v1_pids, t, "pids");
	set_root(env->v1_cpu, t, "cpu");
	set_root(env->v1_cpuacct, t, "cpuacct");
	set_root(env->v1_freezer, t, "freezer");
	strcpy(env->parent, "hutch");
	put_dir(t, "memory");
	put_dir(t, "pids");
	put_dir(t, "cpu");
	put_dir(t, "cpuacct");
	put_dir(t, "freezer");
}

static void test_v1_create_writes_limits(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .memory_bytes = 64ull << 20, .pids = 64, .cpu_millis = 500 };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v1_env(t, &env, HU_CGROUP_V1);
	fake_v1_group(t, "v1a");
	if (hu_cgroup_create(&env, "v1a", &lim, &cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "memory/hutch/v1a/memory.limit_in_bytes", "67108864");
	expect_file(t, "memory/hutch/v1a/memory.memsw.limit_in_bytes", "67108864");
	expect_file(t, "pids/hutch/v1a/pids.max", "64");
	expect_file(t, "cpu/hutch/v1a/cpu.cfs_quota_us", "50000");
	expect_file(t, "freezer/hutch/v1a/freezer.state", "THAWED");
	assert_int_equal(hu_cgroup_clone_fd(cg), -1);
	hu_cgroup_close(cg);
}

static void test_v1_unlimited_and_other_period(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { 0 };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v1_env(t, &env, HU_CGROUP_V1);
	fake_v1_group(t, "v1b");
	put(t, "cpu/hutch/v1b/cpu.cfs_period_us", "250000\n");
	assert_int_equal(hu_cgroup_create(&env, "v1b", &lim, &cg, &err), 0);
	expect_file(t, "memory/hutch/v1b/memory.limit_in_bytes", "-1");
	expect_file(t, "memory/hutch/v1b/memory.memsw.limit_in_bytes", "-1");
	expect_file(t, "pids/hutch/v1b/pids.max", "max");
	expect_file(t, "cpu/hutch/v1b/cpu.cfs_quota_us", "-1");
	lim.cpu_millis = 500;
	put(t, "cpu/hutch/v1b/cpu.cfs_quota_us", ""); /* fake files are not truncated on write */
	assert_int_equal(hu_cgroup_set_limits(cg, &lim, &err), 0);
	expect_file(t, "cpu/hutch/v1b/cpu.cfs_quota_us", "125000");
	hu_cgroup_close(cg);
}

/* Without swap accounting there is no memsw file; the limit still applies. */
static void test_v1_without_memsw(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .memory_bytes = 1 << 20 };
	struct hu_cgroup *cg = NULL;
	char path[512];
	hu_err err;

	fake_v1_env(t, &env, HU_CGROUP_V1);
	fake_v1_group(t, "nosw");
	pathf(path, sizeof(path), t, "memory/hutch/nosw/memory.memsw.limit_in_bytes");
	assert_int_equal(unlink(path), 0);
	if (hu_cgroup_create(&env, "nosw", &lim, &cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "memory/hutch/nosw/memory.limit_in_bytes", "1048576");
	assert_false(exists(t, "memory/hutch/nosw/memory.memsw.limit_in_bytes"));
	hu_cgroup_close(cg);
}

/* cpu and cpuacct mounted together share one group directory. */
static void test_v1_comounted_cpu_cpuacct(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .cpu_millis = 1500 };
	struct hu_cgroup *cg = NULL;
	struct hu_cgroup_stats st;
	hu_err err;

	fake_v1_env(t, &env, HU_CGROUP_V1);
	fake_v1_group(t, "co");
	set_root(env.v1_cpuacct, t, "cpu");
	put(t, "cpu/hutch/co/cpuacct.usage", "7000123\n");
	put(t, "memory/hutch/co/memory.usage_in_bytes", "4096\n");
	put(t, "memory/hutch/co/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
	put(t, "pids/hutch/co/pids.current", "2\n");
	if (hu_cgroup_create(&env, "co", &lim, &cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "cpu/hutch/co/cpu.cfs_quota_us", "150000");
	put(t, "memory/hutch/co/memory.limit_in_bytes", "9223372036854771712\n"); /* v1's "unlimited" */
	if (hu_cgroup_stats(cg, &st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(st.cpu_usage_usec, 7000);
	assert_int_equal(st.memory_bytes, 4096);
	assert_int_equal(st.memory_limit, 0);
	assert_int_equal(st.pids_current, 2);
	assert_int_equal(st.oom_kills, 1);
	hu_cgroup_close(cg);
}

/* A failure half-way removes every group created so far (here the dirs are
 * fresh, so the fake tree lets them be removed like the kernel would). */
static void test_v1_failure_leaves_nothing(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .memory_bytes = 1 << 20 };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v1_env(t, &env, HU_CGROUP_V1);
	assert_int_equal(hu_cgroup_create(&env, "gone", &lim, &cg, &err), -1);
	assert_int_equal(err.code, ENOENT); /* no memory.limit_in_bytes */
	assert_null(cg);
	assert_true(strstr(err.msg, "create cgroup gone") != NULL);
	assert_false(exists(t, "memory/hutch/gone"));
	assert_false(exists(t, "pids/hutch/gone"));
	assert_false(exists(t, "cpu/hutch/gone"));
	assert_false(exists(t, "cpuacct/hutch/gone"));
	assert_false(exists(t, "freezer/hutch/gone"));
}

/* Hybrid: limits in v1, a controller-less cgroup2 group for freeze/kill/clone,
 * no v1 freezer or cpuacct group and no controllers requested in cgroup2. */
static void test_hybrid_create(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .memory_bytes = 64ull << 20, .pids = 10, .cpu_millis = 250 };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v1_env(t, &env, HU_CGROUP_HYBRID);
	fake_v1_group(t, "hy");
	set_root(env.v2_root, t, "unified");
	put(t, "unified/hutch/hy/cgroup.procs", "");
	put(t, "unified/hutch/hy/cgroup.events", "populated 0\nfrozen 0\n");
	put(t, "unified/hutch/hy/cgroup.freeze", "");
	if (hu_cgroup_create(&env, "hy", &lim, &cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "memory/hutch/hy/memory.limit_in_bytes", "67108864");
	expect_file(t, "memory/hutch/hy/memory.memsw.limit_in_bytes", "67108864");
	expect_file(t, "pids/hutch/hy/pids.max", "10");
	expect_file(t, "cpu/hutch/hy/cpu.cfs_quota_us", "25000");
	expect_file(t, "unified/hutch/hy/cgroup.freeze", "0");
	assert_false(exists(t, "unified/cgroup.subtree_control"));
	assert_true(hu_cgroup_clone_fd(cg) >= 0);
	hu_cgroup_close(cg);
}

/* v1 blkio: bfq's weight (else cfq's, from 10) and the four throttle
 * files, one line per disk and cap. */
static void fake_blkio(const struct tree *t, struct hu_cgroup_env *env, const char *name, int bfq)
{
	static const char *const knobs[] = { "cgroup.procs", "blkio.throttle.read_bps_device",
					     "blkio.throttle.write_bps_device", "blkio.throttle.read_iops_device",
					     "blkio.throttle.write_iops_device" };
	char rel[256];

	set_root(env->v1_blkio, t, "blkio");
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		snprintf(rel, sizeof(rel), "blkio/hutch/%s/%s", name, knobs[i]);
		put(t, rel, "");
	}
	snprintf(rel, sizeof(rel), "blkio/hutch/%s/%s", name, bfq ? "blkio.bfq.weight" : "blkio.weight");
	put(t, rel, "");
	/* the parent, below the root, has the same knobs */
	snprintf(rel, sizeof(rel), "blkio/hutch/%s", bfq ? "blkio.bfq.weight" : "blkio.weight");
	put(t, rel, "");
}

static void test_v1_io(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .io = { .weight = 300, .bps = 16 << 20, .iops = 500, .n_dev = 1 } };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	lim.io.dev[0].major = 254;
	fake_v1_env(t, &env, HU_CGROUP_V1);
	fake_v1_group(t, "b1");
	fake_blkio(t, &env, "b1", 1);
	if (hu_cgroup_create(&env, "b1", &lim, &cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "blkio/hutch/b1/blkio.bfq.weight", "300");
	expect_file(t, "blkio/hutch/b1/blkio.throttle.read_bps_device", "254:0 16777216");
	expect_file(t, "blkio/hutch/b1/blkio.throttle.write_bps_device", "254:0 16777216");
	expect_file(t, "blkio/hutch/b1/blkio.throttle.read_iops_device", "254:0 500");
	expect_file(t, "blkio/hutch/b1/blkio.throttle.write_iops_device", "254:0 500");
	hu_cgroup_close(cg);

	/* cfq's weight starts at 10; no cap asked: the throttle files stay as they were */
	lim.io = (struct hu_cgroup_io){ .weight = 1, .n_dev = 1 };
	fake_v1_group(t, "b2");
	fake_blkio(t, &env, "b2", 0);
	assert_int_equal(hu_cgroup_create(&env, "b2", &lim, &cg, &err), 0);
	expect_file(t, "blkio/hutch/b2/blkio.weight", "10");
	expect_file(t, "blkio/hutch/b2/blkio.throttle.read_bps_device", "");
	hu_cgroup_close(cg);
}

/* A blkio group that would enforce nothing (no weight knob in this kernel,
 * no cap asked) is not made; the sandbox's other groups are, and it opens. */
static void test_v1_blkio_only_when_it_limits(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .io = { .weight = 100, .n_dev = 1 } };
	struct hu_cgroup *cg = NULL;
	char path[512];
	hu_err err;

	lim.io.dev[0].major = 254;
	fake_v1_env(t, &env, HU_CGROUP_V1);
	set_root(env.v1_blkio, t, "blkio");
	put(t, "blkio/hutch/blkio.throttle.read_bps_device", "");
	fake_v1_group(t, "nw");
	assert_int_equal(hu_cgroup_create(&env, "nw", &lim, &cg, &err), 0);
	assert_false(exists(t, "blkio/hutch/nw"));
	expect_file(t, "pids/hutch/nw/pids.max", "max");
	hu_cgroup_close(cg);
	if (hu_cgroup_open(&env, "nw", &cg, &err) < 0)
		fail_msg("%s", err.msg);
	hu_cgroup_close(cg);

	/* a cap asked: the group is made and holds it */
	lim.io.bps = 1 << 20;
	fake_v1_group(t, "nc");
	fake_blkio(t, &env, "nc", 1);
	pathf(path, sizeof(path), t, "blkio/hutch/blkio.bfq.weight");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(hu_cgroup_create(&env, "nc", &lim, &cg, &err), 0);
	expect_file(t, "blkio/hutch/nc/blkio.throttle.read_bps_device", "254:0 1048576");
	hu_cgroup_close(cg);
}

/* The hybrid mode takes blkio from v1 too; without a blkio mount, groups
 * are made without one; a group made before blkio was there still opens. */
static void test_hybrid_io_and_optional_blkio(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_limits lim = { .io = { .weight = 200, .bps = 2 << 20, .n_dev = 1 } };
	struct hu_cgroup *cg = NULL;
	hu_err err;

	lim.io.dev[0].major = 8;
	fake_v1_env(t, &env, HU_CGROUP_HYBRID);
	set_root(env.v2_root, t, "unified");
	fake_v1_group(t, "hb");
	fake_blkio(t, &env, "hb", 1);
	put(t, "unified/hutch/hb/cgroup.procs", "");
	put(t, "unified/hutch/hb/cgroup.events", "populated 0\nfrozen 0\n");
	put(t, "unified/hutch/hb/cgroup.freeze", "");
	if (hu_cgroup_create(&env, "hb", &lim, &cg, &err) < 0)
		fail_msg("%s", err.msg);
	expect_file(t, "blkio/hutch/hb/blkio.bfq.weight", "200");
	expect_file(t, "blkio/hutch/hb/blkio.throttle.write_bps_device", "8:0 2097152");
	hu_cgroup_close(cg);

	env.v1_blkio[0] = '\0';
	fake_v1_group(t, "nob");
	put(t, "unified/hutch/nob/cgroup.procs", "");
	put(t, "unified/hutch/nob/cgroup.events", "populated 0\nfrozen 0\n");
	put(t, "unified/hutch/nob/cgroup.freeze", "");
	assert_int_equal(hu_cgroup_create(&env, "nob", &lim, &cg, &err), 0);
	assert_false(exists(t, "blkio/hutch/nob"));
	hu_cgroup_close(cg);

	set_root(env.v1_blkio, t, "blkio");
	if (hu_cgroup_open(&env, "nob", &cg, &err) < 0)
		fail_msg("%s", err.msg);
	hu_cgroup_close(cg);
}

/* What hutch doctor is told: v2 without io, v2 with io not yet passed on
 * (not looked at), v1 blkio (a throw-away group, removed again). */
static void test_io_probe(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup_io_support io;
	hu_err err;

	fake_v2(t, &env, "p");
	put(t, "cg2/cgroup.controllers", "cpu memory pids\n");
	assert_int_equal(hu_cgroup_io_probe(&env, &io, &err), 0);
	assert_null(io.controller);
	put(t, "cg2/cgroup.controllers", "cpu io memory pids\n");
	assert_int_equal(hu_cgroup_io_probe(&env, &io, &err), 0);
	assert_string_equal(io.controller, "io (cgroup2)");
	assert_int_equal(io.unknown, 1);
	put(t, "cg2/cgroup.subtree_control", "cpu io memory pids\n");
	assert_int_equal(hu_cgroup_io_probe(&env, &io, &err), 0);
	assert_int_equal(io.unknown, 0);
	assert_null(io.weight); /* a plain directory has no knobs */
	assert_int_equal(io.caps, 0);

	fake_v1_env(t, &env, HU_CGROUP_HYBRID);
	assert_int_equal(hu_cgroup_io_probe(&env, &io, &err), 0);
	assert_null(io.controller);
	set_root(env.v1_blkio, t, "blkio");
	put_dir(t, "blkio");
	assert_int_equal(hu_cgroup_io_probe(&env, &io, &err), 0);
	assert_string_equal(io.controller, "blkio (v1)");
	char probe[64];
	snprintf(probe, sizeof(probe), "blkio/hutch-io-probe-%d", (int)getpid());
	assert_false(exists(t, probe));
}

static void test_io_parse(void **state)
{
	struct hu_cgroup_io io = { 0 };
	hu_err err;

	assert_int_equal(hu_cgroup_io_parse("250", "64M", "1500", &io, &err), 0);
	assert_int_equal(io.weight, 250);
	assert_int_equal(io.bps, 64 << 20);
	assert_int_equal(io.iops, 1500);
	assert_int_equal(hu_cgroup_io_parse(NULL, "0", "0", &io, &err), 0);
	assert_int_equal(io.weight, 250); /* NULL: left alone */
	assert_int_equal(io.bps, 0);
	assert_int_equal(io.iops, 0);
	assert_int_equal(hu_cgroup_io_parse("10000", "1M", "100", &io, &err), 0);
	static const char *const bad[][3] = { { "0", NULL, NULL },     { "10001", NULL, NULL }, { "-1", NULL, NULL },
					      { NULL, "1023K", NULL }, { NULL, "lots", NULL },  { NULL, NULL, "99" },
					      { NULL, NULL, "1e3" } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(hu_cgroup_io_parse(bad[i][0], bad[i][1], bad[i][2], &io, &err), -1);
}

static void test_unconfigured_hierarchy(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v1_env(t, &env, HU_CGROUP_V1);
	env.v1_freezer[0] = '\0';
	assert_int_equal(hu_cgroup_create(&env, "nofreezer", NULL, &cg, &err), -1);
	assert_int_equal(err.code, EINVAL);
	assert_false(exists(t, "memory/hutch"));
}

/* ---- detection ------------------------------------------------------------ */

static int detect(const struct tree *t, const char *mountinfo, struct hu_cgroup_env *env, hu_err *err)
{
	char path[512];

	put(t, "mountinfo", mountinfo);
	pathf(path, sizeof(path), t, "mountinfo");
	return hu_cgroup_detect_from(path, env, err);
}

static void test_detect_pure_v2(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	char line[1024], want[256];
	hu_err err;

	put(t, "cg2/cgroup.controllers", "cpuset cpu io memory hugetlb pids\n");
	snprintf(line, sizeof(line),
		 "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
		 "29 23 0:26 / %s/cg2 rw,nosuid,nodev shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
		 t->root);
	if (detect(t, line, &env, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(env.mode, HU_CGROUP_V2);
	snprintf(want, sizeof(want), "%s/cg2", t->root);
	assert_string_equal(env.v2_root, want);
	assert_string_equal(env.v1_memory, "");
	assert_string_equal(env.v1_blkio, "");
	assert_string_equal(env.parent, "hutch");
	assert_string_equal(hu_cgroup_mode_name(env.mode), "v2");
}

static const char hybrid_mountinfo[] =
	"30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
	"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"36 30 0:33 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
	"38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	"37 30 0:34 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
	"39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"40 30 0:37 / /nonexistent/unified rw,relatime - cgroup2 cgroup2 rw\n";

static void test_detect_hybrid(void **state)
{
	struct hu_cgroup_env env;
	hu_err err;

	if (detect(*state, hybrid_mountinfo, &env, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(env.mode, HU_CGROUP_HYBRID);
	assert_string_equal(env.v2_root, "/nonexistent/unified");
	assert_string_equal(env.v1_memory, "/sys/fs/cgroup/memory");
	assert_string_equal(env.v1_pids, "/sys/fs/cgroup/pids");
	assert_string_equal(env.v1_cpu, "/sys/fs/cgroup/cpu");
	assert_string_equal(env.v1_cpuacct, "/sys/fs/cgroup/cpuacct");
	assert_string_equal(env.v1_freezer, "/sys/fs/cgroup/freezer");
	assert_string_equal(env.v1_blkio, "/sys/fs/cgroup/blkio");
}

static void test_detect_v1_comounted_and_escaped(void **state)
{
	struct hu_cgroup_env env;
	hu_err err;

	if (detect(*state,
		   "31 30 0:28 / /cg/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
		   "34 30 0:31 / /cg/mem\\040ory rw - cgroup cgroup rw,memory\n"
		   "35 30 0:31 / /cg/second-memory rw - cgroup cgroup rw,memory\n"
		   "36 30 0:33 / /cg/freezer rw shared:9 master:3 - cgroup cgroup rw,freezer\n"
		   "38 30 0:35 / /cg/pids rw - cgroup cgroup rw,pids\n",
		   &env, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(env.mode, HU_CGROUP_V1);
	assert_string_equal(env.v1_cpu, "/cg/cpu,cpuacct");
	assert_string_equal(env.v1_cpuacct, "/cg/cpu,cpuacct");
	assert_string_equal(env.v1_memory, "/cg/mem ory");
	assert_string_equal(env.v1_freezer, "/cg/freezer");
	assert_string_equal(env.v2_root, "");
}

static void test_detect_nothing_usable(void **state)
{
	struct hu_cgroup_env env;
	hu_err err;

	assert_int_equal(detect(*state, "22 1 0:21 / /proc rw - proc proc rw\n"
					"34 30 0:31 / /cg/memory rw - cgroup cgroup rw,memory\n",
				&env, &err),
			 -1);
	assert_int_equal(err.code, ENOTSUP);
}

/* ---- pure helpers --------------------------------------------------------- */

static void expect_cpu_max(uint32_t millis, const char *want)
{
	char buf[64];
	hu_cgroup_v2_cpu_max(millis, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void test_cpu_max_format(void **state)
{
	expect_cpu_max(0, "max 100000");
	expect_cpu_max(500, "50000 100000");
	expect_cpu_max(1000, "100000 100000");
	expect_cpu_max(2500, "250000 100000");
	expect_cpu_max(1, "1000 100000"); /* the kernel's minimum quota */
	expect_cpu_max(UINT32_MAX, "429496729500 100000");
}

static void test_cfs_quota(void **state)
{
	assert_int_equal(hu_cgroup_v1_cfs_quota(0, 100000), -1);
	assert_int_equal(hu_cgroup_v1_cfs_quota(500, 100000), 50000);
	assert_int_equal(hu_cgroup_v1_cfs_quota(1000, 100000), 100000);
	assert_int_equal(hu_cgroup_v1_cfs_quota(2000, 250000), 500000);
	assert_int_equal(hu_cgroup_v1_cfs_quota(1, 100000), 1000);
	assert_int_equal(hu_cgroup_v1_cfs_quota(500, 0), 50000); /* default period */
}

static void test_name_validation(void **state)
{
	static const char *const good[] = { "a", "sb-1", "A.b_c-9", ".a" };
	static const char *const bad[] = { "", ".", "..", "a..b", "a/b", "/", "a b", "a\nb", "\xc3\xbc", "a:b" };
	char longest[HU_CGROUP_NAME_MAX + 2];
	hu_err err;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(hu_cgroup_validate_name(good[i], &err), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.code = 0;
		assert_int_equal(hu_cgroup_validate_name(bad[i], &err), -1);
		assert_int_equal(err.code, EINVAL);
	}
	memset(longest, 'x', sizeof(longest));
	longest[HU_CGROUP_NAME_MAX] = '\0';
	assert_int_equal(hu_cgroup_validate_name(longest, &err), 0);
	longest[HU_CGROUP_NAME_MAX] = 'x';
	longest[HU_CGROUP_NAME_MAX + 1] = '\0';
	assert_int_equal(hu_cgroup_validate_name(longest, &err), -1);
}

static void test_create_rejects_bad_names(void **state)
{
	struct tree *t = *state;
	struct hu_cgroup_env env;
	struct hu_cgroup *cg = NULL;
	hu_err err;

	fake_v2(t, &env, "ok");
	assert_int_equal(hu_cgroup_create(&env, "../escape", NULL, &cg, &err), -1);
	assert_int_equal(err.code, EINVAL);
	strcpy(env.parent, "..");
	assert_int_equal(hu_cgroup_create(&env, "ok", NULL, &cg, &err), -1);
	assert_int_equal(err.code, EINVAL);
	assert_null(cg);
	expect_file(t, "cg2/cgroup.subtree_control", ""); /* nothing touched */
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup_tree, teardown_tree)
	const struct CMUnitTest tests[] = {
		T(test_v2_create_writes_limits),
		T(test_v2_unlimited),
		T(test_v2_set_limits),
		T(test_v2_io),
		T(test_v2_io_fallbacks),
		T(test_v2_io_refused_cap_fails),
		T(test_v2_delegation_only_what_is_missing),
		T(test_v2_busy_group_is_refused_and_kept),
		T(test_v2_stats),
		T(test_v2_freeze),
		T(test_v2_open_missing_group),
		T(test_v1_create_writes_limits),
		T(test_v1_unlimited_and_other_period),
		T(test_v1_without_memsw),
		T(test_v1_comounted_cpu_cpuacct),
		T(test_v1_failure_leaves_nothing),
		T(test_hybrid_create),
		T(test_v1_io),
		T(test_v1_blkio_only_when_it_limits),
		T(test_hybrid_io_and_optional_blkio),
		T(test_io_probe),
		cmocka_unit_test(test_io_parse),
		T(test_unconfigured_hierarchy),
		T(test_detect_pure_v2),
		T(test_detect_hybrid),
		T(test_detect_v1_comounted_and_escaped),
		T(test_detect_nothing_usable),
		cmocka_unit_test(test_cpu_max_format),
		cmocka_unit_test(test_cfs_quota),
		cmocka_unit_test(test_name_validation),
		T(test_create_rejects_bad_names),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
