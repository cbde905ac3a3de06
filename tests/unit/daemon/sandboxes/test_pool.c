/* Warm pools: the bookkeeping of a pool's ready sandboxes and the sizes the
 * configuration gives each template (pool.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/config.h"
#include "daemon/sandboxes/pool.h"

static struct hu_sbx *sbx(const char *id, uint64_t memory, int internet)
{
	struct hu_sbx *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->template_id, sizeof(s->template_id), "base");
	s->memory_bytes = memory;
	s->cpu_millis = 1000;
	s->disk_bytes = 1 << 30;
	s->internet = internet;
	return s;
}

static void free_set(struct hu_pool_set *ps)
{
	for (size_t i = 0; i < ps->n_ready; i++)
		free(ps->ready[i]);
	free(ps->ready);
}

/* Every sandbox pushed comes out exactly once, however many are taken. */
static void test_take_once(void **state)
{
	struct hu_pool_set ps = {.template_id = "base", .target = 3};
	struct hu_sbx *want = sbx("want", 512, 0);
	char seen[40][HU_ID_MAX];
	size_t n_seen = 0;
	hu_err err;

	for (int i = 0; i < 40; i++) {
		char id[16];
		snprintf(id, sizeof(id), "i%02d", i);
		assert_int_equal(hu_pool_set_push(&ps, sbx(id, 512, 0), &err), 0);
	}
	assert_int_equal(ps.n_ready, 40);
	assert_int_equal(hu_pool_set_missing(&ps), 0);
	for (struct hu_sbx *s; (s = hu_pool_set_take(&ps, want));) {
		for (size_t i = 0; i < n_seen; i++)
			assert_string_not_equal(seen[i], s->id);
		snprintf(seen[n_seen++], HU_ID_MAX, "%s", s->id);
		free(s);
	}
	assert_int_equal(n_seen, 40);
	assert_int_equal(ps.taken, 40);
	assert_int_equal(ps.n_ready, 0);
	assert_null(hu_pool_set_take(&ps, want));
	assert_null(hu_pool_set_pop_oldest(&ps));
	free(want);
	free_set(&ps);
}

/* A sandbox built with other limits or another network is not handed to a
 * request that needs different ones; the newest that fits is. */
static void test_take_fits(void **state)
{
	struct hu_pool_set ps = {.template_id = "base", .target = 4};
	struct hu_sbx *want = sbx("want", 512, 1);
	hu_err err;

	assert_int_equal(hu_pool_set_push(&ps, sbx("old-fit", 512, 1), &err), 0);
	assert_int_equal(hu_pool_set_push(&ps, sbx("new-fit", 512, 1), &err), 0);
	assert_int_equal(hu_pool_set_push(&ps, sbx("no-net", 512, 0), &err), 0);
	assert_int_equal(hu_pool_set_push(&ps, sbx("big", 1024, 1), &err), 0);

	struct hu_sbx *s = hu_pool_set_take(&ps, want);
	assert_string_equal(s->id, "new-fit");
	free(s);
	s = hu_pool_set_take(&ps, want);
	assert_string_equal(s->id, "old-fit");
	free(s);
	assert_null(hu_pool_set_take(&ps, want));
	assert_int_equal(ps.n_ready, 2);

	want->cpu_millis = 500;
	want->internet = 0;
	assert_null(hu_pool_set_take(&ps, want)); /* other CPU limit */
	want->cpu_millis = 1000;
	s = hu_pool_set_take(&ps, want);
	assert_string_equal(s->id, "no-net");
	free(s);
	/* the oldest gives way first */
	s = hu_pool_set_pop_oldest(&ps);
	assert_string_equal(s->id, "big");
	free(s);
	free(want);
	free_set(&ps);
}

/* Builds to start: the target less what is ready and what is being built. */
static void test_missing(void **state)
{
	struct hu_pool_set ps = {.template_id = "base", .target = 3};
	hu_err err;

	assert_int_equal(hu_pool_set_missing(&ps), 3);
	ps.filling = 2;
	assert_int_equal(hu_pool_set_missing(&ps), 1);
	assert_int_equal(hu_pool_set_push(&ps, sbx("a", 1, 0), &err), 0);
	assert_int_equal(hu_pool_set_missing(&ps), 0);
	assert_int_equal(hu_pool_set_push(&ps, sbx("b", 1, 0), &err), 0);
	assert_int_equal(hu_pool_set_missing(&ps), 0); /* over target: nothing, never negative */
	ps.target = 0;
	ps.filling = 0;
	assert_int_equal(hu_pool_set_missing(&ps), 0);
	free_set(&ps);
}

