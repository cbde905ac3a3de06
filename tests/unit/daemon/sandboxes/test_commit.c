/* What sandboxes commit by state, and which frozen ones a create or resume
 * releases for room (commit.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/commit.h"

#define MIB (1024ull * 1024ull)
#define PIDS 512

static struct hu_sbx *sbx(const char *id, const char *team, enum hu_sbx_state st, int released, int64_t last_active,
			  uint64_t held_mem, uint64_t held_pids)
{
	struct hu_sbx *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->team, sizeof(s->team), "%s", team);
	s->state = st;
	s->released = released;
	s->last_active_ms = last_active;
	s->memory_bytes = 512 * MIB;
	s->cpu_millis = 1000;
	s->held_memory_bytes = held_mem;
	s->held_pids = held_pids;
	return s;
}

/* Running: limits. Frozen: what it holds, never more than its limits, its
 * limits while unread. Released: nothing. */
static void test_commit_by_state(void **state)
{
	struct hu_sbx *run = sbx("r", "a", HU_SBX_RUNNING, 0, 0, 30 * MIB, 3);
	struct hu_sbx *fz = sbx("f", "a", HU_SBX_PAUSED, 0, 0, 30 * MIB, 3);
	struct hu_sbx *rel = sbx("x", "a", HU_SBX_PAUSED, 1, 0, 0, 0);
	struct hu_sbx *unread = sbx("u", "a", HU_SBX_PAUSED, 0, 0, 0, 0);
	struct hu_sbx *over = sbx("o", "a", HU_SBX_PAUSED, 0, 0, 900 * MIB, 9000);

	assert_int_equal(hu_commit_state_of(run), HU_CS_RUNNING);
	assert_int_equal(hu_commit_state_of(fz), HU_CS_FROZEN);
	assert_int_equal(hu_commit_state_of(rel), HU_CS_RELEASED);

	struct hu_commit c = hu_commit_of(run, HU_CS_RUNNING, PIDS);
	assert_int_equal(c.memory_bytes, 512 * MIB);
	assert_int_equal(c.pids, PIDS);
	assert_int_equal(c.cpu_millis, 1000);
	c = hu_commit_of(fz, HU_CS_FROZEN, PIDS);
	assert_int_equal(c.memory_bytes, 30 * MIB);
	assert_int_equal(c.pids, 3);
	assert_int_equal(c.cpu_millis, 0);
	c = hu_commit_of(fz, HU_CS_POOL, PIDS); /* a warm sandbox: the same */
	assert_int_equal(c.memory_bytes, 30 * MIB);
	assert_int_equal(c.pids, 3);
	c = hu_commit_of(rel, HU_CS_RELEASED, PIDS);
	assert_int_equal(c.memory_bytes + c.pids + c.cpu_millis, 0);
	c = hu_commit_of(unread, HU_CS_FROZEN, PIDS);
	assert_int_equal(c.memory_bytes, 512 * MIB);
	assert_int_equal(c.pids, PIDS);
	c = hu_commit_of(over, HU_CS_FROZEN, PIDS);
	assert_int_equal(c.memory_bytes, 512 * MIB);
	assert_int_equal(c.pids, PIDS);
	c = hu_commit_of(fz, HU_CS_CREATING, PIDS); /* being built: limits */
	assert_int_equal(c.memory_bytes, 512 * MIB);
	assert_int_equal(c.pids, PIDS);

	struct hu_commit_ledger l = {0};
	hu_ledger_add(&l, run, HU_CS_RUNNING, PIDS);
	hu_ledger_add(&l, fz, HU_CS_FROZEN, PIDS);
	hu_ledger_add(&l, rel, HU_CS_RELEASED, PIDS);
	assert_int_equal(hu_ledger_mem(&l, 1.0), 542 * MIB);
	/* held memory is real: at an overcommit of 4 it weighs 4 times */
	assert_int_equal(hu_ledger_mem(&l, 4.0), 512 * MIB + 4 * 30 * MIB);
	assert_int_equal(hu_ledger_mem(&l, 0.5), 542 * MIB); /* never less than it holds */
	assert_int_equal(hu_ledger_pids(&l), PIDS + 3);
	assert_int_equal(l.cpu_committed_millis, 1000);
	assert_int_equal(l.mem_held[HU_CS_RUNNING], 30 * MIB);
	assert_int_equal(l.mem_held[HU_CS_RELEASED], 0);
	assert_int_equal(l.n[HU_CS_FROZEN], 1);
	assert_string_equal(hu_commit_state_name(HU_CS_RELEASED), "released");
	free(run);
	free(fz);
	free(rel);
	free(unread);
	free(over);
}

/* The old rule counted a frozen sandbox at its limits: 56 of them filled
 * 28672 pids. Counted by what they hold, thousands fit. */
static void test_frozen_fill(void **state)
{
	struct hu_commit_ledger l = {0};
	struct hu_sbx *fz = sbx("f", "a", HU_SBX_PAUSED, 0, 0, 25 * MIB, 3);

	for (int i = 0; i < 2000; i++)
		hu_ledger_add(&l, fz, HU_CS_FROZEN, PIDS);
	assert_true(hu_ledger_pids(&l) < 32768 - 4096);
	assert_int_equal(hu_ledger_pids(&l), 6000);
	free(fz);
}

/* The team that needs room gives first, least recently used first; then
 * everybody, by age. Only as many as are needed. */
