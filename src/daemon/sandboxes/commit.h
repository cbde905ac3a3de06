/*
 * What each sandbox commits against the admission budget (admission.h),
 * and which frozen sandboxes to release when a create or a resume needs
 * room. Pure bookkeeping over struct hu_sbx: no I/O, unit-tested on its own.
 *
 * A running sandbox, or one being created, commits its limits: it may grow
 * to them at any moment. A frozen sandbox cannot allocate or fork, so it
 * commits what it holds (its memory charge and tasks, read at freeze and
 * kept up to date by the sampler). A warm pool sandbox runs nothing until a
 * create takes it, so it too commits what it holds. A released sandbox has
 * no processes and commits nothing here (its files are outside admission),
 * nor does it count against max_sandboxes or the descriptor budget.
 * A holding figure not read yet (0) counts as the limit.
 *
 * Held memory weighs by the memory overcommit against the budget
 * (hu_ledger_mem): it is real memory, not a cap.
 *
 * Making room (hu_room_plan): the frozen sandboxes of the team that needs
 * room are released first, least recently used first, then everybody's,
 * least recently used first; and none at all unless releasing them is
 * enough, so a create or resume that cannot fit fails without having
 * released anything.
 */
#ifndef HUTCH_DAEMON_COMMIT_H
#define HUTCH_DAEMON_COMMIT_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/sandboxes/registry.h"

enum hu_commit_state {
	HU_CS_RUNNING,
	HU_CS_FROZEN,   /* paused, memory kept */
	HU_CS_RELEASED, /* paused, memory released */
	HU_CS_POOL,     /* a ready warm pool sandbox */
	HU_CS_CREATING, /* being built: a request's create or a pool build */
	HU_CS_N
};

/* "running", "frozen", ... for /metrics labels. */
const char *hu_commit_state_name(enum hu_commit_state cs);
/* The state a registered sandbox counts in (running, frozen or released). */
enum hu_commit_state hu_commit_state_of(const struct hu_sbx *s);

struct hu_commit {
	uint64_t memory_bytes, pids, cpu_millis;
};
/* What s commits in state cs; pids_limit is every sandbox's pids limit. */
struct hu_commit hu_commit_of(const struct hu_sbx *s, enum hu_commit_state cs, uint64_t pids_limit);

/* The sums, by state: committed (what admission counts) and held (what
 * the sandboxes hold now, as last read). */
struct hu_commit_ledger {
	uint64_t mem_committed[HU_CS_N], mem_held[HU_CS_N];
	uint64_t pids_committed[HU_CS_N], pids_held[HU_CS_N];
	uint64_t cpu_committed_millis;
	unsigned n[HU_CS_N];
};
void hu_ledger_add(struct hu_commit_ledger *l, const struct hu_sbx *s, enum hu_commit_state cs, uint64_t pids_limit);
/* Memory against the budget: the limits of running sandboxes and creates
 * as they are, what frozen and warm sandboxes hold times held_weight. The
 * budget is memory times an overcommit ratio because limits are caps that
 * idle sandboxes rarely reach; what a frozen sandbox holds is real memory
 * that cannot be overcommitted, so admission weighs it by the same ratio
 * (1000 frozen sandboxes of 25 MiB are 25 GiB of the host, not a quarter
 * of that). */
uint64_t hu_ledger_mem(const struct hu_commit_ledger *l, double held_weight);
/* The memory s commits in state cs, weighed as hu_ledger_mem does. */
uint64_t hu_commit_mem_weighed(const struct hu_sbx *s, enum hu_commit_state cs, uint64_t pids_limit,
			       double held_weight);
uint64_t hu_ledger_pids(const struct hu_commit_ledger *l);

/* Sandboxes that hold processes (and descriptors in the daemon): every
 * state but released. max_sandboxes and the descriptor budget count these;
 * a released sandbox holds only its files and its row. */
unsigned hu_ledger_holding(const struct hu_commit_ledger *l);

/* Order cands (frozen sandboxes; the one resuming not among them) for
 * release: team's own first, then the others, least recently used first
 * within each. Returns how many of the first are enough to free mem_short
 * bytes, pids_short pids and slots_short sandbox slots (max_sandboxes,
 * descriptors: each release frees one), 0 if nothing is short, or -1 if
 * all of them together are not. */
long hu_room_plan(struct hu_sbx **cands, size_t n, const char *team, uint64_t mem_short, uint64_t pids_short,
		  uint64_t slots_short, uint64_t pids_limit, double held_weight);

#endif
