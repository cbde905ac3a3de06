/* IPv4 prefixes, rule lists, network settings and per-slot addresses
 * (src/runtime/netaddr.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "runtime/net.h"

static void test_cidr_parse(void **state)
{
	struct hu_cidr4 c;
	char buf[24];
	hu_err err;

	assert_int_equal(hu_cidr4_parse("198.51.100.7", &c, &err), 0);
	assert_int_equal(c.addr, 0xc6336407u);
	assert_int_equal(c.len, 32);
	assert_int_equal(hu_cidr4_parse("10.1.2.3/8", &c, &err), 0);
	assert_int_equal(c.addr, 0x0a000000u); /* masked to the prefix */
	assert_int_equal(c.len, 8);
	hu_cidr4_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "10.0.0.0/8");
	assert_int_equal(hu_cidr4_parse("0.0.0.0/0", &c, &err), 0);
	assert_int_equal(c.addr, 0);
	assert_int_equal(c.len, 0);
	assert_int_equal(hu_cidr4_parse("255.255.255.255/32", &c, &err), 0);
	assert_int_equal(c.addr, 0xffffffffu);
}

static void test_cidr_bad(void **state)
{
	const char *bad[] = {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4/33", "1.2.3.4/", "01.2.3.4",
			     "1.2.3.4/08", " 1.2.3.4", "1.2.3.4 ", "1..2.3", "1.2.3.4/-1", "1.2.3.-4", "1.2.3.4/1a",
			     "1234.1.1.1", "1.2.3.4//8"};
	struct hu_cidr4 c;
	hu_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(hu_cidr4_parse(bad[i], &c, &err), -1);
		assert_int_equal(err.code, EINVAL);
	}
}

static void test_rules(void **state)
{
	struct hu_net_rules r;
	hu_err err;

	memset(&r, 0, sizeof(r));
	assert_int_equal(hu_net_rules_add_list(&r, 'd', "0.0.0.0/0", &err), 0);
	assert_int_equal(hu_net_rules_add_list(&r, 'a', "198.51.100.10, 203.0.113.0/24,,", &err), 0);
	assert_int_equal(r.n_deny, 1);
	assert_int_equal(r.n_allow, 2);
	assert_int_equal(r.allow[1].len, 24);
	/* domain names: allowOut only; refused entries add nothing */
	assert_int_equal(hu_net_rules_add(&r, 'd', "example.com", &err), -1);
	assert_non_null(strstr(err.msg, "allowOut only"));
	assert_int_equal(hu_net_rules_add(&r, 'a', "a..com", &err), -1);
	assert_int_equal(r.n_allow_dom, 0);
	assert_int_equal(hu_net_rules_add(&r, 'a', "Example.COM.", &err), 0);
	assert_int_equal(r.n_allow_dom, 1);
	assert_string_equal(hu_net_rules_domain(&r, 0), "example.com");
	/* IPv6 goes to lists of its own */
	assert_int_equal(hu_net_rules_add(&r, 'd', "::/0", &err), 0);
	assert_int_equal(hu_net_rules_add_list(&r, 'a', "3fff:0:100::10, 2001:db8::/48", &err), 0);
	assert_int_equal(r.n_deny6, 1);
	assert_int_equal(r.n_allow6, 2);
	assert_int_equal(r.allow6[1].len, 48);
	assert_int_equal(hu_net_rules_add(&r, 'a', "3fff::/129", &err), -1);
	assert_non_null(strstr(err.msg, "allowOut"));
	assert_int_equal(hu_net_rules_add(&r, 'a', "fe80::1%eth0", &err), -1);
	assert_int_equal(r.n_allow6, 2);
	assert_int_equal(hu_net_rules_any(&r), 1);
	assert_int_equal(hu_net_rules_add(&r, 'd', "1.2.3.4/40", &err), -1);
	assert_non_null(strstr(err.msg, "denyOut"));
	assert_int_equal(r.n_allow, 2);
	assert_int_equal(r.n_deny, 1);
	/* bounded */
	for (int i = 1; i < HU_NET_RULES_MAX; i++)
		assert_int_equal(hu_net_rules_add(&r, 'd', "1.1.1.1", &err), 0);
	assert_int_equal(hu_net_rules_add(&r, 'd', "1.1.1.1", &err), -1);
	assert_int_equal(r.n_deny, HU_NET_RULES_MAX);
	r.n_allow_dom = r.allow_dom_used = 0;
	for (int i = 0; i < HU_NET_DOMAINS_MAX; i++)
		assert_int_equal(hu_net_rules_add(&r, 'a', "a.test", &err), 0);
	assert_int_equal(hu_net_rules_add(&r, 'a', "a.test", &err), -1);
	assert_non_null(strstr(err.msg, "domain names"));
	assert_int_equal(r.n_allow_dom, HU_NET_DOMAINS_MAX);
	assert_string_equal(hu_net_rules_domain(&r, HU_NET_DOMAINS_MAX - 1), "a.test");
	/* the names' text is bounded too: 17 names of 250 characters fill it */
	char lng[251];
	memset(lng, 'a', 250);
	lng[250] = '\0';
	for (int i = 1; i < 250; i += 62)
		lng[i] = '.';
	r.n_allow_dom = r.allow_dom_used = 0;
	for (int i = 0; i < HU_NET_DOMAINS_TEXT / 251; i++)
		assert_int_equal(hu_net_rules_add(&r, 'a', lng, &err), 0);
	assert_int_equal(hu_net_rules_add(&r, 'a', lng, &err), -1);
	assert_true(r.allow_dom_used <= HU_NET_DOMAINS_TEXT);
}

