/* Counters, histograms and their Prometheus rendering (stats.h). */
#include "daemon/common/stats.h"

#include <event2/buffer.h>
#include <stdio.h>

static const double bucket_le[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define NBUCKETS (sizeof(bucket_le) / sizeof(bucket_le[0]))

static struct {
	uint64_t counter[HU_STAT_COUNT];
	struct {
		uint64_t bucket[NBUCKETS]; /* cumulative counts are computed when rendered */
		uint64_t count;
		double sum;
	} hist[HU_HIST_COUNT];
} g_stats;

void hu_stat_add(enum hu_stat which, uint64_t n)
{
	g_stats.counter[which] += n;
}

void hu_stat_observe(enum hu_hist which, double seconds)
{
	size_t i = 0;
	while (i < NBUCKETS && seconds > bucket_le[i])
		i++;
	if (i < NBUCKETS)
		g_stats.hist[which].bucket[i]++;
	g_stats.hist[which].count++;
	g_stats.hist[which].sum += seconds;
}

void hu_stats_header(struct evbuffer *o, const char *name, const char *type, const char *help)
{
	evbuffer_add_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Every counter, by enum hu_stat: series name, label set, and the help of
 * the first series of each name. */
static const struct {
	const char *name, *labels, *help;
} counter_info[HU_STAT_COUNT] = {
	[HU_STAT_CREATES] = {"hutch_sandbox_creates_total", "", "Sandboxes created."},
	[HU_STAT_CREATE_FAIL_TEMPLATE] = {"hutch_sandbox_create_failures_total", "{reason=\"template\"}",
					  "Creates refused or failed, by reason."},
	[HU_STAT_CREATE_FAIL_CAPACITY] = {"hutch_sandbox_create_failures_total", "{reason=\"capacity\"}", NULL},
	[HU_STAT_CREATE_FAIL_PRESSURE] = {"hutch_sandbox_create_failures_total", "{reason=\"pressure\"}", NULL},
	[HU_STAT_CREATE_FAIL_BAD_REQUEST] = {"hutch_sandbox_create_failures_total", "{reason=\"bad_request\"}", NULL},
	[HU_STAT_CREATE_FAIL_RUNTIME] = {"hutch_sandbox_create_failures_total", "{reason=\"runtime\"}", NULL},
	[HU_STAT_IDEMPOTENT_HITS] = {"hutch_sandbox_idempotent_hits_total", "",
				     "Creates answered with the sandbox an Idempotency-Key made."},
	[HU_STAT_PAUSES] = {"hutch_sandbox_lifecycle_total", "{event=\"pause\"}", "Lifecycle transitions."},
	[HU_STAT_RESUMES] = {"hutch_sandbox_lifecycle_total", "{event=\"resume\"}", NULL},
	[HU_STAT_AUTO_RESUMES] = {"hutch_sandbox_lifecycle_total", "{event=\"auto_resume\"}", NULL},
	[HU_STAT_RELEASES] = {"hutch_sandbox_lifecycle_total", "{event=\"memory_release\"}", NULL},
	[HU_STAT_RECLAIMS] = {"hutch_sandbox_lifecycle_total", "{event=\"reclaim\"}", NULL},
	[HU_STAT_KILLS] = {"hutch_sandbox_lifecycle_total", "{event=\"kill\"}", NULL},
	[HU_STAT_LOST] = {"hutch_sandbox_lifecycle_total", "{event=\"lost\"}", NULL},
	[HU_STAT_DATA_BYTES_IN] = {"hutch_dataplane_bytes_total", "{direction=\"in\"}",
				   "Data-plane bytes (request bodies in; replies and streams out)."},
	[HU_STAT_DATA_BYTES_OUT] = {"hutch_dataplane_bytes_total", "{direction=\"out\"}", NULL},
	[HU_STAT_CREATES_POOL] = {"hutch_sandbox_creates_by_source_total", "{source=\"pool\"}",
				  "Sandboxes created, by where they came from (a warm pool, or built for the request)."},
	[HU_STAT_CREATES_COLD] = {"hutch_sandbox_creates_by_source_total", "{source=\"cold\"}", NULL},
	[HU_STAT_POOL_BUILDS] = {"hutch_pool_events_total", "{event=\"built\"}",
				 "Warm pool events: sandboxes built, builds failed, sandboxes dropped to make room."},
	[HU_STAT_POOL_FAILS] = {"hutch_pool_events_total", "{event=\"failed\"}", NULL},
	[HU_STAT_POOL_DROPS] = {"hutch_pool_events_total", "{event=\"dropped\"}", NULL},
	[HU_STAT_POOL_SHRINKS] = {"hutch_pool_events_total", "{event=\"shrunk\"}", NULL},
	[HU_STAT_RELEASE_ASKED] = {"hutch_sandbox_releases_total", "{reason=\"asked\"}",
				   "Memory releases of paused sandboxes, by reason: asked by the client, idle "
				   "(pause.release_after), host memory pressure, room for a create or resume."},
	[HU_STAT_RELEASE_IDLE] = {"hutch_sandbox_releases_total", "{reason=\"idle\"}", NULL},
	[HU_STAT_RELEASE_PRESSURE] = {"hutch_sandbox_releases_total", "{reason=\"pressure\"}", NULL},
	[HU_STAT_RELEASE_ROOM] = {"hutch_sandbox_releases_total", "{reason=\"room\"}", NULL},
	[HU_STAT_FORWARD_DIALS] = {"hutch_forward_connections_total", "{how=\"dialled\"}",
				   "Calls forwarded to other nodes, by connection: a new one, or one kept from an "
				   "earlier call."},
	[HU_STAT_FORWARD_REUSES] = {"hutch_forward_connections_total", "{how=\"reused\"}", NULL},
	[HU_STAT_FORWARD_RETRIES] = {"hutch_forward_retries_total", "",
				     "Forwarded calls without a body and with an idempotent method sent again on a new "
				     "connection: the other node had closed the kept one."},
};

static void counters(struct evbuffer *o)
{
	for (int i = 0; i < HU_STAT_COUNT; i++) {
		if (counter_info[i].help)
			hu_stats_header(o, counter_info[i].name, "counter", counter_info[i].help);
		evbuffer_add_printf(o, "%s%s %llu\n", counter_info[i].name, counter_info[i].labels,
				    (unsigned long long)g_stats.counter[i]);
	}
}

static void histogram(struct evbuffer *o, const char *name, const char *help, enum hu_hist which)
{
	uint64_t cum = 0;

	hu_stats_header(o, name, "histogram", help);
	for (size_t i = 0; i < NBUCKETS; i++) {
		cum += g_stats.hist[which].bucket[i];
		evbuffer_add_printf(o, "%s_bucket{le=\"%g\"} %llu\n", name, bucket_le[i], (unsigned long long)cum);
	}
	evbuffer_add_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
			    (unsigned long long)g_stats.hist[which].count, name, g_stats.hist[which].sum, name,
			    (unsigned long long)g_stats.hist[which].count);
}

void hu_stats_render_events(struct evbuffer *o)
{
	counters(o);
	histogram(o, "hutch_create_duration_seconds", "From create request to a running sandbox.", HU_HIST_CREATE);
	histogram(o, "hutch_resume_duration_seconds", "Resume of a paused sandbox (thaw, or a fresh init after a memory release).",
		  HU_HIST_RESUME);
	histogram(o, "hutch_exec_start_duration_seconds", "From process.Start to the process running.", HU_HIST_EXEC);
}
