/* Admission control (admission.h). */
#include "daemon/sandboxes/admission.h"

#include <stdio.h>
#include <string.h>

#include "daemon/sandboxes/fd_budget.h"
#include "daemon/sandboxes/host_readings.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/sandbox_ops.h"

#define MIB (1024ull * 1024ull)
#define MIN_RESERVE (512 * MIB)
#define PIDS_RESERVE 4096 /* pids left to the host whatever the sandboxes' limits say */

static int count(struct hu_sbx *s, void *arg)
{
	struct hu_capacity *cap = arg;
	int holds_memory = s->state == HU_SBX_RUNNING || (s->state == HU_SBX_PAUSED && !s->released);

	if (holds_memory) {
		cap->mem_committed += s->memory_bytes;
		cap->pids_committed += cap->pids_per_sandbox;
	}
	if (s->state == HU_SBX_RUNNING)
		cap->cpu_committed_millis += s->cpu_millis;
	if (s->state == HU_SBX_PAUSED && !s->released)
		cap->holding_paused++;
	return 0;
}

int hu_capacity_read(struct hu_daemon *d, struct hu_capacity *cap, hu_err *err)
{
	const struct hu_config *cfg = &d->cfg;
	struct hu_host_readings host;

	memset(cap, 0, sizeof(*cap));
	if (hu_host_readings(&host, err) < 0)
		return -1;
	cap->mem_total = host.mem_total;
	cap->mem_available = host.mem_available;
	cap->mem_reserve = cfg->admission_reserve ? cfg->admission_reserve : cap->mem_total / 10;
	if (cap->mem_reserve < MIN_RESERVE && !cfg->admission_reserve)
		cap->mem_reserve = MIN_RESERVE;
	uint64_t usable = cap->mem_total > cap->mem_reserve ? cap->mem_total - cap->mem_reserve : 0;
	cap->mem_budget = (uint64_t)((double)usable * cfg->admission_memory_overcommit);
	cap->cpus = host.cpus;
	cap->cpu_budget_millis = (uint64_t)((double)cap->cpus * 1000.0 * cfg->admission_cpu_overcommit);
	uint64_t pm = host.pid_max;
	cap->pids_budget = (uint64_t)((double)(pm > PIDS_RESERVE ? pm - PIDS_RESERVE : 0) * cfg->admission_pids_overcommit);
	cap->pids_per_sandbox = cfg->default_pids;
	if (d->reg)
		hu_registry_each(d->reg, count, cap);
	/* creates in progress are commitments too */
	uint64_t mem = 0, cpu = 0;
	hu_sbx_pending_commitments(d, &mem, &cpu);
	cap->mem_committed += mem;
	cap->cpu_committed_millis += cpu;
	cap->pids_committed += (uint64_t)d->n_creating * cap->pids_per_sandbox;
	/* and so are the warm pools (built, or being built) */
	hu_pool_commitments(d, &cap->mem_committed, &cap->pids_committed);
	/* descriptors: every sandbox the daemon holds, warm ones and ones
	 * being killed included */
	cap->fds_held = (d->reg ? hu_registry_count(d->reg) : 0) + hu_pool_count(d) + d->n_creating + d->n_killing;
	cap->fds_creating = d->n_creating;
	hu_fd_budget_read(cap->fds_held, &cap->fd_limit, &cap->fd_base);
	return 0;
}

int hu_admission_check(struct hu_daemon *d, uint64_t memory_bytes, uint32_t cpu_millis, hu_err *err)
{
	uint64_t pids;
	struct hu_capacity cap;
	char why[160];

	if (hu_capacity_read(d, &cap, err) < 0)
		return -1;
	pids = cap.pids_per_sandbox;
	if (cap.mem_committed + memory_bytes > cap.mem_budget)
		return hu_err_set(err, -EAGAIN,
				  "not enough memory on this host: %llu MiB committed to sandboxes, this one asks %llu MiB, "
				  "the budget is %llu MiB (admission.memory_overcommit x (%llu MiB - %llu MiB reserved))",
				  (unsigned long long)(cap.mem_committed / MIB), (unsigned long long)(memory_bytes / MIB),
				  (unsigned long long)(cap.mem_budget / MIB), (unsigned long long)(cap.mem_total / MIB),
				  (unsigned long long)(cap.mem_reserve / MIB));
	if (d->cfg.admission_cpu_overcommit > 0 && cap.cpu_committed_millis + cpu_millis > cap.cpu_budget_millis)
		return hu_err_set(err, -EAGAIN,
				  "not enough CPU on this host: %.2f CPUs committed to running sandboxes, this one asks %.2f, "
				  "the budget is %.2f (admission.cpu_overcommit x %u CPUs)",
				  cap.cpu_committed_millis / 1000.0, cpu_millis / 1000.0, cap.cpu_budget_millis / 1000.0,
				  cap.cpus);
	if (cap.pids_committed + pids > cap.pids_budget)
		return hu_err_set(err, -EAGAIN,
				  "not enough pids on this host: %llu committed, this one asks %llu, %llu allowed "
				  "(kernel.pid_max less 4096 for the host, x admission.pids_overcommit; raise kernel.pid_max "
				  "or lower default_pids)",
				  (unsigned long long)cap.pids_committed, (unsigned long long)pids,
				  (unsigned long long)cap.pids_budget);
	if (cap.fd_limit != UINT64_MAX &&
	    hu_fd_needed(cap.fd_base, cap.fd_limit, cap.fds_held + 1, cap.fds_creating + 1) > cap.fd_limit)
		return hu_err_set(err, -EAGAIN,
				  "too many open files for one more sandbox: the daemon's descriptor limit "
				  "(RLIMIT_NOFILE) is %llu, enough for about %llu sandboxes, and it holds %llu; "
				  "raise it (LimitNOFILE= in the service unit, or ulimit -n before hutch serve)",
				  (unsigned long long)cap.fd_limit,
				  (unsigned long long)hu_fd_sandboxes_allowed(cap.fd_base, cap.fd_limit),
				  (unsigned long long)cap.fds_held);
	/* real pressure: the lifecycle tick releases paused sandboxes first;
	 * with none left to release, new sandboxes would only make it worse */
	if (d->cfg.admission_refuse_under_pressure && cap.holding_paused == 0 &&
	    hu_lifecycle_under_pressure(d, why, sizeof(why)))
		return hu_err_set(err, -ENOMEM, "the host is under memory pressure (%s); try again later", why);
	return 0;
}
