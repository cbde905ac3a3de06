/* The built-in denials (src/runtime/netdeny.c): every well-known cloud
 * metadata address is in them, in each form a sandbox could use for it;
 * ordinary public addresses are not. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <string.h>

#include "runtime/net.h"

static int denied4(const char *a)
{
	struct in_addr in;
	if (inet_pton(AF_INET, a, &in) != 1)
		fail_msg("bad test address %s", a);
	return hu_net_builtin_denied4(ntohl(in.s_addr));
}

static int denied6(const char *a)
{
	uint8_t b[16];
	if (inet_pton(AF_INET6, a, b) != 1)
		fail_msg("bad test address %s", a);
	return hu_net_builtin_denied6(b);
}

static void test_lists_parse(void **state)
{
	struct hu_cidr4 c4;
	struct hu_cidr6 c6;
	hu_err err;

	for (size_t i = 0; i < hu_net_builtin_deny4_len; i++)
		if (hu_cidr4_parse(hu_net_builtin_deny4[i], &c4, &err) < 0)
			fail_msg("%s: %s", hu_net_builtin_deny4[i], err.msg);
	for (size_t i = 0; i < hu_net_builtin_deny6_len; i++)
		if (hu_cidr6_parse(hu_net_builtin_deny6[i], &c6, &err) < 0)
			fail_msg("%s: %s", hu_net_builtin_deny6[i], err.msg);
}

static void test_metadata_ipv4(void **state)
{
	static const char *const meta[] = {
		"169.254.169.254", /* AWS, GCP, Azure IMDS, OpenStack, Oracle, DigitalOcean, ... */
		"169.254.169.253", /* AWS DNS */
		"169.254.169.123", /* AWS time */
		"169.254.170.2",   /* AWS ECS task metadata */
		"169.254.0.23",    /* Tencent Cloud */
		"169.254.42.42",   /* Scaleway */
		"100.100.100.200", /* Alibaba Cloud */
		"168.63.129.16",   /* Azure wire server */
		"192.0.0.192",     /* Oracle Cloud Classic */
	};
	for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++)
		if (denied4(meta[i]) != 1)
			fail_msg("%s is not denied", meta[i]);
}

static void test_metadata_ipv6(void **state)
{
	static const char *const meta[] = {
		"fd00:ec2::254",        /* AWS IMDS */
		"fd00:ec2::253",        /* AWS DNS */
		"fd20:ce::254",         /* GCP metadata */
		"fd00:42::42",          /* Scaleway */
		"::ffff:169.254.169.254", /* IPv4-mapped forms */
		"::ffff:168.63.129.16",
		"::ffff:100.100.100.200",
		"64:ff9b::a9fe:a9fe",   /* NAT64 of 169.254.169.254 */
		"64:ff9b::a83f:8110",   /* NAT64 of 168.63.129.16 */
		"2002:a83f:8110::1",    /* 6to4 of 168.63.129.16 */
		"2001:0:a83f:8110::1",  /* Teredo */
		"::a83f:8110",          /* IPv4-compatible */
	};
	for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++)
		if (denied6(meta[i]) != 1)
			fail_msg("%s is not denied", meta[i]);
}

/* The list denies what it names and no more: Azure's neighbours, public
 * resolvers, the TEST-NETs and the IPv6 documentation prefix the network
 * tests use as their internet stay reachable. */
static void test_public_stays_open(void **state)
{
	static const char *const open4[] = { "168.63.129.15", "168.63.129.17", "8.8.8.8", "1.1.1.1",
					     "100.128.0.1", "169.255.0.1", "198.51.100.10", "203.0.113.1",
					     "223.255.255.255" };
	static const char *const open6[] = { "2606:4700:4700::1111", "2001:4860:4860::8888", "3fff::1",
					     "2a00:1450::1", "fe00::1" };
	for (size_t i = 0; i < sizeof(open4) / sizeof(open4[0]); i++)
		if (denied4(open4[i]) != 0)
			fail_msg("%s is denied", open4[i]);
	for (size_t i = 0; i < sizeof(open6) / sizeof(open6[0]); i++)
		if (denied6(open6[i]) != 0)
			fail_msg("%s is denied", open6[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists_parse),
		cmocka_unit_test(test_metadata_ipv4),
		cmocka_unit_test(test_metadata_ipv6),
		cmocka_unit_test(test_public_stays_open),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
