/*
 * The built-in denials: destinations no sandbox reaches unless the
 * operator's network_allow lists an exception (netfilter.c puts them in the
 * sets opdeny and opdeny6, dropped after the pool and host-address rules and
 * before a sandbox's own allowOut). One list per family, each entry with the
 * reason it is there; the address tests below read the same lists.
 *
 * Cloud metadata services: most live in link-local space (169.254.169.254
 * for AWS, GCP, Azure's instance metadata, OpenStack, Oracle, DigitalOcean,
 * Hetzner, Alibaba's and others'; AWS ECS 169.254.170.2, Tencent
 * 169.254.0.23, Scaleway 169.254.42.42), in shared space (Alibaba
 * 100.100.100.200), in 192.0.0.0/24 (Oracle Cloud Classic 192.0.0.192) or,
 * for IPv6, in unique local space (AWS fd00:ec2::254, GCP fd20:ce::254).
 * Azure's wire server, 168.63.129.16, is an ordinary public address (it is
 * the same on every Azure VM), so it is listed on its own: it serves the VM
 * agent's configuration (certificates and extension settings included) and
 * the platform's health probes. Azure VMs also use it as their DNS
 * resolver; a sandbox still resolves through it when it is the configured
 * resolver (the redirected DNS flow is accepted before these rules), but
 * reaches nothing else there.
 */
#include <string.h>

#include "runtime/net.h"
#include "util/cleanup.h"

const char *const hu_net_builtin_deny4[] = {
	"0.0.0.0/8",        /* "this network" */
	"10.0.0.0/8",       /* private (RFC 1918) */
	"100.64.0.0/10",    /* shared (carrier-grade NAT); Alibaba Cloud's metadata */
	"127.0.0.0/8",      /* loopback */
	"168.63.129.16/32", /* Azure's wire server (see above) */
	"169.254.0.0/16",   /* link-local: cloud metadata */
	"172.16.0.0/12",    /* private */
	"192.0.0.0/24",     /* IETF protocol assignments; Oracle Cloud Classic metadata */
	"192.168.0.0/16",   /* private */
	"198.18.0.0/15",    /* benchmarking */
	"224.0.0.0/4",      /* multicast */
	"240.0.0.0/4",      /* reserved, broadcast */
};
const size_t hu_net_builtin_deny4_len = HU_ARRAY_LEN(hu_net_builtin_deny4);

const char *const hu_net_builtin_deny6[] = {
	"::/96",            /* unspecified, loopback, IPv4-compatible */
	"::ffff:0.0.0.0/96", /* IPv4-mapped: the kernel sends these as IPv4 */
	"64:ff9b::/96",     /* NAT64 (well-known): a translator would reach the IPv4 behind it */
	"64:ff9b:1::/48",   /* NAT64 (local use) */
	"100::/64",         /* discard-only */
	"2001::/32",        /* Teredo: carries an IPv4 address a relay would unpack */
	"2001:db8::/32",    /* documentation */
	"2002::/16",        /* 6to4: the same */
	"fc00::/7",         /* unique local (private); AWS and GCP IPv6 metadata */
	"fe80::/10",        /* link-local */
	"fec0::/10",        /* deprecated site-local */
	"ff00::/8",         /* multicast */
};
const size_t hu_net_builtin_deny6_len = HU_ARRAY_LEN(hu_net_builtin_deny6);

int hu_net_builtin_denied4(uint32_t addr)
{
	for (size_t i = 0; i < hu_net_builtin_deny4_len; i++) {
		struct hu_cidr4 c;
		hu_err err;
		if (hu_cidr4_parse(hu_net_builtin_deny4[i], &c, &err) < 0)
			return -1;
		uint32_t mask = c.len ? 0xffffffffu << (32 - c.len) : 0;
		if ((addr & mask) == c.addr)
			return 1;
	}
	return 0;
}

int hu_net_builtin_denied6(const uint8_t addr[16])
{
	for (size_t i = 0; i < hu_net_builtin_deny6_len; i++) {
		struct hu_cidr6 c;
		hu_err err;
		if (hu_cidr6_parse(hu_net_builtin_deny6[i], &c, &err) < 0)
			return -1;
		unsigned full = c.len / 8, rest = c.len % 8;
		if (memcmp(addr, c.addr, full) == 0 &&
		    (rest == 0 || ((addr[full] ^ c.addr[full]) & (uint8_t)(0xff00u >> rest)) == 0))
			return 1;
	}
	return 0;
}
