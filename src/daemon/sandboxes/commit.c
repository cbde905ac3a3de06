/* What sandboxes commit, and which to release for room (commit.h). */
#include "daemon/sandboxes/commit.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[HU_CS_N] = {
	[HU_CS_RUNNING] = "running", [HU_CS_FROZEN] = "frozen", [HU_CS_RELEASED] = "released",
	[HU_CS_POOL] = "pool",       [HU_CS_CREATING] = "creating",
};

const char *hu_commit_state_name(enum hu_commit_state cs)
{
	return cs < HU_CS_N ? names[cs] : "?";
}

enum hu_commit_state hu_commit_state_of(const struct hu_sbx *s)
{
	if (s->state != HU_SBX_PAUSED)
		return HU_CS_RUNNING;
	return s->released ? HU_CS_RELEASED : HU_CS_FROZEN;
}

struct hu_commit hu_commit_of(const struct hu_sbx *s, enum hu_commit_state cs, uint64_t pids_limit)
{
	struct hu_commit c = {0};

	switch (cs) {
	case HU_CS_RUNNING:
	case HU_CS_CREATING:
		c.memory_bytes = s->memory_bytes;
		c.pids = pids_limit;
		c.cpu_millis = s->cpu_millis;
		break;
	case HU_CS_FROZEN:
	case HU_CS_POOL:
		/* never more than the limits: the charge cannot exceed them */
		c.memory_bytes = s->held_memory_bytes && s->held_memory_bytes < s->memory_bytes ? s->held_memory_bytes
											       : s->memory_bytes;
		c.pids = s->held_pids && s->held_pids < pids_limit ? s->held_pids : pids_limit;
		/* a frozen sandbox uses no CPU; a pool sandbox idles */
		break;
	case HU_CS_RELEASED:
	case HU_CS_N:
		break;
	}
	return c;
}

void hu_ledger_add(struct hu_commit_ledger *l, const struct hu_sbx *s, enum hu_commit_state cs, uint64_t pids_limit)
{
	struct hu_commit c = hu_commit_of(s, cs, pids_limit);

	if (cs >= HU_CS_N)
		return;
	l->n[cs]++;
	l->mem_committed[cs] += c.memory_bytes;
	l->pids_committed[cs] += c.pids;
	l->cpu_committed_millis += c.cpu_millis;
	if (cs != HU_CS_RELEASED) {
		l->mem_held[cs] += s->held_memory_bytes;
		l->pids_held[cs] += s->held_pids;
	}
}

static int held_state(int cs)
{
	return cs == HU_CS_FROZEN || cs == HU_CS_POOL;
}

static uint64_t weigh(uint64_t bytes, int cs, double held_weight)
{
	return held_state(cs) && held_weight > 1.0 ? (uint64_t)((double)bytes * held_weight) : bytes;
}

uint64_t hu_ledger_mem(const struct hu_commit_ledger *l, double held_weight)
{
	uint64_t t = 0;
	for (int i = 0; i < HU_CS_N; i++)
		t += weigh(l->mem_committed[i], i, held_weight);
	return t;
}

uint64_t hu_commit_mem_weighed(const struct hu_sbx *s, enum hu_commit_state cs, uint64_t pids_limit,
			       double held_weight)
{
	return weigh(hu_commit_of(s, cs, pids_limit).memory_bytes, cs, held_weight);
}

uint64_t hu_ledger_pids(const struct hu_commit_ledger *l)
{
	uint64_t t = 0;
	for (int i = 0; i < HU_CS_N; i++)
		t += l->pids_committed[i];
	return t;
}

unsigned hu_ledger_holding(const struct hu_commit_ledger *l)
{
	unsigned t = 0;
	for (int i = 0; i < HU_CS_N; i++)
		if (i != HU_CS_RELEASED)
			t += l->n[i];
	return t;
}

static const char *sort_team; /* qsort has no argument; one loop thread */

static int release_order(const void *a, const void *b)
{
	const struct hu_sbx *x = *(struct hu_sbx *const *)a, *y = *(struct hu_sbx *const *)b;
	int xo = sort_team && !strcmp(x->team, sort_team), yo = sort_team && !strcmp(y->team, sort_team);

	if (xo != yo)
		return yo - xo; /* the team's own first */
	if (x->last_active_ms != y->last_active_ms)
		return x->last_active_ms < y->last_active_ms ? -1 : 1;
	return strcmp(x->id, y->id); /* a stable order for equal ages */
}

long hu_room_plan(struct hu_sbx **cands, size_t n, const char *team, uint64_t mem_short, uint64_t pids_short,
		  uint64_t slots_short, uint64_t pids_limit, double held_weight)
{
	uint64_t mem = 0, pids = 0;

	if (n) { /* qsort wants an array, even of none */
		sort_team = team;
		qsort(cands, n, sizeof(*cands), release_order);
		sort_team = NULL;
	}
	for (size_t i = 0;; i++) {
		if (mem >= mem_short && pids >= pids_short && i >= slots_short)
			return (long)i;
		if (i == n)
			return -1;
		mem += hu_commit_mem_weighed(cands[i], HU_CS_FROZEN, pids_limit, held_weight);
		pids += hu_commit_of(cands[i], HU_CS_FROZEN, pids_limit).pids;
	}
}
