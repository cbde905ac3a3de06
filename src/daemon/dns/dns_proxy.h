/*
 * The daemon's DNS proxy: what allowlisted sandboxes (denyOut covering
 * everything) get as their resolver, and what makes allowOut's domain
 * names work.
 *
 * nftables redirects such a sandbox's DNS (UDP 53 to any host address) to
 * this proxy's port (runtime/netfilter.c, set dnsproxy). The proxy knows
 * the sandbox by the source address (the reverse-path rule guarantees it
 * is the sandbox's own), answers REFUSED to every name its allowOut does
 * not list, without sending anything on (so DNS is no channel out of an
 * allowlisted sandbox), and forwards the others to the configured
 * resolver. The A records of the answer become allow elements of that
 * sandbox (set dallow, timeout = the TTL clamped to 5 s .. 1 h) before the
 * answer is handed over, so the connection that follows is let through;
 * its AAAA records likewise (set dallow6) where sandboxes have IPv6. Where
 * they have none, AAAA answers go over unchanged and open nothing: the
 * sandbox has no IPv6 address or route, so a client that tries them fails
 * at once (ENETUNREACH) and goes on to the A records.
 */
#ifndef HUTCH_DAEMON_DNS_PROXY_H
#define HUTCH_DAEMON_DNS_PROXY_H

#include "daemon/core/daemon.h"

struct hu_dns_proxy;

/* Bind the proxy's socket (every host address, a port the kernel picks)
 * before the runtime opens: its port goes into the nftables rules. */
int hu_dns_proxy_bind(struct hu_dns_proxy **out, unsigned *port, hu_err *err);
/* Start serving on the daemon's loop (the runtime is open). */
int hu_dns_proxy_start(struct hu_dns_proxy *p, struct hu_daemon *d, hu_err *err);
void hu_dns_proxy_free(struct hu_dns_proxy *p);

#endif
