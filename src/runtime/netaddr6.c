/*
 * IPv6 prefixes: parsing and formatting, the operator's IPv6 pool and the
 * per-slot addresses in it. Pure functions.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "runtime/net.h"

/* Clear every bit after the first `len`. */
static void mask6(uint8_t a[16], unsigned len)
{
	for (unsigned i = 0; i < 16; i++) {
		unsigned keep = len >= 8 * (i + 1) ? 8 : len > 8 * i ? len - 8 * i : 0;
		a[i] &= (uint8_t)(0xff00u >> keep);
	}
}

int hu_cidr6_parse(const char *s, struct hu_cidr6 *out, hu_err *err)
{
	char addr[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	unsigned len = 128;

	if (n == 0 || n >= sizeof(addr))
		return hu_err_set(err, -EINVAL, "'%.64s' is not an IPv6 address or CIDR", s);
	memcpy(addr, s, n);
	addr[n] = '\0';
	/* inet_pton takes no zone (%eth0) and no brackets: a plain address */
	if (inet_pton(AF_INET6, addr, out->addr) != 1)
		return hu_err_set(err, -EINVAL, "'%.64s' is not an IPv6 address or CIDR", s);
	if (slash) {
		const char *p = slash + 1;
		unsigned v = 0, digits = 0;
		while (p[digits] >= '0' && p[digits] <= '9' && digits < 4)
			v = v * 10 + (unsigned)(p[digits++] - '0');
		/* no leading zeros, no sign, nothing after the digits */
		if (digits == 0 || digits > 3 || (digits > 1 && p[0] == '0') || v > 128 || p[digits] != '\0')
			return hu_err_set(err, -EINVAL, "'%.64s': bad prefix length", s);
		len = v;
	}
	out->len = (uint8_t)len;
	mask6(out->addr, len);
	return 0;
}

void hu_cidr6_format(const struct hu_cidr6 *c, char *buf, size_t n)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(AF_INET6, c->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "::"); /* cannot happen: the buffer is large enough */
	snprintf(buf, n, "%s/%u", a, c->len);
}

int hu_net_rules_any(const struct hu_net_rules *rules)
{
	return rules->n_allow || rules->n_deny || rules->n_allow6 || rules->n_deny6 || rules->n_allow_dom;
}

int hu_net_pool6_parse(struct hu_net_config *cfg, const char *pool6, hu_err *err)
{
	cfg->has_pool6 = 0;
	if (!*pool6 || !strcmp(pool6, "none"))
		return 0;
	if (hu_cidr6_parse(pool6, &cfg->pool6, err) < 0) {
		hu_err_prefix(err, "network pool6");
		return -1;
	}
	if (cfg->pool6.len > 126)
		return hu_err_set(err, -EINVAL, "network pool6 %.64s: too small", pool6);
	cfg->has_pool6 = 1;
	return 0;
}

/* a += v (big-endian, carry across bytes) */
static void add6(uint8_t a[16], uint64_t v)
{
	for (int i = 15; i >= 0 && v; i--) {
		v += a[i];
		a[i] = (uint8_t)v;
		v >>= 8;
	}
}

int hu_net6_slot_addrs(const struct hu_net_config *cfg, uint32_t slot, uint8_t gw[16], uint8_t addr[16], hu_err *err)
{
	unsigned host_bits = 128u - cfg->pool6.len;

	if (!cfg->has_pool6)
		return hu_err_set(err, EINVAL, "no IPv6 pool");
	/* a pool of /64 or larger holds every slot there can be */
	if (host_bits < 64 && 2ull * slot + 2 > (1ull << host_bits))
		return hu_err_set(err, ENOSPC, "slot %u is outside the IPv6 pool (/%u holds %llu sandboxes)", slot,
				  cfg->pool6.len, (unsigned long long)((1ull << host_bits) / 2));
	memcpy(gw, cfg->pool6.addr, 16);
	add6(gw, 2ull * slot);
	memcpy(addr, gw, 16);
	add6(addr, 1);
	return 0;
}
