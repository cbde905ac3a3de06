/*
 * Network addresses and settings: IPv4 prefixes, rule lists, the operator's
 * configuration, and the per-slot addresses. Pure functions apart from
 * reading /etc/resolv.conf for the default resolver.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "runtime/net.h"
#include "runtime/runtime_internal.h"
#include "util/cleanup.h"
#include "util/parse.h"

static uint32_t mask_of(uint8_t len)
{
	return len == 0 ? 0 : 0xffffffffu << (32 - len);
}

/* A decimal octet or prefix length: 1-3 digits, no leading zero (so "010"
 * never means eight to one reader and ten to another). */
static int parse_dec(const char **p, unsigned max, unsigned *out)
{
	const char *s = *p;
	unsigned v = 0, n = 0;

	while (s[n] >= '0' && s[n] <= '9' && n < 4)
		v = v * 10 + (unsigned)(s[n++] - '0');
	if (n == 0 || n > 3 || (n > 1 && s[0] == '0') || v > max)
		return -1;
	*p = s + n;
	*out = v;
	return 0;
}

int hu_cidr4_parse(const char *s, struct hu_cidr4 *out, hu_err *err)
{
	const char *p = s;
	uint32_t addr = 0;
	unsigned v, len = 32;

	for (int i = 0; i < 4; i++) {
		if (parse_dec(&p, 255, &v) < 0 || (i < 3 && *p++ != '.'))
			return hu_err_set(err, -EINVAL, "'%.64s' is not an IPv4 address or CIDR", s);
		addr = addr << 8 | v;
	}
	if (*p == '/') {
		p++;
		if (parse_dec(&p, 32, &len) < 0)
			return hu_err_set(err, -EINVAL, "'%.64s': bad prefix length", s);
	}
	if (*p != '\0')
		return hu_err_set(err, -EINVAL, "'%.64s' is not an IPv4 address or CIDR", s);
	out->len = (uint8_t)len;
	out->addr = addr & mask_of(out->len);
	return 0;
}

void hu_cidr4_format(const struct hu_cidr4 *c, char *buf, size_t n)
{
	snprintf(buf, n, "%u.%u.%u.%u/%u", c->addr >> 24, (c->addr >> 16) & 255, (c->addr >> 8) & 255, c->addr & 255,
		 c->len);
}

/* Whether an entry looks like a domain name rather than a malformed address:
 * it holds a letter. */
static int looks_like_domain(const char *s)
{
	for (; *s; s++)
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))
			return 1;
	return 0;
}

/* An IPv6 entry: into the IPv6 list of the same kind. */
static int rules_add6(struct hu_net_rules *rules, char which, const char *name, const char *entry, hu_err *err)
{
	unsigned *n = which == 'a' ? &rules->n_allow6 : &rules->n_deny6;
	struct hu_cidr6 *list = which == 'a' ? rules->allow6 : rules->deny6;
	struct hu_cidr6 c;

	if (hu_cidr6_parse(entry, &c, err) < 0) {
		hu_err_prefix(err, "%s", name);
		return -1;
	}
	if (*n >= HU_NET_RULES_MAX)
		return hu_err_set(err, -EINVAL, "%s: more than %d IPv6 entries", name, HU_NET_RULES_MAX);
	list[(*n)++] = c;
	return 0;
}

int hu_net_rules_add(struct hu_net_rules *rules, char which, const char *entry, hu_err *err)
{
	unsigned *n = which == 'a' ? &rules->n_allow : &rules->n_deny;
	struct hu_cidr4 *list = which == 'a' ? rules->allow : rules->deny;
	const char *name = which == 'a' ? "allowOut" : "denyOut";
	struct hu_cidr4 c;

	if (strchr(entry, ':'))
		return rules_add6(rules, which, name, entry, err);
	if (looks_like_domain(entry) && !strchr(entry, '/')) {
		/* as in E2B: names only in allowOut (a name in denyOut could be
		 * dodged by any other name for the same address) */
		if (which != 'a')
			return hu_err_set(err, -EINVAL, "%s: '%.64s': domain names are supported in allowOut only, "
							"use IPs or CIDRs", name, entry);
		char dom[HU_DOMAIN_MAX + 1];
		if (hu_domain_rule_parse(entry, dom, err) < 0) {
			hu_err_prefix(err, "%s", name);
			return -1;
		}
		size_t len = strlen(dom) + 1;
		if (rules->n_allow_dom >= HU_NET_DOMAINS_MAX || rules->allow_dom_used + len > HU_NET_DOMAINS_TEXT)
			return hu_err_set(err, -EINVAL, "%s: more than %d domain names or %d characters of them", name,
					  HU_NET_DOMAINS_MAX, HU_NET_DOMAINS_TEXT);
		rules->allow_dom_at[rules->n_allow_dom++] = rules->allow_dom_used;
		memcpy(rules->allow_dom_text + rules->allow_dom_used, dom, len);
		rules->allow_dom_used = (uint16_t)(rules->allow_dom_used + len);
		return 0;
	}
	if (hu_cidr4_parse(entry, &c, err) < 0) {
		hu_err_prefix(err, "%s", name);
		return -1;
	}
	if (*n >= HU_NET_RULES_MAX)
		return hu_err_set(err, -EINVAL, "%s: more than %d entries", name, HU_NET_RULES_MAX);
	list[(*n)++] = c;
	return 0;
}

int hu_net_rules_add_list(struct hu_net_rules *rules, char which, const char *list, hu_err *err)
{
	char buf[64];
	const char *p = list;

	while (*p) {
		size_t len = strcspn(p, ", ");
		if (len >= sizeof(buf))
			return hu_err_set(err, -EINVAL, "'%.64s...': entry too long", p);
		if (len > 0) {
			memcpy(buf, p, len);
			buf[len] = '\0';
			if (hu_net_rules_add(rules, which, buf, err) < 0)
				return -1;
		}
		p += len;
		p += strspn(p, ", ");
	}
	return 0;
}

