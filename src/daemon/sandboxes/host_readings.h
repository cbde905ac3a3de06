/*
 * What the host has: memory, CPUs, kernel.pid_max and memory pressure,
 * read from /proc and kept for HU_HOST_READINGS_MAX_AGE_MS.
 *
 * Admission, pool builds and the lifecycle tick all ask. Read at every ask,
 * the four files were 38% of the CPU of a create served from a warm pool:
 * a burst of 50 creates read them 50 times within 20 ms. A tenth of a second
 * is far below anything they could tell apart (the kernel updates the PSI
 * averages every 2 s), while admission counts what the daemon itself
 * committed exactly, at every create.
 */
#ifndef HUTCH_DAEMON_HOST_READINGS_H
#define HUTCH_DAEMON_HOST_READINGS_H

#include <stdint.h>

#include "util/err.h"

#define HU_HOST_READINGS_MAX_AGE_MS 100

struct hu_host_readings {
	uint64_t mem_total, mem_available; /* bytes, /proc/meminfo */
	double psi_some_avg10;             /* memory PSI "some avg10", -1 where PSI is off */
	uint64_t pid_max;                  /* kernel.pid_max (32768 if unreadable) */
	uint32_t cpus;                     /* online CPUs, at least 1 */
};

/* The readings, at most HU_HOST_READINGS_MAX_AGE_MS old. -1 if /proc/meminfo
 * cannot be read (err says why); the other readings have fallbacks. */
int hu_host_readings(struct hu_host_readings *out, hu_err *err);

#endif
