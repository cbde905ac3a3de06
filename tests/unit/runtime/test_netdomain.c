/* Domain rules: syntax, canonical form and matching
 * (src/runtime/netdomain.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "runtime/net.h"

static void test_parse_good(void **state)
{
	const char *in[][2] = {
		{"example.com", "example.com"},       {"Example.COM.", "example.com"},
		{"*.Example.com", "*.example.com"},   {"_dmarc.example.com", "_dmarc.example.com"},
		{"localhost", "localhost"},           {"a-b.c-d.test", "a-b.c-d.test"},
		{"1a.test", "1a.test"},               {"*.a.b.c.test.", "*.a.b.c.test"},
	};
	char out[HU_DOMAIN_MAX + 1];
	hu_err err;

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		assert_int_equal(hu_domain_rule_parse(in[i][0], out, &err), 0);
		assert_string_equal(out, in[i][1]);
	}
	/* the longest name: 253 characters */
	char name[300] = "";
	for (int i = 0; i < 4; i++)
		strcat(name, i ? ".aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			       : "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	strcat(name, ".aaa");
	assert_int_equal(strlen(name), 253);
	assert_int_equal(hu_domain_rule_parse(name, out, &err), 0);
	strcat(name, "a");
	assert_int_equal(hu_domain_rule_parse(name, out, &err), -1);
}

static void test_parse_bad(void **state)
{
	const char *bad[] = {"", ".", "..", "a..b", ".a.b", "-a.test", "a-.test", "a b.test", "a/b.test", "*.test", "*",
			     "*.", "**.a.test", "a.*.test", "a*.test", "*a.test", "1.2.3", "123", "é.test", "a.test..",
			     "a\\x.test", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.test"};
	char out[HU_DOMAIN_MAX + 1];
	hu_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (hu_domain_rule_parse(bad[i], out, &err) == 0)
			fail_msg("'%s' accepted as '%s'", bad[i], out);
		assert_int_equal(err.code, EINVAL);
	}
}

static void test_match(void **state)
{
	assert_true(hu_domain_match("example.com", "example.com"));
	assert_true(hu_domain_match("example.com", "EXAMPLE.com."));
	assert_false(hu_domain_match("example.com", "www.example.com"));
	assert_false(hu_domain_match("example.com", "example.co"));
	assert_false(hu_domain_match("example.com", "xexample.com"));
	assert_false(hu_domain_match("example.com", ""));
	assert_true(hu_domain_match("*.example.com", "www.example.com"));
	assert_true(hu_domain_match("*.example.com", "a.b.Example.Com."));
	assert_false(hu_domain_match("*.example.com", "example.com"));
	assert_false(hu_domain_match("*.example.com", ".example.com"));
	assert_false(hu_domain_match("*.example.com", "wwwexample.com"));
	assert_false(hu_domain_match("*.example.com", "example.com.evil.test"));
}

static void test_rules(void **state)
{
	struct hu_net_rules r;
	hu_err err;

	memset(&r, 0, sizeof(r));
	assert_int_equal(hu_net_rules_add(&r, 'a', "*.wild.test", &err), 0);
	assert_int_equal(hu_net_rules_add(&r, 'a', "allowed.test", &err), 0);
	assert_int_equal(hu_net_rules_check(&r, &err), -1); /* names need denyOut all */
	assert_false(hu_net_rules_allowlist(&r));
	assert_int_equal(hu_net_rules_add(&r, 'd', "10.0.0.0/8", &err), 0);
	assert_false(hu_net_rules_allowlist(&r));
	assert_int_equal(hu_net_rules_add(&r, 'd', "0.0.0.0/0", &err), 0);
	assert_true(hu_net_rules_allowlist(&r));
	assert_int_equal(hu_net_rules_check(&r, &err), 0);
	assert_true(hu_net_rules_match_name(&r, "a.wild.test"));
	assert_true(hu_net_rules_match_name(&r, "allowed.test"));
	assert_false(hu_net_rules_match_name(&r, "wild.test"));
	assert_false(hu_net_rules_match_name(&r, "secret.attacker.test"));
}

static void test_operator_lists(void **state)
{
	struct hu_net_config c;
	hu_err err;

	/* the operator's exceptions are addresses, never names */
	assert_int_equal(hu_net_config_parse(&c, "nat", "hutch", "10.200.0.0/17", "192.0.2.1", "", "example.com", "", &err),
			 -1);
	assert_int_equal(hu_net_config_parse(&c, "nat", "hutch", "10.200.0.0/17", "192.0.2.1", "", "", "example.com", &err),
			 -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good), cmocka_unit_test(test_parse_bad), cmocka_unit_test(test_match),
		cmocka_unit_test(test_rules),      cmocka_unit_test(test_operator_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
