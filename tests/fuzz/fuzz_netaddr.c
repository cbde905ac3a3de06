// fuzz-sources: src/runtime/netaddr.c src/runtime/netaddr6.c src/runtime/netdomain.c
/*
 * libFuzzer driver for the network settings' parsers (src/runtime/netaddr.c):
 * the input, cut at newlines, is tried as a CIDR, as allowOut/denyOut lists
 * and as the operator's settings, and as a domain rule. What is accepted
 * must be canonical: a prefix (IPv4 or IPv6) re-formats and re-parses to
 * itself, a domain rule re-parses to itself and matches accordingly, lists
 * stay bounded, and an IPv6 pool's slot addresses are a /127 inside it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *f[7] = {0};
	struct hu_net_rules rules;
	struct hu_net_config cfg;
	struct hu_cidr4 c, c2;
	char buf[24];
	hu_err err;
	int n = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	struct hu_cidr6 c6, c62;
	char buf6[HU_CIDR6_TEXT];
	if (hu_cidr6_parse(text, &c6, &err) == 0) {
		for (unsigned b = c6.len; b < 128; b++)
			if (c6.addr[b / 8] & (0x80 >> (b % 8)))
				abort(); /* not masked */
		hu_cidr6_format(&c6, buf6, sizeof(buf6));
		if (hu_cidr6_parse(buf6, &c62, &err) < 0 || memcmp(&c6, &c62, sizeof(c6)))
			abort();
	}
	memset(&cfg, 0, sizeof(cfg));
	if (hu_net_pool6_parse(&cfg, text, &err) == 0 && cfg.has_pool6) {
		uint8_t gw6[16], a6[16];
		if (cfg.pool6.len > 126 || hu_net6_slot_addrs(&cfg, 0, gw6, a6, &err) < 0 ||
		    memcmp(gw6, cfg.pool6.addr, 16) || a6[15] != (gw6[15] | 1))
			abort();
	}
	if (hu_cidr4_parse(text, &c, &err) == 0) {
		if (c.len > 32 || (c.len < 32 && (c.addr & (0xffffffffu >> c.len))))
			abort();
		hu_cidr4_format(&c, buf, sizeof(buf));
		if (hu_cidr4_parse(buf, &c2, &err) < 0 || c2.addr != c.addr || c2.len != c.len)
			abort();
	}
	char dom[HU_DOMAIN_MAX + 1], dom2[HU_DOMAIN_MAX + 1];
	if (hu_domain_rule_parse(text, dom, &err) == 0) {
		if (hu_domain_rule_parse(dom, dom2, &err) < 0 || strcmp(dom, dom2))
			abort();
		/* a plain rule matches itself; a wildcard matches a name below
		 * it and not its base */
		if (dom[0] != '*' && !hu_domain_match(dom, dom))
			abort();
		if (dom[0] == '*' && (hu_domain_match(dom, dom + 2) || !hu_domain_match(dom, dom)))
			abort();
	}
	memset(&rules, 0, sizeof(rules));
	hu_net_rules_add_list(&rules, 'a', text, &err);
	hu_net_rules_add_list(&rules, 'd', text, &err);
	if (rules.n_allow > HU_NET_RULES_MAX || rules.n_deny > HU_NET_RULES_MAX || rules.n_allow6 > HU_NET_RULES_MAX ||
	    rules.n_deny6 > HU_NET_RULES_MAX || rules.n_allow_dom > HU_NET_DOMAINS_MAX)
		abort();
	for (char *s = text; s && n < 7; n++) {
		f[n] = s;
		s = strchr(s, '\n');
		if (s)
			*s++ = '\0';
	}
	for (int i = n; i < 7; i++)
		f[i] = "";
	if (hu_net_config_parse(&cfg, f[0], f[1], f[2], f[3], f[4], f[5], f[6], &err) == 0) {
		if (cfg.pool.len > 30 || cfg.n_uplinks > 4 || strlen(cfg.name) > HU_NET_NAME_MAX)
			abort();
		uint32_t gw, addr;
		if (hu_net_slot_addrs(&cfg, 0, &gw, &addr, &err) < 0 || addr != gw + 1)
			abort();
	}
	free(text);
	return 0;
}
