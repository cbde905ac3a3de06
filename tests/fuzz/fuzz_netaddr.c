// fuzz-sources: src/runtime/netaddr.c src/runtime/netdomain.c
/*
 * libFuzzer driver for the network settings' parsers (src/runtime/netaddr.c):
 * the input, cut at newlines, is tried as a CIDR, as allowOut/denyOut lists
 * and as the operator's settings, and as a domain rule. What is accepted
 * must be canonical: a prefix re-formats and re-parses to itself, a domain
 * rule re-parses to itself and matches accordingly, and lists stay
 * bounded.
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
	if (rules.n_allow > HU_NET_RULES_MAX || rules.n_deny > HU_NET_RULES_MAX || rules.n_allow_dom > HU_NET_DOMAINS_MAX)
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
