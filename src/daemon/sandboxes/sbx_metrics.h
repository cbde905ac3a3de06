/*
 * Usage samples of a sandbox for GET /sandboxes/{id}/metrics: a small ring
 * per sandbox, filled every HU_METRICS_INTERVAL_S by the registry's timer,
 * plus one fresh sample per request. CPU percentage needs two cumulative
 * readings, so each sample is computed against the one before it.
 */
#ifndef HUTCH_DAEMON_SBX_METRICS_H
#define HUTCH_DAEMON_SBX_METRICS_H

#include <jansson.h>
#include <stdint.h>

#include "util/err.h"

#define HU_METRICS_INTERVAL_S 5
#define HU_METRICS_RING 120 /* ten minutes at 5 s, about 7 KB per sandbox */

struct hu_sbx;

struct hu_metric_sample {
	int64_t ts_ms;
	uint64_t cpu_usec; /* cumulative, for the next sample's delta */
	double cpu_pct;    /* of the sandbox's CPU allowance, 0..100 */
	uint64_t mem_used;
	uint64_t mem_total;
	uint64_t disk_used;
	uint64_t disk_total;
	uint64_t pids;     /* tasks in its cgroup */
};

struct hu_sbx_metrics {
	struct hu_metric_sample ring[HU_METRICS_RING];
	unsigned head;  /* next slot to write */
	unsigned count;
};

/* A sample of s now, not recorded. */
int hu_sbx_metrics_take(struct hu_sbx *s, struct hu_metric_sample *out, hu_err *err);
/* Take a sample and record it in s's ring; a running or frozen sandbox's
 * holding figures (commit.h) follow it. */
int hu_sbx_metrics_record(struct hu_sbx *s, hu_err *err);
/* The recorded samples with start_ms <= ts <= end_ms, then `fresh` if it is
 * in range too (NULL: none), as the E2B SandboxMetric array. */
json_t *hu_sbx_metrics_json(const struct hu_sbx *s, int64_t start_ms, int64_t end_ms,
			    const struct hu_metric_sample *fresh);
/* Read what s holds now (memory charge, tasks) into its holding figures;
 * 0 and 0 (count as its limits) when they cannot be read. */
void hu_sbx_read_held(struct hu_sbx *s);
/* E2B's cpuCount: whole CPUs, at least one. */
int hu_sbx_cpu_count(const struct hu_sbx *s);
/* The same for a limit of cpu_millis thousandths (0: unlimited, this
 * host's CPUs). */
int hu_cpu_count_of(uint32_t cpu_millis);

#endif
