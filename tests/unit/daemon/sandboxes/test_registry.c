/* The registry's hash table: thousands of ids, removal in any order (the
 * backward-shift deletion must keep every other id findable), token lookup. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/registry.h"

#define N 5000

static struct hu_sbx *make(int i)
{
	struct hu_sbx *s = calloc(1, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "i%019d", i * 7919);
	snprintf(s->access_token, sizeof(s->access_token), "%064x", i + 1);
	return s;
}

static int count_cb(struct hu_sbx *s, void *arg)
{
	(*(size_t *)arg)++;
	return 0;
}

static void test_add_get_remove(void **state)
{
	struct hu_daemon d = {.base = event_base_new()};
	struct hu_registry *reg;
	static struct hu_sbx *all[N];
	char token[65];
	size_t seen = 0;
	hu_err err;

	assert_int_equal(hu_registry_new(&d, &reg, &err), 0);
	for (int i = 0; i < N; i++) {
		all[i] = make(i);
		assert_int_equal(hu_registry_add(reg, all[i], &err), 0);
	}
	assert_int_equal(hu_registry_add(reg, all[3], &err), -1); /* the same id twice */
	assert_int_equal(err.code, EEXIST);
	assert_int_equal(hu_registry_count(reg), N);
	hu_registry_each(reg, count_cb, &seen);
	assert_int_equal(seen, N);
	for (int i = 0; i < N; i++)
		assert_ptr_equal(hu_registry_get(reg, all[i]->id), all[i]);
	assert_null(hu_registry_get(reg, "inope"));

	snprintf(token, sizeof(token), "%064x", 42);
	assert_ptr_equal(hu_registry_by_token(reg, token), all[41]);
	assert_null(hu_registry_by_token(reg, ""));
	assert_null(hu_registry_by_token(reg, "0"));

	/* Remove every third, then check that all others are still found. */
	for (int i = 0; i < N; i += 3) {
		hu_registry_remove(reg, all[i]);
		hu_sbx_free(all[i]);
		all[i] = NULL;
	}
	for (int i = 0; i < N; i++) {
		snprintf(token, sizeof(token), "%064x", i + 1);
		if (all[i]) {
			assert_ptr_equal(hu_registry_get(reg, all[i]->id), all[i]);
			assert_ptr_equal(hu_registry_by_token(reg, token), all[i]);
		} else {
			assert_null(hu_registry_by_token(reg, token)); /* gone from the token index too */
		}
	}
	assert_int_equal(hu_registry_count(reg), N - (N + 2) / 3);
	hu_registry_free(reg); /* frees the rest */
	event_base_free(d.base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_get_remove),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
