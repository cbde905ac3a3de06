/* How many sandboxes a host admits, and what binds (host_capacity.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "daemon/sandboxes/host_capacity.h"

#define GIB (1024ull * 1024ull * 1024ull)

/* This VM's figures: pid_max 32768 and 512 pids each admit 56 running
 * sandboxes (the figure the old rule applied to paused ones too); paused
 * ones are bound by max_sandboxes; pid_max 4194304 moves the bound to memory. */
static void test_defaults(void **state)
{
	struct hu_config cfg;
	struct hu_host_figures h = {.mem_total = 24 * GIB, .pid_max = 32768, .cpus = 2, .fd_allowed = UINT64_MAX};
	struct hu_admits a;

	hu_config_defaults(&cfg);
	assert_int_equal(hu_pids_budget(&cfg, 32768), 28672);
	assert_int_equal(hu_mem_reserve(&cfg, 24 * GIB), 24 * GIB / 10);
	hu_admits_estimate(&cfg, &h, &a);
	assert_int_equal(a.running, 56);
	assert_non_null(strstr(a.running_raise, "kernel.pid_max is 32768"));
	/* frozen ones hold real memory: (24 GiB - 10%) / 32 MiB */
	assert_int_equal(a.paused, 691);
	assert_non_null(strstr(a.paused_raise, "memory"));

	h.pid_max = 4194304;
	hu_admits_estimate(&cfg, &h, &a);
	assert_int_equal(a.running, hu_mem_budget(&cfg, 24 * GIB) / (512ull << 20));
	assert_non_null(strstr(a.running_raise, "memory"));

	cfg.max_sandboxes = 0;
	h.fd_allowed = 430;
	hu_admits_estimate(&cfg, &h, &a);
	assert_int_equal(a.running, 172);
	assert_int_equal(a.paused, 430);
	assert_non_null(strstr(a.paused_raise, "RLIMIT_NOFILE"));
	h.fd_allowed = UINT64_MAX;
	hu_admits_estimate(&cfg, &h, &a);
	assert_int_equal(a.paused, hu_mem_budget(&cfg, 24 * GIB) / 4 / HU_FROZEN_TYPICAL_MEM);
	cfg.max_sandboxes = 500;
	hu_admits_estimate(&cfg, &h, &a);
	assert_int_equal(a.paused, 500);
	assert_string_equal(a.paused_raise, "max_sandboxes");
}

/* A tiny host: nothing fits, and the figures say 0 rather than wrapping. */
static void test_tiny(void **state)
{
	struct hu_config cfg;
	struct hu_host_figures h = {.mem_total = 256ull << 20, .pid_max = 4000, .cpus = 1, .fd_allowed = UINT64_MAX};
	struct hu_admits a;

	hu_config_defaults(&cfg);
	hu_admits_estimate(&cfg, &h, &a);
	assert_int_equal(a.running, 0);
	assert_int_equal(a.paused, 0);
	assert_int_equal(hu_mem_budget(&cfg, 256ull << 20), 0);
	/* a CPU budget, when set, binds too */
	h = (struct hu_host_figures){.mem_total = 24 * GIB, .pid_max = 4194304, .cpus = 2, .fd_allowed = UINT64_MAX};
	cfg.admission_cpu_overcommit = 2;
	hu_admits_estimate(&cfg, &h, &a);
	assert_int_equal(a.running, 4);
	assert_non_null(strstr(a.running_raise, "CPU"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_tiny),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