static void test_sizes(void **state)
{
	struct hu_config cfg;
	hu_err err;

	hu_config_defaults(&cfg);
	assert_int_equal(hu_pool_size_for(&cfg, "base"), 2);
	assert_int_equal(cfg.pool_max, 128); /* 100 concurrent creates from one client fit */
	assert_int_equal(hu_config_set(&cfg, "pool.max", "100", &err), 0);
	assert_int_equal(cfg.pool_max, 100);
	assert_int_equal(hu_config_set(&cfg, "pool.max", "257", &err), -1);
	assert_int_equal(cfg.pool_max, 100);
	assert_int_equal(hu_pool_size_for(&cfg, "python"), 0);
	assert_int_equal(hu_config_set(&cfg, "pool.size", "5", &err), 0);
	assert_int_equal(hu_config_set(&cfg, "pool.size.python", "3", &err), 0);
	assert_int_equal(hu_config_set(&cfg, "pool.size.python", "4", &err), 0); /* replaces */
	assert_int_equal(hu_config_set(&cfg, "pool.size.base", "1", &err), 0);
	assert_int_equal(cfg.n_pool_sizes, 2);
	assert_int_equal(hu_pool_size_for(&cfg, "python"), 4);
	assert_int_equal(hu_pool_size_for(&cfg, "base"), 1);
	assert_int_equal(hu_pool_size_for(&cfg, "node"), 0);
	assert_int_equal(hu_config_set(&cfg, "pool.size", "0", &err), 0);
	assert_int_equal(hu_pool_size_for(&cfg, "base"), 1); /* the override wins */

	/* bad values change nothing */
	assert_int_equal(hu_config_set(&cfg, "pool.size", "-1", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "pool.size", "257", &err), -1);
	assert_non_null(strstr(err.msg, "pool.size"));
	assert_int_equal(hu_config_set(&cfg, "pool.size.python", "lots", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "pool.size.../etc", "1", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "pool.size.", "1", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "pool.size.Py\"thon", "1", &err), -1);
	assert_int_equal(cfg.n_pool_sizes, 2);
	assert_int_equal(cfg.pool_size, 0);
	assert_int_equal(hu_pool_size_for(&cfg, "python"), 4);

	/* a bounded table */
	for (int i = 0; i < HU_POOL_TEMPLATES_MAX - 2; i++) {
		char key[32];
		snprintf(key, sizeof(key), "pool.size.t%d", i);
		assert_int_equal(hu_config_set(&cfg, key, "1", &err), 0);
	}
	assert_int_equal(hu_config_set(&cfg, "pool.size.one-more", "1", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "pool.size.t0", "2", &err), 0); /* replacing still works */
}


/* A burst of 50 creates, each within HU_POOL_BURST_MS of the one before,
 * makes the peak 50, across a bucket's boundary too; creates a second
 * apart, and bursts a second apart, do not add up. */
