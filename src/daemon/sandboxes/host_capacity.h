/*
 * How many sandboxes this host admits with the current settings, and what
 * would raise each figure: `hutch serve` logs it at start and `hutch
 * doctor` prints it. Pure arithmetic over the host's figures and the
 * configuration (admission.c uses the same budgets), unit-tested.
 *
 * Running sandboxes commit their limits; paused (frozen) ones what they
 * hold (commit.h), estimated here at HU_FROZEN_TYPICAL_* (a shell and a
 * small program: measured sessions hold a few tasks and tens of MiB).
 * (weighed by the memory overcommit: it is real memory). Released ones
 * commit nothing: their files and a row (not counted against
 * max_sandboxes or descriptors; a uid slot each, of 16384).
 */
#ifndef HUTCH_DAEMON_HOST_CAPACITY_H
#define HUTCH_DAEMON_HOST_CAPACITY_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/core/config.h"

#define HU_FROZEN_TYPICAL_MEM (32ull * 1024 * 1024)
#define HU_FROZEN_TYPICAL_PIDS 4
#define HU_PIDS_HOST_RESERVE 4096 /* pids left to the host whatever the sandboxes' limits say */

/* admission.reserve, or 10% of mem_total and at least 512 MiB. */
uint64_t hu_mem_reserve(const struct hu_config *cfg, uint64_t mem_total);
/* (mem_total - reserve) x admission.memory_overcommit */
uint64_t hu_mem_budget(const struct hu_config *cfg, uint64_t mem_total);
/* (pid_max - HU_PIDS_HOST_RESERVE) x admission.pids_overcommit */
uint64_t hu_pids_budget(const struct hu_config *cfg, uint64_t pid_max);

struct hu_host_figures {
	uint64_t mem_total;  /* bytes */
	uint64_t pid_max;
	uint32_t cpus;
	uint64_t fd_allowed; /* sandboxes the descriptor limit allows (UINT64_MAX: no limit) */
};

struct hu_admits {
	uint64_t running, paused;
	char running_raise[200], paused_raise[200]; /* the limit that binds and what would raise it */
};
void hu_admits_estimate(const struct hu_config *cfg, const struct hu_host_figures *h, struct hu_admits *out);

#endif
