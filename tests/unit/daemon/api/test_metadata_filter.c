/* The E2B metadata list filter: decoding and matching. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "daemon/api/metadata_filter.h"

static json_t *parse_ok(const char *v)
{
	json_t *f = NULL;
	hu_err err;
	assert_int_equal(hu_metadata_filter_parse(v, &f, &err), 0);
	assert_non_null(f);
	return f;
}

static void parse_bad(const char *v, const char *msg_part)
{
	json_t *f = (json_t *)1;
	hu_err err;
	assert_int_equal(hu_metadata_filter_parse(v, &f, &err), -1);
	assert_null(f);
	assert_int_equal(err.code, EINVAL);
	assert_non_null(strstr(err.msg, msg_part));
}

/* e2b-wire.md: {user:'alice','a b':'c&d'} arrives, after the HTTP layer's
 * query decoding, as user=alice&a%2520b=c%2526d. */
static void test_wire_example(void **state)
{
	json_t *f = parse_ok("user=alice&a%2520b=c%2526d");
	assert_int_equal(json_object_size(f), 2);
	assert_string_equal(json_string_value(json_object_get(f, "user")), "alice");
	assert_string_equal(json_string_value(json_object_get(f, "a b")), "c&d");

	json_t *md = json_pack("{s:s, s:s, s:s}", "user", "alice", "a b", "c&d", "other", "x");
	assert_true(hu_metadata_filter_match(f, md));
	json_object_set_new(md, "a b", json_string("c"));
	assert_false(hu_metadata_filter_match(f, md));
	json_object_del(md, "a b");
	assert_false(hu_metadata_filter_match(f, md));
	json_decref(md);
	json_decref(f);
}

static void test_empty_is_no_filter(void **state)
{
	json_t *f = parse_ok("");
	json_t *md = json_object();
	assert_int_equal(json_object_size(f), 0);
	assert_true(hu_metadata_filter_match(f, md));
	json_decref(md);
	json_decref(f);
	/* Empty segments are skipped, as form decoders do. */
	f = parse_ok("&a=1&&");
	assert_int_equal(json_object_size(f), 1);
	json_decref(f);
}

static void test_plain_and_empty_value(void **state)
{
	json_t *f = parse_ok("app=prod&empty=&sp=a+b");
	assert_string_equal(json_string_value(json_object_get(f, "app")), "prod");
	assert_string_equal(json_string_value(json_object_get(f, "empty")), "");
	assert_string_equal(json_string_value(json_object_get(f, "sp")), "a b");
	json_decref(f);
	/* An '=' inside a value, escaped once more, stays in the value. */
	f = parse_ok("k=a%253Db");
	assert_string_equal(json_string_value(json_object_get(f, "k")), "a=b");
	json_decref(f);
}

static void test_malformed_escapes(void **state)
{
	parse_bad("a=%zz", "%-escape");
	parse_bad("a=%4", "%-escape");
	parse_bad("a=%", "%-escape");
	parse_bad("a=%25zz", "%-escape");   /* bad at the second level */
	parse_bad("a=%2500", "%-escape");   /* NUL */
	parse_bad("a=%00", "%-escape");
}

static void test_missing_equals_and_empty_key(void **state)
{
	parse_bad("user", "not key=value");
	parse_bad("a=1&b", "not key=value");
	parse_bad("=x", "empty key");
}

static void test_duplicate_keys(void **state)
{
	parse_bad("a=1&a=2", "twice");
	parse_bad("a=1&a=1", "twice");
	parse_bad("a%2520b=1&a+b=2", "twice"); /* same key after decoding */
}

static void test_invalid_utf8(void **state)
{
	parse_bad("k=%25ff", "UTF-8");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_example),
		cmocka_unit_test(test_empty_is_no_filter),
		cmocka_unit_test(test_plain_and_empty_value),
		cmocka_unit_test(test_malformed_escapes),
		cmocka_unit_test(test_missing_equals_and_empty_key),
		cmocka_unit_test(test_duplicate_keys),
		cmocka_unit_test(test_invalid_utf8),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