static void test_room_order(void **state)
{
	struct hu_sbx *v[5] = {
		sbx("b-old", "b", HU_SBX_PAUSED, 0, 100, 100 * MIB, 10),
		sbx("a-new", "a", HU_SBX_PAUSED, 0, 900, 100 * MIB, 10),
		sbx("c-mid", "c", HU_SBX_PAUSED, 0, 500, 100 * MIB, 10),
		sbx("a-old", "a", HU_SBX_PAUSED, 0, 300, 100 * MIB, 10),
		sbx("b-new", "b", HU_SBX_PAUSED, 0, 800, 100 * MIB, 10),
	};
	const char *want[5] = {"a-old", "a-new", "b-old", "c-mid", "b-new"};

	assert_int_equal(hu_room_plan(v, 5, "a", 0, 0, 0, PIDS, 1.0), 0); /* nothing short: nothing released */
	assert_int_equal(hu_room_plan(v, 5, "a", 150 * MIB, 0, 0, PIDS, 1.0), 2);
	for (int i = 0; i < 5; i++)
		assert_string_equal(v[i]->id, want[i]);
	assert_int_equal(hu_room_plan(v, 5, "a", 250 * MIB, 0, 0, PIDS, 1.0), 3);
	assert_int_equal(hu_room_plan(v, 5, "a", 0, 41, 0, PIDS, 1.0), 5); /* pids short: 10 each */
	/* a team with none of its own: globally by age */
	assert_int_equal(hu_room_plan(v, 5, "z", 1, 0, 0, PIDS, 1.0), 1);
	assert_string_equal(v[0]->id, "b-old");
	assert_string_equal(v[4]->id, "a-new");
	for (int i = 0; i < 5; i++)
		free(v[i]);
}

/* Not enough even with all of them: -1, so the caller releases none. */
static void test_room_not_enough(void **state)
{
	struct hu_sbx *v[2] = {
		sbx("a", "a", HU_SBX_PAUSED, 0, 1, 100 * MIB, 10),
		sbx("b", "b", HU_SBX_PAUSED, 0, 2, 100 * MIB, 10),
	};

	assert_int_equal(hu_room_plan(v, 2, "a", 201 * MIB, 0, 0, PIDS, 1.0), -1);
	assert_int_equal(hu_room_plan(v, 2, "a", 200 * MIB, 21, 0, PIDS, 1.0), -1);
	assert_int_equal(hu_room_plan(v, 2, "a", 200 * MIB, 20, 0, PIDS, 1.0), 2);
	assert_int_equal(hu_room_plan(NULL, 0, "a", 1, 0, 0, PIDS, 1.0), -1);
	assert_int_equal(hu_room_plan(NULL, 0, "a", 0, 0, 0, PIDS, 1.0), 0);
	free(v[0]);
	free(v[1]);
}

/* Slots (max_sandboxes, descriptors): each release frees one, whatever it
 * holds; with memory short as well, whichever needs more decides. */
static void test_room_slots(void **state)
{
	struct hu_sbx *v[3] = {
		sbx("a", "a", HU_SBX_PAUSED, 0, 1, 100 * MIB, 10),
		sbx("b", "b", HU_SBX_PAUSED, 0, 2, 100 * MIB, 10),
		sbx("c", "b", HU_SBX_PAUSED, 0, 3, 100 * MIB, 10),
	};

	assert_int_equal(hu_room_plan(v, 3, "a", 0, 0, 1, PIDS, 1.0), 1);
	assert_int_equal(hu_room_plan(v, 3, "a", 0, 0, 3, PIDS, 1.0), 3);
	assert_int_equal(hu_room_plan(v, 3, "a", 0, 0, 4, PIDS, 1.0), -1);
	assert_int_equal(hu_room_plan(v, 3, "a", 150 * MIB, 0, 1, PIDS, 1.0), 2);
	assert_int_equal(hu_room_plan(v, 3, "a", 1, 0, 2, PIDS, 1.0), 2);
	/* weighed by 4, each frees 400 MiB of the budget */
	assert_int_equal(hu_room_plan(v, 3, "a", 800 * MIB, 0, 0, PIDS, 4.0), 2);
	assert_int_equal(hu_room_plan(v, 3, "a", 801 * MIB, 0, 0, PIDS, 4.0), 3);
	for (int i = 0; i < 3; i++)
		free(v[i]);
}

/* Released sandboxes hold no processes: they are not among the sandboxes
 * max_sandboxes and the descriptor budget count; every other state is. */
static void test_holding(void **state)
{
	struct hu_commit_ledger l = {0};
	struct hu_sbx *run = sbx("r", "a", HU_SBX_RUNNING, 0, 0, 0, 0);
	struct hu_sbx *fz = sbx("f", "a", HU_SBX_PAUSED, 0, 0, 25 * MIB, 3);
	struct hu_sbx *rel = sbx("x", "a", HU_SBX_PAUSED, 1, 0, 0, 0);

	for (int i = 0; i < 1000; i++)
		hu_ledger_add(&l, rel, hu_commit_state_of(rel), PIDS);
	assert_int_equal(hu_ledger_holding(&l), 0);
	hu_ledger_add(&l, run, hu_commit_state_of(run), PIDS);
	hu_ledger_add(&l, fz, hu_commit_state_of(fz), PIDS);
	hu_ledger_add(&l, fz, HU_CS_POOL, PIDS);
	hu_ledger_add(&l, run, HU_CS_CREATING, PIDS);
	assert_int_equal(hu_ledger_holding(&l), 4);
	assert_int_equal(l.n[HU_CS_RELEASED], 1000);
	free(run);
	free(fz);
	free(rel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commit_by_state),
		cmocka_unit_test(test_room_slots),
		cmocka_unit_test(test_holding),
		cmocka_unit_test(test_frozen_fill),
		cmocka_unit_test(test_room_order),
		cmocka_unit_test(test_room_not_enough),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
