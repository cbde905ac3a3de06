/*
 * The cgroup v1 backend: one group per controller hierarchy (memory, pids,
 * cpu, cpuacct, freezer, and blkio where mounted). Its limit writing is also
 * the hybrid mode's.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "runtime/cgroup.h"
#include "runtime/cgroup_internal.h"

#define CFS_PERIOD_DEFAULT_US 100000LL
/* The kernel refuses a quota below 1 ms. */
#define CFS_QUOTA_MIN_US 1000LL

long long hu_cgroup_v1_cfs_quota(uint32_t cpu_millis, long long period_us)
{
	long long quota;

	if (cpu_millis == 0)
		return -1; /* unlimited */
	if (period_us <= 0)
		period_us = CFS_PERIOD_DEFAULT_US;
	if (__builtin_mul_overflow((long long)cpu_millis, period_us, &quota))
		return LLONG_MAX / 1000; /* the kernel refuses it: better than wrapping */
	quota /= 1000;
	return quota < CFS_QUOTA_MIN_US ? CFS_QUOTA_MIN_US : quota;
}

/*
 * memory.memsw.limit_in_bytes caps memory + swap; set to the memory limit it
 * makes swap no escape from it (the file exists only with swap accounting).
 * The kernel keeps memory <= memsw at every step, so a lower limit must be
 * written to memory first and a higher one to memsw first: try memory first
 * and on EINVAL go the other way round.
 */
static int v1_set_memory(struct hu_cgroup *cg, uint64_t bytes, hu_err *err)
{
	const char *mem = "memory.limit_in_bytes", *memsw = "memory.memsw.limit_in_bytes";
	char val[32] = "-1";
	hu_err first;
	bool has_memsw;

	if (bytes)
		snprintf(val, sizeof(val), "%llu", (unsigned long long)bytes);
	if (hu_cg_write(cg, HU_CG_MEMORY, mem, val, &first) == 0)
		return hu_cg_write_if_present(cg, HU_CG_MEMORY, memsw, val, NULL, err);
	if (first.code != EINVAL) {
		*err = first;
		return -1;
	}
	if (hu_cg_write_if_present(cg, HU_CG_MEMORY, memsw, val, &has_memsw, err) < 0)
		return -1;
	if (!has_memsw) {
		*err = first;
		return -1;
	}
	return hu_cg_write(cg, HU_CG_MEMORY, mem, val, err);
}

static int v1_set_cpu(struct hu_cgroup *cg, uint32_t cpu_millis, hu_err *err)
{
	static const struct hu_cg_counter period = { HU_CG_CPU, "cpu.cfs_period_us", NULL, 1 };
	uint64_t period_us;
	char val[32];

	if (hu_cg_read_counter(cg, &period, &period_us, err) < 0)
		return -1;
	if (period_us == 0 || period_us > LLONG_MAX)
		return hu_err_set(err, EINVAL, "%s/cpu.cfs_period_us: unusable period", cg->dir[HU_CG_CPU]);
	snprintf(val, sizeof(val), "%lld", hu_cgroup_v1_cfs_quota(cpu_millis, (long long)period_us));
	return hu_cg_write(cg, HU_CG_CPU, "cpu.cfs_quota_us", val, err);
}

int hu_cg_v1_set_limits(struct hu_cgroup *cg, const struct hu_cgroup_limits *lim, hu_err *err)
{
	if (v1_set_memory(cg, lim->memory_bytes, err) < 0 ||
	    hu_cg_write_limit(cg, HU_CG_PIDS, "pids.max", lim->pids, "max", err) < 0 ||
	    v1_set_cpu(cg, lim->cpu_millis, err) < 0)
		return -1;
	if (cg->present[HU_CG_BLKIO] && hu_cg_v1_set_io(cg, &lim->io, err) < 0)
		return -1;
	return 0;
}

/* freezer.state passes through FREEZING until every task is frozen. */
static int v1_freeze_reached(struct hu_cgroup *cg, int frozen, hu_err *err)
{
	char state[32];

	if (hu_cg_read(cg, HU_CG_FREEZER, "freezer.state", state, sizeof(state), err) < 0)
		return -1;
	state[strcspn(state, "\n")] = '\0';
	return !strcmp(state, frozen ? "FROZEN" : "THAWED");
}

static const struct hu_cg_freezer v1_freezer = {
	.hier = HU_CG_FREEZER,
	.knob = "freezer.state",
	.values = { "THAWED", "FROZEN" },
	.reached = v1_freeze_reached,
};

static int v1_freeze(struct hu_cgroup *cg, bool frozen, hu_err *err)
{
	return hu_cg_set_frozen(cg, &v1_freezer, frozen, err);
}

/* v1 has no cgroup.kill. */
static int v1_kill(struct hu_cgroup *cg, hu_err *err)
{
	return hu_cg_kill_by_enumeration(cg, HU_CG_FREEZER, err);
}

static const struct hu_cg_stat_layout v1_stats = {
	.memory = { HU_CG_MEMORY, "memory.usage_in_bytes", NULL, 1 },
	.memory_limit = { HU_CG_MEMORY, "memory.limit_in_bytes", NULL, 1 },
	.cpu_usec = { HU_CG_CPUACCT, "cpuacct.usage", NULL, 1000 }, /* ns */
	.pids = { HU_CG_PIDS, "pids.current", NULL, 1 },
	.oom_kills = { HU_CG_MEMORY, "memory.oom_control", "oom_kill", 1 },
};

const struct hu_cg_backend hu_cg_backend_v1 = {
	.uses = { [HU_CG_MEMORY] = true,
		  [HU_CG_PIDS] = true,
		  [HU_CG_CPU] = true,
		  [HU_CG_CPUACCT] = true,
		  [HU_CG_FREEZER] = true,
		  [HU_CG_BLKIO] = true },
	.optional = { [HU_CG_BLKIO] = true },
	.prepare_parent = NULL,
	.set_limits = hu_cg_v1_set_limits,
	.freeze = v1_freeze,
	.kill = v1_kill,
	.stats = &v1_stats,
};
