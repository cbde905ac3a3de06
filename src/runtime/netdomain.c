/*
 * Domain rules of allowOut (E2B: "example.com", "*.example.com"): strict
 * syntax, one canonical form (lower case, no trailing dot), and matching
 * a queried DNS name against them. Pure functions.
 *
 * Matching follows the usual wildcard rule (TLS certificates, E2B's
 * examples): "example.com" matches that name only; "*.example.com"
 * matches every name below example.com, at any depth, but not
 * example.com itself. Names compare case-insensitively.
 */
#include <string.h>

#include "runtime/net.h"

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static int label_char(int c)
{
	c = lower(c);
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int hu_domain_rule_parse(const char *s, char *out, hu_err *err)
{
	const char *p = s;
	size_t n = strlen(s), o = 0;
	int wildcard = 0, letters = 0;

	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n >= 2 && s[0] == '*' && s[1] == '.') {
		wildcard = 1;
		p += 2;
		n -= 2;
	}
	if (n == 0 || n > (size_t)(HU_DOMAIN_MAX - 2 * wildcard))
		return hu_err_set(err, -EINVAL, "'%.64s' is not a domain name (1-%d characters)", s, HU_DOMAIN_MAX);
	if (wildcard) {
		out[o++] = '*';
		out[o++] = '.';
	}
	/* labels: 1-63 of letters, digits, '-' (not at either end) and '_'
	 * (service names such as _dmarc) */
	size_t start = 0, labels = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || p[i] == '.') {
			size_t len = i - start;
			if (len == 0 || len > 63 || p[start] == '-' || p[i - 1] == '-')
				return hu_err_set(err, -EINVAL, "'%.64s': bad label in domain name", s);
			labels++;
			start = i + 1;
			if (i < n)
				out[o++] = '.';
			continue;
		}
		if (!label_char((unsigned char)p[i]))
			return hu_err_set(err, -EINVAL, "'%.64s': a domain name holds only letters, digits, '-', '_' "
						"and dots (a leading '*.' for every name below)", s);
		if (lower((unsigned char)p[i]) >= 'a' && lower((unsigned char)p[i]) <= 'z')
			letters = 1;
		out[o++] = (char)lower((unsigned char)p[i]);
	}
	out[o] = '\0';
	/* "*.com" would open a whole top-level domain: a wildcard needs two
	 * labels under it; a name of digits only is a malformed address */
	if (wildcard && labels < 2)
		return hu_err_set(err, -EINVAL, "'%.64s': a wildcard needs at least two labels after '*.'", s);
	if (!letters)
		return hu_err_set(err, -EINVAL, "'%.64s' is neither an IPv4 address nor a domain name", s);
	return 0;
}

/* name[0..n) equals rule (canonical, lower case), case-insensitively */
static int equal_n(const char *name, size_t n, const char *rule)
{
	if (strlen(rule) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (lower((unsigned char)name[i]) != rule[i])
			return 0;
	return 1;
}

int hu_domain_match(const char *rule, const char *name)
{
	size_t n = strlen(name);

	if (n > 0 && name[n - 1] == '.')
		n--;
	if (rule[0] != '*')
		return equal_n(name, n, rule);
	const char *base = rule + 2;
	size_t bl = strlen(base);
	/* at least one label, then '.', then base */
	return n > bl + 1 && name[n - bl - 1] == '.' && equal_n(name + n - bl, bl, base);
}

int hu_net_rules_match_name(const struct hu_net_rules *rules, const char *name)
{
	for (unsigned i = 0; i < rules->n_allow_dom; i++)
		if (hu_domain_match(hu_net_rules_domain(rules, i), name))
			return 1;
	return 0;
}

int hu_net_rules_allowlist(const struct hu_net_rules *rules)
{
	for (unsigned i = 0; i < rules->n_deny; i++)
		if (rules->deny[i].len == 0)
			return 1;
	return 0;
}

int hu_net_rules_check(const struct hu_net_rules *rules, hu_err *err)
{
	if (rules->n_allow_dom && !hu_net_rules_allowlist(rules))
		return hu_err_set(err, -EINVAL, "allowOut: domain names need denyOut to deny all other traffic "
						"(\"0.0.0.0/0\"), as in E2B");
	return 0;
}