static void test_demand_peak(void **state)
{
	struct hu_pool_demand dm = {0};
	int64_t t0 = 1700000009980; /* 20 ms before a bucket ends */

	assert_int_equal(hu_pool_demand_peak(&dm, t0), 0);
	for (int i = 0; i < 50; i++)
		hu_pool_demand_note(&dm, t0 + i, 0); /* 50 ms: across the boundary */
	assert_int_equal(hu_pool_demand_peak(&dm, t0 + 1000), 50);
	struct hu_pool_demand slow = {0};
	for (int i = 0; i < 50; i++)
		hu_pool_demand_note(&slow, t0 + i * 1000, 0); /* one a second */
	assert_int_equal(hu_pool_demand_peak(&slow, t0 + 50 * 1000), 1);
	for (int i = 0; i < 50; i++)
		hu_pool_demand_note(&dm, t0 + 1000 + i, 0); /* the next burst, a second later */
	assert_int_equal(hu_pool_demand_peak(&dm, t0 + 2000), 50);
	/* a burst spread out (a loaded client: 50 creates over 1.2 s, 25 ms
	 * apart) is still one burst of 50 */
	struct hu_pool_demand spread = {0};
	for (int i = 0; i < 50; i++)
		hu_pool_demand_note(&spread, t0 + i * 25, 0);
	assert_int_equal(hu_pool_demand_peak(&spread, t0 + 2000), 50);
	/* one gap of HU_POOL_BURST_MS ends it: two bursts of 25 */
	struct hu_pool_demand two = {0};
	for (int i = 0; i < 50; i++)
		hu_pool_demand_note(&two, t0 + i + (i >= 25 ? HU_POOL_BURST_MS : 0), 0);
	assert_int_equal(hu_pool_demand_peak(&two, t0 + 2000), 25);
	/* creates still being built carry the burst over a long gap (the loop
	 * read the next request late); without them the gap ends it */
	struct hu_pool_demand busy = {0};
	hu_pool_demand_note(&busy, t0, 0);
	hu_pool_demand_note(&busy, t0 + 400, 1);
	hu_pool_demand_note(&busy, t0 + 900, 1);
	assert_int_equal(hu_pool_demand_peak(&busy, t0 + 900), 3);
	hu_pool_demand_note(&busy, t0 + 1500, 0);
	hu_pool_demand_note(&busy, t0 + 1550, 0);
	assert_int_equal(hu_pool_demand_peak(&busy, t0 + 1550), 3);
	/* a clock that went back does not start a new burst nor count a long gap */
	struct hu_pool_demand back = {0};
	hu_pool_demand_note(&back, t0 + 50, 0);
	hu_pool_demand_note(&back, t0, 0);
	assert_int_equal(hu_pool_demand_peak(&back, t0 + 50), 2);
	/* a burst larger than HU_POOL_DEMAND_RECENT counts as that many */
	struct hu_pool_demand big = {0};
	for (int i = 0; i < 400; i++)
		hu_pool_demand_note(&big, t0, 0);
	assert_int_equal(hu_pool_demand_peak(&big, t0), HU_POOL_DEMAND_RECENT);
}

/* The target follows the peak between the configured size and pool.max,
 * and falls back once the peak leaves the five-minute window; the surplus
 * is what a shrink removes. */
static void test_retarget(void **state)
{
	struct hu_pool_set ps = {.template_id = "base", .floor = 2, .target = 2};
	int64_t t0 = 1700000000000;
	hu_err err;

	assert_int_equal(hu_pool_set_retarget(&ps, 64, t0), 2);
	for (int i = 0; i < 50; i++)
		hu_pool_demand_note(&ps.demand, t0 + i, 0);
	assert_int_equal(hu_pool_set_retarget(&ps, 64, t0 + 100), 50);
	assert_int_equal(hu_pool_set_missing(&ps), 50);
	assert_int_equal(hu_pool_set_retarget(&ps, 16, t0 + 100), 16); /* pool.max bounds it */
	assert_int_equal(hu_pool_set_retarget(&ps, 64, t0 + 4 * 60 * 1000), 50); /* still in the window */
	for (int i = 0; i < 10; i++)
		assert_int_equal(hu_pool_set_push(&ps, sbx("r", 512, 0), &err), 0);
	assert_int_equal(hu_pool_set_surplus(&ps), 0);
	int64_t later = t0 + (int64_t)HU_POOL_DEMAND_BUCKETS * HU_POOL_DEMAND_BUCKET_MS + HU_POOL_DEMAND_BUCKET_MS;
	assert_int_equal(hu_pool_set_retarget(&ps, 64, later), 2); /* demand fell: back to the floor */
	assert_int_equal(hu_pool_set_surplus(&ps), 8);
	assert_int_equal(hu_pool_set_missing(&ps), 0);
	/* a floor above pool.max: the configured size wins */
	ps.floor = 20;
	assert_int_equal(hu_pool_set_retarget(&ps, 8, later), 20);
	free_set(&ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_once),
		cmocka_unit_test(test_take_fits),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_demand_peak),
		cmocka_unit_test(test_retarget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
