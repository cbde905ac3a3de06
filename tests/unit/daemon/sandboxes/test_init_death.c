/* Why a hutch-init died, and the bounded record of it (src/daemon/sandboxes/init_death.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/init_death.h"

static void test_describe(void **state)
{
	char out[HU_DEATH_REASON_MAX];
	siginfo_t si = {.si_code = CLD_KILLED, .si_status = SIGKILL};

	hu_init_death_describe(&si, 1, out, sizeof(out));
	assert_string_equal(out, "hutch-init died: killed by SIGKILL (memory limit: 1 OOM kill in the sandbox)");
	hu_init_death_describe(&si, 0, out, sizeof(out));
	assert_string_equal(out, "hutch-init died: killed by SIGKILL");
	si = (siginfo_t){.si_code = CLD_DUMPED, .si_status = SIGSEGV};
	hu_init_death_describe(&si, 3, out, sizeof(out));
	assert_string_equal(out, "hutch-init died: killed by SIGSEGV (core) (memory limit: 3 OOM kills in the sandbox)");
	si = (siginfo_t){.si_code = CLD_EXITED, .si_status = 3};
	hu_init_death_describe(&si, 0, out, sizeof(out));
	assert_string_equal(out, "hutch-init died: exited with status 3");
	hu_init_death_describe(NULL, 0, out, sizeof(out));
	assert_string_equal(out, "hutch-init died: for an unknown reason");
}

static void test_record(void **state)
{
	struct hu_deaths *d = calloc(1, sizeof(*d));
	char id[32];

	hu_deaths_note(d, "sbx1", "team-a", "tok1", "hutch-init died: x", 1000);
	assert_string_equal(hu_deaths_find(d, "sbx1", "team-a", NULL, 2000), "hutch-init died: x");
	assert_null(hu_deaths_find(d, "sbx1", "team-b", NULL, 2000));        /* another team */
	assert_string_equal(hu_deaths_find(d, "sbx1", NULL, "tok1", 2000), "hutch-init died: x");
	assert_null(hu_deaths_find(d, "sbx1", NULL, "tok2", 2000));          /* a wrong token */
	assert_null(hu_deaths_find(d, "sbx1", NULL, NULL, 2000));            /* no token */
	assert_null(hu_deaths_find(d, "sbx1", "team-a", NULL, 1000 + HU_DEATH_KEEP_MS + 1)); /* forgotten */
	/* bounded: the oldest records give way */
	for (int i = 0; i < HU_DEATHS_MAX; i++) {
		snprintf(id, sizeof(id), "other%d", i);
		hu_deaths_note(d, id, "team-a", "t", "r", 3000);
	}
	assert_null(hu_deaths_find(d, "sbx1", "team-a", NULL, 3000));
	assert_string_equal(hu_deaths_find(d, "other0", "team-a", NULL, 3000), "r");
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_describe), cmocka_unit_test(test_record)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
