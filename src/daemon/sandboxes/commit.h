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
 * no processes and commits nothing here (its files are outside admission).
 * A holding figure not read yet (0) counts as the limit.
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
uint64_t hu_ledger_mem(const struct hu_commit_ledger *l);
uint64_t hu_ledger_pids(const struct hu_commit_ledger *l);

/* Order cands (frozen sandboxes; the one resuming not among them) for
 * release: team's own first, then the others, least recently used first
 * within each. Returns how many of the first are enough to free mem_short
 * bytes and pids_short pids (0 if nothing is short), or -1 if all of them
 * together are not. */
long hu_room_plan(struct hu_sbx **cands, size_t n, const char *team, uint64_t mem_short, uint64_t pids_short,
		  uint64_t pids_limit);

#endif