static int is_loopback(uint32_t a)
{
	return (a >> 24) == 127;
}

/* The first IPv4 nameserver of a resolv.conf that is not a loopback address
 * (a reply from the host's loopback cannot be routed back to a sandbox), 0
 * if none. */
static uint32_t first_resolver(const char *path)
{
	FILE *f = fopen(path, "re");
	char line[256], addr[64];
	uint32_t found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		struct hu_cidr4 c;
		hu_err ignore;
		if (sscanf(line, " nameserver %63s", addr) == 1 && !strchr(addr, '/') &&
		    hu_cidr4_parse(addr, &c, &ignore) == 0 && !is_loopback(c.addr))
			found = c.addr;
	}
	fclose(f);
	return found;
}

/* The host's resolver: /etc/resolv.conf, or, where that names only a local
 * stub (systemd-resolved's 127.0.0.53), the stub's upstream. */
static uint32_t host_resolver(void)
{
	uint32_t r = first_resolver("/etc/resolv.conf");
	return r ? r : first_resolver("/run/systemd/resolve/resolv.conf");
}

static int valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > HU_NET_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

int hu_net_config_parse(struct hu_net_config *cfg, const char *mode, const char *name, const char *pool,
			const char *dns, const char *uplinks, const char *allow, const char *deny, hu_err *err)
{
	struct hu_cidr4 c;

	memset(cfg, 0, sizeof(*cfg));
	if (!strcmp(mode, "none") || !*mode)
		cfg->mode = HU_NET_NONE;
	else if (!strcmp(mode, "nat"))
		cfg->mode = HU_NET_NAT;
	else
		return hu_err_set(err, -EINVAL, "network mode '%.32s': expected none or nat", mode);
	if (!valid_name(name))
		return hu_err_set(err, -EINVAL, "network name '%.32s': 1-%d of a-z, 0-9", name, HU_NET_NAME_MAX);
	snprintf(cfg->name, sizeof(cfg->name), "%s", name);
	if (hu_cidr4_parse(pool, &cfg->pool, err) < 0) {
		hu_err_prefix(err, "network pool");
		return -1;
	}
	if (cfg->pool.len > 30)
		return hu_err_set(err, -EINVAL, "network pool %s: too small", pool);
	if (*dns) {
		if (hu_cidr4_parse(dns, &c, err) < 0) {
			hu_err_prefix(err, "network resolver");
			return -1;
		}
		if (c.len != 32)
			return hu_err_set(err, -EINVAL, "network resolver '%.64s' is not one address", dns);
		if (is_loopback(c.addr))
			return hu_err_set(err, -EINVAL,
					  "network resolver %.64s: a loopback address cannot answer sandboxes; name its "
					  "upstream", dns);
		cfg->resolver = c.addr;
	} else {
		cfg->resolver = host_resolver();
	}
	for (const char *p = uplinks; *p;) {
		size_t len = strcspn(p, ", ");
		if (len >= IF_NAMESIZE || cfg->n_uplinks >= HU_ARRAY_LEN(cfg->uplinks))
			return hu_err_set(err, -EINVAL, "network uplinks '%.64s': at most 4 interface names", uplinks);
		if (len > 0) {
			memcpy(cfg->uplinks[cfg->n_uplinks], p, len);
			cfg->uplinks[cfg->n_uplinks++][len] = '\0';
		}
		p += len;
		p += strspn(p, ", ");
	}
	if (hu_net_rules_add_list(&cfg->op, 'a', allow, err) < 0) {
		hu_err_prefix(err, "network allow");
		return -1;
	}
	if (hu_net_rules_add_list(&cfg->op, 'd', deny, err) < 0) {
		hu_err_prefix(err, "network deny");
		return -1;
	}
	if (cfg->op.n_allow_dom)
		return hu_err_set(err, -EINVAL, "network allow: the operator's exceptions are IPs or CIDRs, not names");
	return 0;
}

int hu_net_slot_addrs(const struct hu_net_config *cfg, uint32_t slot, uint32_t *gw, uint32_t *addr, hu_err *err)
{
	uint64_t size = 1ull << (32 - cfg->pool.len);
	if (2ull * slot + 2 > size)
		return hu_err_set(err, ENOSPC, "slot %u is outside the network pool (/%u holds %llu sandboxes)", slot,
				  cfg->pool.len, (unsigned long long)(size / 2));
	*gw = cfg->pool.addr + 2 * slot;
	*addr = *gw + 1;
	return 0;
}

void hu_net_ifname(const struct hu_net_config *cfg, uint32_t slot, char buf[IF_NAMESIZE])
{
	snprintf(buf, IF_NAMESIZE, "%s-%u", cfg->name, slot);
}

/* Below 16 a sandbox could hardly resolve a name and open a connection
 * at the same time: such a limit is a typo, not a policy. */
#define FLOWS_MIN 16

int hu_net_flows_parse(const char *v, unsigned *out, hu_err *err)
{
	uint64_t n;

	if (hu_parse_u64(v, &n, err) < 0)
		return -1;
	if (n != 0 && (n < FLOWS_MIN || n > HU_NET_FLOWS_MAX))
		return hu_err_set(err, -EINVAL, "%llu flows per sandbox: 0 (no limit) or %d .. %u",
				  (unsigned long long)n, FLOWS_MIN, HU_NET_FLOWS_MAX);
	*out = (unsigned)n;
	return 0;
}
