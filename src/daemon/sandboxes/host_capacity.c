/* How many sandboxes this host admits (host_capacity.h). */
#include "daemon/sandboxes/host_capacity.h"

#include <stdio.h>

#define MIB (1024ull * 1024ull)
#define MIN_RESERVE (512 * MIB)

uint64_t hu_mem_reserve(const struct hu_config *cfg, uint64_t mem_total)
{
	if (cfg->admission_reserve)
		return cfg->admission_reserve;
	return mem_total / 10 < MIN_RESERVE ? MIN_RESERVE : mem_total / 10;
}

uint64_t hu_mem_budget(const struct hu_config *cfg, uint64_t mem_total)
{
	uint64_t reserve = hu_mem_reserve(cfg, mem_total);
	uint64_t usable = mem_total > reserve ? mem_total - reserve : 0;
	return (uint64_t)((double)usable * cfg->admission_memory_overcommit);
}

uint64_t hu_pids_budget(const struct hu_config *cfg, uint64_t pid_max)
{
	uint64_t usable = pid_max > HU_PIDS_HOST_RESERVE ? pid_max - HU_PIDS_HOST_RESERVE : 0;
	return (uint64_t)((double)usable * cfg->admission_pids_overcommit);
}

/* The smallest of the limits so far, and what raises it. */
struct bound {
	uint64_t n;
	char *raise;
	size_t size;
};

static void limit(struct bound *b, uint64_t n, const char *raise)
{
	if (n >= b->n)
		return;
	b->n = n;
	snprintf(b->raise, b->size, "%s", raise);
}

void hu_admits_estimate(const struct hu_config *cfg, const struct hu_host_figures *h, struct hu_admits *out)
{
	uint64_t mem = hu_mem_budget(cfg, h->mem_total), pids = hu_pids_budget(cfg, h->pid_max);
	struct bound run = {UINT64_MAX, out->running_raise, sizeof(out->running_raise)};
	struct bound paused = {UINT64_MAX, out->paused_raise, sizeof(out->paused_raise)};
	char why[200];

	out->running_raise[0] = out->paused_raise[0] = '\0';
	snprintf(why, sizeof(why),
		 "pids: kernel.pid_max is %llu (systemd hosts set 4194304; sysctl kernel.pid_max), or a smaller default_pids",
		 (unsigned long long)h->pid_max);
	limit(&run, cfg->default_pids ? pids / cfg->default_pids : UINT64_MAX, why);
	snprintf(why, sizeof(why), "pids: kernel.pid_max is %llu (systemd hosts set 4194304; sysctl kernel.pid_max)",
		 (unsigned long long)h->pid_max);
	limit(&paused, pids / HU_FROZEN_TYPICAL_PIDS, why);
	limit(&run, cfg->default_memory_bytes ? mem / cfg->default_memory_bytes : UINT64_MAX,
	      "memory: more host memory, admission.memory_overcommit, or a smaller default_memory");
	/* what a frozen sandbox holds is real memory: it weighs the overcommit
	 * ratio against the budget (commit.h) */
	double weight = cfg->admission_memory_overcommit > 1.0 ? cfg->admission_memory_overcommit : 1.0;
	limit(&paused, (uint64_t)((double)mem / ((double)HU_FROZEN_TYPICAL_MEM * weight)),
	      "memory: more host memory, or a smaller admission.reserve");
	if (cfg->admission_cpu_overcommit > 0 && cfg->default_cpu_millis)
		limit(&run,
		      (uint64_t)((double)h->cpus * 1000.0 * cfg->admission_cpu_overcommit) / cfg->default_cpu_millis,
		      "CPU: admission.cpu_overcommit or a smaller default_cpu");
	limit(&run, h->fd_allowed, "descriptors: the hard RLIMIT_NOFILE (LimitNOFILE=)");
	limit(&paused, h->fd_allowed, "descriptors: the hard RLIMIT_NOFILE (LimitNOFILE=)");
	if (cfg->max_sandboxes) {
		limit(&run, cfg->max_sandboxes, "max_sandboxes");
		limit(&paused, cfg->max_sandboxes, "max_sandboxes");
	}
	out->running = run.n;
	out->paused = paused.n;
}
