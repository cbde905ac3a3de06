/*
 * The daemon's counters and latency histograms, rendered by GET /metrics in
 * the Prometheus text format (api/api_metrics.c). Like the log, one set per
 * process: every layer adds to it, and nothing in it names a sandbox or a
 * team (the endpoint needs no key).
 */
#ifndef HUTCH_DAEMON_STATS_H
#define HUTCH_DAEMON_STATS_H

#include <stdint.h>

enum hu_stat {
	HU_STAT_CREATES,              /* sandboxes created */
	HU_STAT_CREATE_FAIL_TEMPLATE, /* create failures, by reason */
	HU_STAT_CREATE_FAIL_CAPACITY,
	HU_STAT_CREATE_FAIL_PRESSURE,
	HU_STAT_CREATE_FAIL_BAD_REQUEST,
	HU_STAT_CREATE_FAIL_RUNTIME,
	HU_STAT_IDEMPOTENT_HITS,      /* creates answered with an existing sandbox */
	HU_STAT_PAUSES,
	HU_STAT_RESUMES,
	HU_STAT_AUTO_RESUMES,         /* of which by a data-plane request */
	HU_STAT_RELEASES,             /* memory releases */
	HU_STAT_RECLAIMS,
	HU_STAT_KILLS,                /* every end of a sandbox, reclaims included */
	HU_STAT_LOST,                 /* found dead at start */
	HU_STAT_DATA_BYTES_IN,        /* data-plane request bodies */
	HU_STAT_DATA_BYTES_OUT,       /* data-plane replies and streams */
	HU_STAT_CREATES_POOL,         /* creates answered with a warm pool sandbox (pool.h) */
	HU_STAT_CREATES_COLD,         /* creates that built their sandbox */
	HU_STAT_POOL_BUILDS,          /* pool sandboxes built */
	HU_STAT_POOL_FAILS,           /* pool builds that failed */
	HU_STAT_POOL_DROPS,           /* pool sandboxes destroyed to make room */
	HU_STAT_POOL_SHRINKS,         /* pool sandboxes destroyed as demand fell */
	HU_STAT_RELEASE_ASKED,        /* memory releases, by reason */
	HU_STAT_RELEASE_IDLE,
	HU_STAT_RELEASE_PRESSURE,
	HU_STAT_RELEASE_ROOM,
	HU_STAT_FORWARD_DIALS,        /* connections opened to other nodes (cluster/forward.c) */
	HU_STAT_FORWARD_REUSES,       /* forwarded calls sent on a kept connection */
	HU_STAT_FORWARD_RETRIES,      /* of which sent again: the node had closed it */
	HU_STAT_COUNT,
};

enum hu_hist { HU_HIST_CREATE, HU_HIST_RESUME, HU_HIST_EXEC, HU_HIST_COUNT };

void hu_stat_add(enum hu_stat which, uint64_t n);
/* One observation of `seconds` in a latency histogram. */
void hu_stat_observe(enum hu_hist which, double seconds);

struct evbuffer;
/* Prometheus text: the "# HELP" and "# TYPE" lines of one series name. */
void hu_stats_header(struct evbuffer *o, const char *name, const char *type, const char *help);
/* Prometheus text of every counter and histogram above; the gauges of the
 * daemon's state are rendered by GET /metrics itself (api/api_metrics.c). */
void hu_stats_render_events(struct evbuffer *o);

#endif