static void test_cidr6(void **state)
{
	const char *bad[] = {"", ":", ":::", "1::2::3", "3fff::/", "3fff::/129", "3fff::/08", "3fff::/-1", " ::1",
			     "::1 ", "[::1]", "fe80::1%eth0", "3fff::/64/1", "12345::", "::ffff:1.2.3", "3fff::/1a"};
	struct hu_cidr6 c;
	char buf[HU_CIDR6_TEXT];
	hu_err err;

	assert_int_equal(hu_cidr6_parse("3fff:0:100::10", &c, &err), 0);
	assert_int_equal(c.len, 128);
	assert_int_equal(c.addr[0], 0x3f);
	assert_int_equal(c.addr[15], 0x10);
	/* masked to the prefix, formatted canonically */
	assert_int_equal(hu_cidr6_parse("2001:DB8:0:0:1::ff/33", &c, &err), 0);
	hu_cidr6_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "2001:db8::/33");
	assert_int_equal(hu_cidr6_parse("2001:db8:ffff::/33", &c, &err), 0);
	hu_cidr6_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "2001:db8:8000::/33");
	assert_int_equal(hu_cidr6_parse("::/0", &c, &err), 0);
	assert_int_equal(c.len, 0);
	assert_int_equal(hu_cidr6_parse("::ffff:10.1.2.3/128", &c, &err), 0);
	assert_int_equal(c.addr[12], 10);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(hu_cidr6_parse(bad[i], &c, &err), -1);
		assert_int_equal(err.code, EINVAL);
	}
}

static void test_pool6(void **state)
{
	struct hu_net_config c;
	uint8_t gw[16], addr[16];
	hu_err err;

	memset(&c, 0, sizeof(c));
	assert_int_equal(hu_net_pool6_parse(&c, "none", &err), 0);
	assert_int_equal(c.has_pool6, 0);
	assert_int_equal(hu_net6_slot_addrs(&c, 0, gw, addr, &err), -1);
	assert_int_equal(hu_net_pool6_parse(&c, "3fff::/126", &err), 0);
	assert_int_equal(hu_net_pool6_parse(&c, "3fff::/127", &err), -1);
	assert_int_equal(hu_net_pool6_parse(&c, "10.0.0.0/8", &err), -1);
	assert_non_null(strstr(err.msg, "pool6"));
	assert_int_equal(hu_net_pool6_parse(&c, HU_NET_POOL6_DEFAULT, &err), 0);
	assert_int_equal(c.has_pool6, 1);
	assert_int_equal(c.pool6.len, 64);
	/* a /127 per slot: gateway even, sandbox odd; carries across bytes */
	assert_int_equal(hu_net6_slot_addrs(&c, 0, gw, addr, &err), 0);
	assert_int_equal(gw[15], 0);
	assert_int_equal(addr[15], 1);
	assert_int_equal(hu_net6_slot_addrs(&c, 16383, gw, addr, &err), 0);
	assert_int_equal(gw[14], 0x7f);
	assert_int_equal(gw[15], 0xfe);
	assert_int_equal(addr[15], 0xff);
	assert_memory_equal(gw, c.pool6.addr, 14);
	/* a small pool holds only the slots that fit */
	assert_int_equal(hu_net_pool6_parse(&c, "3fff::/120", &err), 0);
	assert_int_equal(hu_net6_slot_addrs(&c, 127, gw, addr, &err), 0);
	assert_int_equal(addr[15], 0xff);
	assert_int_equal(hu_net6_slot_addrs(&c, 128, gw, addr, &err), -1);
}

