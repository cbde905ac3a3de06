/*
 * What the DNS proxy has let each sandbox learn (dns_proxy.c): the
 * addresses of its allowed names' answers, which become nftables elements
 * (dallow, dallow6) until their TTL. The kernel's sets are shared by all
 * sandboxes and cannot bound one of them, so the proxy keeps the account:
 * at most HU_DNS_LEARNED_MAX live addresses per sandbox (IPv4 and IPv6
 * together), each until its TTL; an answer that would go beyond is not
 * learned (and so not handed over: it would lead nowhere). A sandbox
 * allowed a wildcard therefore cannot grow the host's sets without bound.
 * Pure but for allocation: the caller passes the time.
 */
#ifndef HUTCH_DAEMON_DNS_LEARNED_H
#define HUTCH_DAEMON_DNS_LEARNED_H

#include <stdint.h>

#define HU_DNS_LEARNED_MAX 256

struct hu_dns_learned;

struct hu_dns_learned *hu_dns_learned_new(void);
void hu_dns_learned_free(struct hu_dns_learned *l);

/* Record that sandbox sbx learns the n addresses (IPv4 as ::ffff:a.b.c.d)
 * until now + ttl (a known one is refreshed). 0, or -1 (nothing recorded)
 * when that would leave it more than HU_DNS_LEARNED_MAX live addresses or
 * memory is short. */
int hu_dns_learned_admit(struct hu_dns_learned *l, uint32_t sbx, const uint8_t (*addrs)[16], unsigned n,
			 unsigned ttl, int64_t now);
/* Its live addresses now. */
unsigned hu_dns_learned_count(struct hu_dns_learned *l, uint32_t sbx, int64_t now);

#endif
