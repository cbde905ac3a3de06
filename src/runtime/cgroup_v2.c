/*
 * The cgroup2 backend: one group under <root>/<parent>/ with the memory, pids
 * and cpu controllers, and io where the root offers it. Also the cgroup2 freeze and kill the hybrid mode uses.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "runtime/cgroup.h"
#include "runtime/cgroup_internal.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

/* The cpu.max period; 100 ms is the kernel default. */
#define CPU_PERIOD_US 100000ull
/* The kernel refuses a quota below 1 ms. */
#define CPU_QUOTA_MIN_US 1000ull

/* io is passed on only where the root offers it (cgroup_io.c) */
static const char *const wanted_controllers[] = { "memory", "pids", "cpu", "io" };

void hu_cgroup_v2_cpu_max(uint32_t cpu_millis, char *buf, size_t n)
{
	unsigned long long quota = (unsigned long long)cpu_millis * CPU_PERIOD_US / 1000;

	if (cpu_millis == 0) {
		snprintf(buf, n, "max %llu", CPU_PERIOD_US);
		return;
	}
	if (quota < CPU_QUOTA_MIN_US)
		quota = CPU_QUOTA_MIN_US;
	snprintf(buf, n, "%llu %llu", quota, CPU_PERIOD_US);
}

/*
 * Make the controllers the root offers available to the children of `dir` by
 * writing "+memory +pids +cpu +io" (those of them that are missing) to its
 * cgroup.subtree_control. cgroup2 allows that only for a group without
 * processes of its own, which is why nothing ever runs in the parent group.
 */
static int delegate_controllers(const char *dir, const char *offered, hu_err *err)
{
	char path[PATH_MAX], current[512], request[64] = "";

	if (hu_cg_join(path, sizeof(path), dir, "cgroup.subtree_control", err) < 0 ||
	    hu_read_file(path, current, sizeof(current), err) < 0)
		return -1;
	for (size_t i = 0; i < HU_ARRAY_LEN(wanted_controllers); i++) {
		const char *c = wanted_controllers[i];
		if (hu_cg_list_has(offered, c) && !hu_cg_list_has(current, c)) {
			size_t used = strlen(request);
			snprintf(request + used, sizeof(request) - used, "%s+%s", used ? " " : "", c);
		}
	}
	if (!request[0] || hu_write_str(path, request, err) == 0)
		return 0;
	if (err->code == EBUSY)
		hu_err_prefix(err, "enable %s: %s has processes of its own", request, dir);
	else
		hu_err_prefix(err, "enable %s", request);
	return -1;
}

/* Root -> parent -> sandbox group: each level must pass the controllers on. */
static int v2_prepare_parent(struct hu_cgroup *cg, enum hu_cg_hier h, hu_err *err)
{
	char path[PATH_MAX], offered[512];

	if (h != HU_CG_UNIFIED)
		return 0;
	if (hu_cg_join(path, sizeof(path), cg->root[h], "cgroup.controllers", err) < 0 ||
	    hu_read_file(path, offered, sizeof(offered), err) < 0 ||
	    delegate_controllers(cg->root[h], offered, err) < 0 ||
	    delegate_controllers(cg->parent_dir[h], offered, err) < 0)
		return -1;
	return 0;
}

static int v2_set_limits(struct hu_cgroup *cg, const struct hu_cgroup_limits *lim, hu_err *err)
{
	const enum hu_cg_hier u = HU_CG_UNIFIED;
	char cpu_max[48];

	hu_cgroup_v2_cpu_max(lim->cpu_millis, cpu_max, sizeof(cpu_max));
	/*
	 * memory.swap.max 0: the memory limit must not be escapable by swapping
	 * out (the knob is absent only without swap accounting).
	 * memory.oom.group stays 0 on purpose (written to reset a leftover
	 * group): with 1 an OOM would kill the whole sandbox including its init;
	 * with 0 the OOM killer picks the offending process and init survives to
	 * report it.
	 */
	if (hu_cg_write_limit(cg, u, "memory.max", lim->memory_bytes, "max", err) < 0 ||
	    hu_cg_write_if_present(cg, u, "memory.swap.max", "0", NULL, err) < 0 ||
	    hu_cg_write_if_present(cg, u, "memory.oom.group", "0", NULL, err) < 0 ||
	    hu_cg_write_limit(cg, u, "pids.max", lim->pids, "max", err) < 0 ||
	    hu_cg_write(cg, u, "cpu.max", cpu_max, err) < 0 || hu_cg_v2_set_io(cg, &lim->io, err) < 0)
		return -1;
	return 0;
}

static int v2_freeze_reached(struct hu_cgroup *cg, int frozen, hu_err *err)
{
	static const struct hu_cg_counter events = { HU_CG_UNIFIED, "cgroup.events", "frozen", 1 };
	uint64_t v;

	if (hu_cg_read_counter(cg, &events, &v, err) < 0)
		return -1;
	return (v != 0) == (frozen != 0);
}

static const struct hu_cg_freezer v2_freezer = {
	.hier = HU_CG_UNIFIED,
	.knob = "cgroup.freeze",
	.values = { "0", "1" },
	.reached = v2_freeze_reached,
};

int hu_cg_v2_freeze(struct hu_cgroup *cg, bool frozen, hu_err *err)
{
	return hu_cg_set_frozen(cg, &v2_freezer, frozen, err);
}

/* cgroup.kill (Linux 5.14) kills the whole group at once, forks included. */
int hu_cg_v2_kill(struct hu_cgroup *cg, hu_err *err)
{
	bool done;

	if (hu_cg_write_if_present(cg, HU_CG_UNIFIED, "cgroup.kill", "1", &done, err) < 0)
		return -1;
	return done ? 0 : hu_cg_kill_by_enumeration(cg, HU_CG_UNIFIED, err);
}

static const struct hu_cg_stat_layout v2_stats = {
	.memory = { HU_CG_UNIFIED, "memory.current", NULL, 1 },
	.memory_limit = { HU_CG_UNIFIED, "memory.max", NULL, 1 },
	.cpu_usec = { HU_CG_UNIFIED, "cpu.stat", "usage_usec", 1 },
	.pids = { HU_CG_UNIFIED, "pids.current", NULL, 1 },
	.oom_kills = { HU_CG_UNIFIED, "memory.events", "oom_kill", 1 },
};

const struct hu_cg_backend hu_cg_backend_v2 = {
	.uses = { [HU_CG_UNIFIED] = true },
	.prepare_parent = v2_prepare_parent,
	.set_limits = v2_set_limits,
	.freeze = hu_cg_v2_freeze,
	.kill = hu_cg_v2_kill,
	.stats = &v2_stats,
};
