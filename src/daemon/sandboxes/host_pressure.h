/*
 * The host's own memory pressure. /proc/pressure/memory counts every stall
 * on the host, including a sandbox's tasks stalling in reclaim because that
 * sandbox is at its own memory limit: one tenant thrashing inside its limit
 * would read as host pressure, and the daemon would release other tenants'
 * paused sandboxes and refuse every create. So the stalls of sandboxes that
 * are at their own limit are taken out (hu_host_own_psi); stalls of
 * sandboxes below their limit are the host's (global reclaim) and stay in.
 */
#ifndef HUTCH_DAEMON_HOST_PRESSURE_H
#define HUTCH_DAEMON_HOST_PRESSURE_H

#include <stddef.h>

/* A sandbox "stalls" above this PSI some avg10 (%). */
#define HU_PSI_STALL_MIN 1.0
/* At its own limit: using at least this share of its memory limit. */
#define HU_AT_LIMIT_SHARE 0.9

struct hu_sbx_psi {
	double some_avg10; /* its cgroup's memory PSI, -1 unknown */
	int at_own_limit;  /* memory.current >= HU_AT_LIMIT_SHARE of its limit */
};

/* Pure: the host's memory PSI some avg10 (%) without the stalls of
 * sandboxes at their own limit, from the host-wide reading (root, -1 if
 * PSI is off), the parent group of all sandboxes (-1 unknown) and the
 * sandboxes' own readings. Where only self-limited sandboxes stall, their
 * union is the parent group's reading; the host's tasks then stall in the
 * remaining time, (root - self) / (100 - self), the share of the time in
 * which no self-limited sandbox stalls that something else does. */
double hu_host_own_psi(double root, double sandboxes, const struct hu_sbx_psi *v, size_t n);

#endif