static void test_config(void **state)
{
	struct hu_net_config c;
	hu_err err;

	assert_int_equal(hu_net_config_parse(&c, "nat", "hutch", "10.200.0.0/17", "198.51.100.53", "eth1, eth2",
					     "10.9.0.0/16", "", &err), 0);
	assert_int_equal(c.mode, HU_NET_NAT);
	assert_int_equal(c.resolver, 0xc6336435u);
	assert_int_equal(c.n_uplinks, 2);
	assert_string_equal(c.uplinks[1], "eth2");
	assert_int_equal(c.op.n_allow, 1);
	assert_int_equal(hu_net_config_parse(&c, "nat", "hutch", "10.200.0.0/17", "1.1.1.1", "", "", "192.0.2.0/24", &err), 0);
	assert_int_equal(c.op.n_deny, 1);
	assert_int_equal(hu_net_config_parse(&c, "nat", "hutch", "10.200.0.0/17", "1.1.1.1", "", "", "lan", &err), -1);
	assert_non_null(strstr(err.msg, "network deny"));
	assert_int_equal(hu_net_config_parse(&c, "bridge", "hutch", "10.200.0.0/17", "", "", "", "", &err), -1);
	assert_int_equal(hu_net_config_parse(&c, "nat", "Hutch", "10.200.0.0/17", "", "", "", "", &err), -1);
	assert_int_equal(hu_net_config_parse(&c, "nat", "abcdefghij", "10.200.0.0/17", "", "", "", "", &err), -1);
	assert_int_equal(hu_net_config_parse(&c, "nat", "hutch", "10.200.0.0/31", "", "", "", "", &err), -1);
	assert_int_equal(hu_net_config_parse(&c, "nat", "hutch", "10.200.0.0/17", "10.0.0.0/8", "", "", "", &err), -1);
	assert_non_null(strstr(err.msg, "resolver"));
	assert_int_equal(hu_net_config_parse(&c, "nat", "hutch", "10.200.0.0/17", "127.0.0.53", "", "", "", &err), -1);
	assert_non_null(strstr(err.msg, "loopback"));
	assert_int_equal(hu_net_config_parse(&c, "nat", "hutch", "10.200.0.0/17", "", "a,b,c,d,e", "", "", &err), -1);
}

static void test_slot_addrs(void **state)
{
	struct hu_net_config c;
	char name[IF_NAMESIZE];
	uint32_t gw, addr;
	hu_err err;

	assert_int_equal(hu_net_config_parse(&c, "nat", "hutch", "10.200.0.0/17", "1.1.1.1", "", "", "", &err), 0);
	assert_int_equal(hu_net_slot_addrs(&c, 0, &gw, &addr, &err), 0);
	assert_int_equal(gw, 0x0ac80000u);
	assert_int_equal(addr, 0x0ac80001u);
	/* the last of 16384 slots still fits a /17; two slots never share */
	assert_int_equal(hu_net_slot_addrs(&c, 16383, &gw, &addr, &err), 0);
	assert_int_equal(addr, 0x0ac87fffu);
	assert_int_equal(hu_net_slot_addrs(&c, 16384, &gw, &addr, &err), -1);
	hu_net_ifname(&c, 16383, name);
	assert_string_equal(name, "hutch-16383");
	/* the longest name still leaves room for every slot number */
	assert_int_equal(hu_net_config_parse(&c, "nat", "abcdefghi", "10.200.0.0/17", "1.1.1.1", "", "", "", &err), 0);
	hu_net_ifname(&c, 16383, name);
	assert_string_equal(name, "abcdefghi-16383");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cidr_parse), cmocka_unit_test(test_cidr_bad), cmocka_unit_test(test_cidr6),
		cmocka_unit_test(test_pool6),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_config),     cmocka_unit_test(test_slot_addrs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
