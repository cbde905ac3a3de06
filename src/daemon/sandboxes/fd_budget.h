/*
 * The daemon's descriptor budget: how many sandboxes its RLIMIT_NOFILE
 * allows, so that running out of descriptors is a capacity refusal at
 * admission rather than an EMFILE somewhere in the middle of a create.
 *
 * A running estimate, not a count of /proc/self/fd: what a sandbox holds in
 * the daemon is fixed by design (its pidfd and its cgroup's events file, 2,
 * read off /proc/<pid>/fd), and admission runs on every create, where
 * listing /proc/self/fd costs O(descriptors) and a cached listing would be
 * blind to a burst of creates. What varies is client connections (and the
 * init connections that serve them): a reserve of an eighth of the limit
 * covers them, and accept() already pauses on EMFILE (http.c).
 *
 *   needed = base + reserve + 2 x (live + pool + creating) + 16 x creating
 *
 * base = the descriptors the daemon held before its first create (store,
 * log, listener, DNS proxy, event loop), read once from /proc/self/fd;
 * 16 = what one create holds while it builds (socketpair, init socket,
 * /dev/null, user namespace, the tree fds it hands the child, and the
 * child's copies of them in its own table).
 */
#ifndef HUTCH_DAEMON_FD_BUDGET_H
#define HUTCH_DAEMON_FD_BUDGET_H

#include <stdint.h>

#define HU_FD_PER_SANDBOX 2
#define HU_FD_PER_CREATE 16
#define HU_FD_RESERVE_MIN 32
/* base when it cannot be measured (hutch doctor, which is not the daemon) */
#define HU_FD_BASE_TYPICAL 24

/* Descriptors kept for connections and everything else that is not a
 * sandbox: limit / 8, at least HU_FD_RESERVE_MIN. */
uint64_t hu_fd_reserve(uint64_t limit);

/* Descriptors needed with `held` sandboxes holding theirs and `creating`
 * creates in progress (each also counted in held). */
uint64_t hu_fd_needed(uint64_t base, uint64_t limit, uint64_t held, uint64_t creating);

/* How many sandboxes fit under limit when created one at a time. */
uint64_t hu_fd_sandboxes_allowed(uint64_t base, uint64_t limit);

/* The daemon's soft RLIMIT_NOFILE (UINT64_MAX when unlimited) and its base,
 * both read once, at the first call (the daemon's loop thread only). */
void hu_fd_budget_read(uint64_t held_now, uint64_t *limit, uint64_t *base);

#endif
