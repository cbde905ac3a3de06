/*
 * The host's own memory pressure (src/daemon/sandboxes/host_pressure.c):
 * the decision from PSI readings, with readings shaped like those of a
 * cgroup v2 host (one tenant thrashing at its own limit, global reclaim,
 * both at once), and the PSI text parser (util/psi.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "daemon/sandboxes/host_pressure.h"
#include "util/psi.h"

#define THRESHOLD 10.0 /* pressure.psi_avg10's default */

static void test_one_tenant_at_its_own_limit_is_not_host_pressure(void **state)
{
	/* a 256 MiB sandbox running a memory hog: it stalls 61.8% of the
	 * time, which is nearly all of the host-wide 62.3% */
	const struct hu_sbx_psi v[] = {{61.8, 1}, {0.0, 0}, {0.4, 0}};
	double own = hu_host_own_psi(62.3, 61.8, v, 3);
	assert_true(62.3 > THRESHOLD);   /* what the daemon used to act on */
	assert_true(own < THRESHOLD);    /* the host itself is fine */
	assert_true(own >= 0);
}

static void test_global_reclaim_is_host_pressure(void **state)
{
	/* the host is short of memory: sandboxes far below their limits stall */
	const struct hu_sbx_psi v[] = {{30.2, 0}, {25.0, 0}, {0.2, 0}};
	assert_true(hu_host_own_psi(45.0, 40.1, v, 3) > THRESHOLD);
	assert_true(hu_host_own_psi(45.0, 40.1, v, 3) == 45.0);
}

static void test_thrashing_tenant_does_not_hide_global_reclaim(void **state)
{
	/* one tenant at its limit, and one below its limit stalling as well */
	const struct hu_sbx_psi v[] = {{70.0, 1}, {20.0, 0}};
	double own = hu_host_own_psi(80.0, 78.0, v, 2);
	assert_true(own > THRESHOLD); /* (80 - 70) / 30: a third of the rest */
	assert_true(own > 33.0 && own < 34.0);
}

static void test_several_self_limited_tenants_use_their_union(void **state)
{
	/* two hogs stalling at different times: their union is the parent's */
	const struct hu_sbx_psi v[] = {{30.0, 1}, {30.0, 1}};
	assert_true(hu_host_own_psi(56.0, 55.0, v, 2) < THRESHOLD);
	/* without the parent's reading, the largest is a lower bound that errs
	 * towards pressure */
	assert_true(hu_host_own_psi(56.0, -1, v, 2) > THRESHOLD);
}

static void test_edges(void **state)
{
	const struct hu_sbx_psi at[] = {{100.0, 1}};
	assert_true(hu_host_own_psi(-1, -1, NULL, 0) == -1); /* PSI off */
	assert_true(hu_host_own_psi(12.5, -1, NULL, 0) == 12.5); /* no sandboxes, or cgroup v1 */
	assert_true(hu_host_own_psi(100.0, 100.0, at, 1) == 0); /* nothing else visible */
	const struct hu_sbx_psi quiet[] = {{0.9, 1}}; /* below HU_PSI_STALL_MIN: not stalling */
	assert_true(hu_host_own_psi(20.0, 0.9, quiet, 1) == 20.0);
}

static void test_psi_text(void **state)
{
	/* as read on a test host's /proc/pressure/memory */
	assert_true(hu_psi_some_avg10("some avg10=0.00 avg60=0.00 avg300=0.00 total=3397932\n"
				      "full avg10=0.00 avg60=0.00 avg300=0.00 total=982914\n") == 0.0);
	assert_true(hu_psi_some_avg10("some avg10=61.80 avg60=40.10 avg300=12.00 total=99\n") == 61.80);
	assert_true(hu_psi_some_avg10("full avg10=5.00 avg60=0 avg300=0 total=1\n") == -1);
	assert_true(hu_psi_some_avg10("some avg10=-3 avg60=0\n") == -1);
	assert_true(hu_psi_some_avg10("some avg10=300.0\n") == -1);
	assert_true(hu_psi_some_avg10("") == -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_tenant_at_its_own_limit_is_not_host_pressure),
		cmocka_unit_test(test_global_reclaim_is_host_pressure),
		cmocka_unit_test(test_thrashing_tenant_does_not_hide_global_reclaim),
		cmocka_unit_test(test_several_self_limited_tenants_use_their_union),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_psi_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
