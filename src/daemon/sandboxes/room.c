/* Room for a create or a resume: pools give way, then frozen sandboxes
 * are released in the order commit.h gives (admission.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/admission.h"
#include "daemon/sandboxes/commit.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/sandbox_ops.h"

struct frozen_ctx {
	struct hu_sbx_list l;
	const struct hu_sbx *skip;
	int failed;
};

static int collect_frozen(struct hu_sbx *s, void *arg)
{
	struct frozen_ctx *c = arg;

	if (s != c->skip && hu_commit_state_of(s) == HU_CS_FROZEN && hu_sbx_list_add(&c->l, s) < 0)
		c->failed = 1;
	return 0;
}

/* What the frozen sandboxes (skip left out) and the ready pool sandboxes
 * could give together: memory, pids, and slots (one each). */
static void could_give(const struct hu_capacity *cap, struct hu_sbx_list *frozen, double held_weight, uint64_t *mem,
		       uint64_t *pids, uint64_t *slots)
{
	struct hu_commit_ledger pools = {0};

	/* the pools' part of the ledger alone, weighed as admission weighs it */
	pools.mem_committed[HU_CS_POOL] = cap->ledger.mem_committed[HU_CS_POOL];
	*mem = hu_ledger_mem(&pools, held_weight);
	*pids = cap->ledger.pids_committed[HU_CS_POOL];
	*slots = cap->ledger.n[HU_CS_POOL] + frozen->n;
	for (size_t i = 0; i < frozen->n; i++) {
		*mem += hu_commit_mem_weighed(frozen->v[i], HU_CS_FROZEN, cap->pids_per_sandbox, held_weight);
		*pids += hu_commit_of(frozen->v[i], HU_CS_FROZEN, cap->pids_per_sandbox).pids;
	}
}

/* Release the frozen sandboxes that make room for memory_bytes (what is
 * short once the pools gave way); -1 if they cannot cover it (none is
 * released then). */
static int release_for_room(struct hu_daemon *d, const char *team, const struct hu_sbx *skip, uint64_t memory_bytes,
			    hu_err *err)
{
	struct hu_capacity cap;
	struct frozen_ctx c = {.skip = skip};
	uint64_t mem_short, pids_short, slots_short;
	hu_err rerr;
	int rc = -1;

	if (hu_capacity_read_skip(d, skip, &cap, &rerr) < 0)
		return -1;
	hu_capacity_short(&cap, memory_bytes, &mem_short, &pids_short, &slots_short);
	hu_registry_each(d->reg, collect_frozen, &c);
	long k = c.failed ? -1
			  : hu_room_plan(c.l.v, c.l.n, team, mem_short, pids_short, slots_short, cap.pids_per_sandbox,
					       d->cfg.admission_memory_overcommit);
	if (k < 0) {
		free(c.l.v);
		return -1;
	}
	rc = 0;
	for (long i = 0; i < k; i++) {
		char why[160];
		snprintf(why, sizeof(why), "room for a %s of team %s", skip ? "resume" : "create", team);
		if (hu_sbx_release(d, c.l.v[i], HU_RELEASE_ROOM, why, &rerr) < 0) {
			hu_log(HU_LOG_WARN, c.l.v[i]->id, 0, "%s", rerr.msg);
			rc = -1;
		}
	}
	free(c.l.v);
	return rc;
}

int hu_admit_with_room(struct hu_daemon *d, const char *team, const struct hu_sbx *skip, uint64_t memory_bytes,
		       uint32_t cpu_millis, hu_err *err)
{
	struct hu_capacity cap;
	struct frozen_ctx c = {.skip = skip};
	uint64_t mem_short, pids_short, slots_short, mem_can, pids_can, slots_can;
	hu_err rerr;

	if (hu_admission_check_skip(d, skip, memory_bytes, cpu_millis, err) == 0)
		return 0;
	if (err->code != EAGAIN)
		return -1;
	if (hu_capacity_read_skip(d, skip, &cap, &rerr) < 0)
		return -1;
	hu_capacity_short(&cap, memory_bytes, &mem_short, &pids_short, &slots_short);
	/* CPU: frozen and warm sandboxes use none, giving them up frees none */
	if ((!mem_short && !pids_short && !slots_short) ||
	    (d->cfg.admission_cpu_overcommit > 0 && cap.cpu_committed_millis + cpu_millis > cap.cpu_budget_millis))
		return -1;
	/* all or nothing: unless the pools and the frozen sandboxes together
	 * cover what is short, nothing is given up */
	hu_registry_each(d->reg, collect_frozen, &c);
	could_give(&cap, &c.l, d->cfg.admission_memory_overcommit, &mem_can, &pids_can, &slots_can);
	size_t n_frozen = c.l.n;
	free(c.l.v);
	if (c.failed || mem_can < mem_short || pids_can < pids_short || slots_can < slots_short) {
		hu_err_prefix(err, "%zu frozen and %u warm sandboxes could not make room", n_frozen,
			      cap.ledger.n[HU_CS_POOL]);
		return -1;
	}
	/* the pools first: a pool sandbox costs nobody a cold boot */
	while (hu_pool_give_way(d))
		if (hu_admission_check_skip(d, skip, memory_bytes, cpu_millis, err) == 0)
			return 0;
	if (release_for_room(d, team, skip, memory_bytes, err) < 0)
		return -1;
	return hu_admission_check_skip(d, skip, memory_bytes, cpu_millis, err);
}
