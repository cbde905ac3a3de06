/*
 * Admission control: the daemon's account of what its sandboxes may use
 * (memory and pids: the limits of running sandboxes and creates, what
 * frozen and warm pool sandboxes hold, nothing for released ones, as
 * commit.h counts them; CPU of the running ones, by their limits) against what the host has (/proc/meminfo, the CPU
 * count, pid_max) minus a reserve for the host itself, times an overcommit
 * ratio, because limits are caps that idle sandboxes rarely reach. A create
 * beyond the budget is refused with 429 and Retry-After before anything is
 * built. Under real memory pressure (lifecycle.h) paused sandboxes release
 * memory first; when none is left to release, creates get 503. The
 * daemon's own descriptors are budgeted too (fd_budget.h): a create that
 * would run it out of them is refused with 429 like the others, and so is
 * one beyond max_sandboxes. Both count the sandboxes that hold processes:
 * a released sandbox holds no descriptor and no process, only its files
 * and its row, and counts against neither.
 */
#ifndef HUTCH_DAEMON_ADMISSION_H
#define HUTCH_DAEMON_ADMISSION_H

#include <stdint.h>

#include "daemon/core/daemon.h"
#include "daemon/sandboxes/commit.h"

struct hu_capacity {
	uint64_t mem_total, mem_available; /* bytes, /proc/meminfo */
	uint64_t mem_reserve;              /* kept for the host */
	uint64_t mem_budget;               /* (total - reserve) * memory_overcommit */
	uint64_t mem_committed;            /* the ledger's sum (commit.h) */
	uint32_t cpus;                     /* online CPUs */
	uint64_t cpu_budget_millis;        /* cpus * 1000 * cpu_overcommit */
	uint64_t cpu_committed_millis;     /* limits of the running sandboxes */
	uint64_t pids_budget;              /* pid_max minus the reserve, for sandboxes */
	uint64_t pids_committed;
	uint64_t pids_per_sandbox;         /* every sandbox gets default_pids */
	unsigned holding_paused;           /* paused sandboxes that still hold memory */
	uint64_t holding;                  /* sandboxes with processes: all but released ones (commit.h) */
	uint64_t max_holding;              /* max_sandboxes (0: no maximum) */
	uint64_t fd_limit, fd_base;        /* soft RLIMIT_NOFILE (UINT64_MAX: none), fds before sandboxes */
	uint64_t fds_held, fds_creating;   /* sandboxes holding descriptors (fd_budget.h), creates among them */
	struct hu_commit_ledger ledger;    /* committed and held, by state */
};

/* The account now (no side effects). */
int hu_capacity_read(struct hu_daemon *d, struct hu_capacity *cap, hu_err *err);
/* May a sandbox with these limits be created now? 0, or -1 with EAGAIN
 * (over budget: 429) or ENOMEM (memory pressure, nothing left to release:
 * 503), and a message that says which resource and by how much. */
int hu_admission_check(struct hu_daemon *d, uint64_t memory_bytes, uint32_t cpu_millis, hu_err *err);
/* The same, with `skip` (a sandbox about to resume, which needs its full
 * limits back) left out of the account; NULL: none. */
int hu_capacity_read_skip(struct hu_daemon *d, const struct hu_sbx *skip, struct hu_capacity *cap, hu_err *err);
int hu_admission_check_skip(struct hu_daemon *d, const struct hu_sbx *skip, uint64_t memory_bytes, uint32_t cpu_millis,
			    hu_err *err);
/* How much memory, how many pids and how many sandbox slots (max_sandboxes
 * and descriptors, one per sandbox that holds processes) one more sandbox
 * of memory_bytes is short of (all 0: it fits). */
void hu_capacity_short(const struct hu_capacity *cap, uint64_t memory_bytes, uint64_t *mem_short, uint64_t *pids_short,
		       uint64_t *slots_short);

/* Admit a create (skip NULL) or a resume (skip: the sandbox) for team:
 * the warm pools give way first, then the team's frozen sandboxes, least
 * recently used first, then anybody's (commit.h), released only when
 * releasing them is enough. -1 with EAGAIN (or ENOMEM) when it cannot fit;
 * nothing was released then. (room.c) */
int hu_admit_with_room(struct hu_daemon *d, const char *team, const struct hu_sbx *skip, uint64_t memory_bytes,
		       uint32_t cpu_millis, hu_err *err);

#endif
