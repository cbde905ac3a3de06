/* Admission control (admission.h). */
#include "daemon/sandboxes/admission.h"

#include <stdio.h>
#include <string.h>

#include "daemon/sandboxes/commit.h"
#include "daemon/sandboxes/fd_budget.h"
#include "daemon/sandboxes/host_capacity.h"
#include "daemon/sandboxes/host_readings.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/sandbox_ops.h"

#define MIB (1024ull * 1024ull)

struct count_ctx {
	struct hu_capacity *cap;
	const struct hu_sbx *skip;
};

static int count(struct hu_sbx *s, void *arg)
{
	struct count_ctx *c = arg;

	if (s != c->skip)
		hu_ledger_add(&c->cap->ledger, s, hu_commit_state_of(s), c->cap->pids_per_sandbox);
	return 0;
}

int hu_capacity_read(struct hu_daemon *d, struct hu_capacity *cap, hu_err *err)
{
	return hu_capacity_read_skip(d, NULL, cap, err);
}

int hu_capacity_read_skip(struct hu_daemon *d, const struct hu_sbx *skip, struct hu_capacity *cap, hu_err *err)
{
	const struct hu_config *cfg = &d->cfg;
	struct hu_host_readings host;

	memset(cap, 0, sizeof(*cap));
	if (hu_host_readings(&host, err) < 0)
		return -1;
	cap->mem_total = host.mem_total;
	cap->mem_available = host.mem_available;
	cap->mem_reserve = hu_mem_reserve(cfg, cap->mem_total);
	cap->mem_budget = hu_mem_budget(cfg, cap->mem_total);
	cap->cpus = host.cpus;
	cap->cpu_budget_millis = (uint64_t)((double)cap->cpus * 1000.0 * cfg->admission_cpu_overcommit);
	cap->pids_budget = hu_pids_budget(cfg, host.pid_max);
	cap->pids_per_sandbox = cfg->default_pids;
	struct count_ctx c = {cap, skip};
	if (d->reg)
		hu_registry_each(d->reg, count, &c);
	/* creates in progress are commitments too, at their limits */
	uint64_t mem = 0, cpu = 0;
	hu_sbx_pending_commitments(d, &mem, &cpu);
	cap->ledger.n[HU_CS_CREATING] += d->n_creating;
	cap->ledger.mem_committed[HU_CS_CREATING] += mem;
	cap->ledger.cpu_committed_millis += cpu;
	cap->ledger.pids_committed[HU_CS_CREATING] += (uint64_t)d->n_creating * cap->pids_per_sandbox;
	/* and so are the warm pools (ready: what they hold; being built: limits) */
	hu_pool_commitments(d, &cap->ledger);
	cap->mem_committed = hu_ledger_mem(&cap->ledger, cfg->admission_memory_overcommit);
	cap->pids_committed = hu_ledger_pids(&cap->ledger);
	cap->cpu_committed_millis = cap->ledger.cpu_committed_millis;
	cap->holding_paused = cap->ledger.n[HU_CS_FROZEN];
	/* sandboxes with processes (warm and being built included): what
	 * max_sandboxes counts; released ones hold only files and a row */
	cap->holding = hu_ledger_holding(&cap->ledger);
	cap->max_holding = cfg->max_sandboxes;
	/* descriptors: the same, and the ones being killed */
	cap->fds_held = cap->holding + d->n_killing;
	cap->fds_creating = d->n_creating;
	hu_fd_budget_read(cap->fds_held, &cap->fd_limit, &cap->fd_base);
	return 0;
}

int hu_admission_check(struct hu_daemon *d, uint64_t memory_bytes, uint32_t cpu_millis, hu_err *err)
{
	return hu_admission_check_skip(d, NULL, memory_bytes, cpu_millis, err);
}

/* Sandboxes over max_sandboxes with one more (0: it fits). */
static uint64_t over_max(const struct hu_capacity *cap)
{
	return cap->max_holding && cap->holding + 1 > cap->max_holding ? cap->holding + 1 - cap->max_holding : 0;
}

/* Sandboxes that would have to give back their descriptors for one more
 * (0: it fits). */
static uint64_t over_fds(const struct hu_capacity *cap)
{
	if (cap->fd_limit == UINT64_MAX)
		return 0;
	uint64_t need = hu_fd_needed(cap->fd_base, cap->fd_limit, cap->fds_held + 1, cap->fds_creating + 1);
	return need > cap->fd_limit ? (need - cap->fd_limit + HU_FD_PER_SANDBOX - 1) / HU_FD_PER_SANDBOX : 0;
}

void hu_capacity_short(const struct hu_capacity *cap, uint64_t memory_bytes, uint64_t *mem_short, uint64_t *pids_short,
		       uint64_t *slots_short)
{
	uint64_t mem = cap->mem_committed + memory_bytes, pids = cap->pids_committed + cap->pids_per_sandbox;
	uint64_t slots = over_max(cap), fds = over_fds(cap);

	*mem_short = mem > cap->mem_budget ? mem - cap->mem_budget : 0;
	*pids_short = pids > cap->pids_budget ? pids - cap->pids_budget : 0;
	*slots_short = slots > fds ? slots : fds;
}

int hu_admission_check_skip(struct hu_daemon *d, const struct hu_sbx *skip, uint64_t memory_bytes, uint32_t cpu_millis,
			    hu_err *err)
{
	uint64_t pids;
	struct hu_capacity cap;
	char why[160];

	if (hu_capacity_read_skip(d, skip, &cap, err) < 0)
		return -1;
	pids = cap.pids_per_sandbox;
	if (over_max(&cap))
		return hu_err_set(err, -EAGAIN,
				  "this server runs its maximum of %llu sandboxes (max_sandboxes; released sandboxes, "
				  "which hold only their files, are not counted)",
				  (unsigned long long)cap.max_holding);
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
	if (over_fds(&cap))
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
