/*
 * GET /metrics: the Prometheus text exposition of the daemon's counters,
 * histograms and capacity gauges (stats.h). It needs no key, like /health:
 * the numbers are aggregates that name no sandbox and no team, and the
 * daemon listens on loopback unless the operator says otherwise.
 */
#include <event2/buffer.h>
#include <stdio.h>

#include "daemon/api/handlers.h"
#include "daemon/common/stats.h"
#include "daemon/sandboxes/admission.h"
#include "daemon/sandboxes/commit.h"
#include "daemon/sandboxes/fd_budget.h"
#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/registry.h"

struct by_state {
	unsigned running, paused, released;
};

static int count_state(struct hu_sbx *s, void *arg)
{
	struct by_state *b = arg;
	if (s->state == HU_SBX_RUNNING)
		b->running++;
	else if (s->released)
		b->released++;
	else
		b->paused++;
	return 0;
}

/* The Prometheus text exposition of everything, gauges read now. */
static int render(struct hu_daemon *d, struct evbuffer *o)
{
	struct by_state b = {0};
	struct hu_capacity cap;
	hu_err err;

	if (d->reg)
		hu_registry_each(d->reg, count_state, &b);
	hu_stats_header(o, "hutch_sandboxes", "gauge", "Live sandboxes by state (paused_released: paused, memory released).");
	evbuffer_add_printf(o, "hutch_sandboxes{state=\"running\"} %u\nhutch_sandboxes{state=\"paused\"} %u\n"
			       "hutch_sandboxes{state=\"paused_released\"} %u\nhutch_sandboxes{state=\"creating\"} %u\n",
			    b.running, b.paused, b.released, d->n_creating);

	hu_pool_render(d, o);
	hu_stats_render_events(o);

	if (hu_capacity_read(d, &cap, &err) == 0) {
		hu_stats_header(o, "hutch_memory_bytes", "gauge", "Memory: committed to sandboxes against the budget (by state below; what frozen and warm sandboxes hold counts admission.memory_overcommit times, being real memory), admission budget, host total and available.");
		evbuffer_add_printf(o, "hutch_memory_bytes{kind=\"committed\"} %llu\nhutch_memory_bytes{kind=\"budget\"} %llu\n"
				       "hutch_memory_bytes{kind=\"total\"} %llu\nhutch_memory_bytes{kind=\"available\"} %llu\n",
				    (unsigned long long)cap.mem_committed, (unsigned long long)cap.mem_budget,
				    (unsigned long long)cap.mem_total, (unsigned long long)cap.mem_available);
		hu_stats_header(o, "hutch_cpu_millis", "gauge", "CPU in thousandths: committed to running sandboxes, admission budget.");
		evbuffer_add_printf(o, "hutch_cpu_millis{kind=\"committed\"} %llu\nhutch_cpu_millis{kind=\"budget\"} %llu\n",
				    (unsigned long long)cap.cpu_committed_millis, (unsigned long long)cap.cpu_budget_millis);
		hu_stats_header(o, "hutch_memory_by_state_bytes", "gauge",
				"Memory by sandbox state: committed (what admission counts: limits when running or being built, "
				"what it holds when frozen or warm, nothing when released) and held (the last reading).");
		for (int i = 0; i < HU_CS_N; i++)
			evbuffer_add_printf(o,
					    "hutch_memory_by_state_bytes{state=\"%s\",kind=\"committed\"} %llu\n"
					    "hutch_memory_by_state_bytes{state=\"%s\",kind=\"held\"} %llu\n",
					    hu_commit_state_name(i), (unsigned long long)cap.ledger.mem_committed[i],
					    hu_commit_state_name(i), (unsigned long long)cap.ledger.mem_held[i]);
		hu_stats_header(o, "hutch_pids_by_state", "gauge", "Pids by sandbox state: committed and held, as for memory.");
		for (int i = 0; i < HU_CS_N; i++)
			evbuffer_add_printf(o,
					    "hutch_pids_by_state{state=\"%s\",kind=\"committed\"} %llu\n"
					    "hutch_pids_by_state{state=\"%s\",kind=\"held\"} %llu\n",
					    hu_commit_state_name(i), (unsigned long long)cap.ledger.pids_committed[i],
					    hu_commit_state_name(i), (unsigned long long)cap.ledger.pids_held[i]);
		hu_stats_header(o, "hutch_pids", "gauge", "Pids: committed to sandboxes (commit.h), admission budget.");
		evbuffer_add_printf(o, "hutch_pids{kind=\"committed\"} %llu\nhutch_pids{kind=\"budget\"} %llu\n",
				    (unsigned long long)cap.pids_committed, (unsigned long long)cap.pids_budget);
		if (cap.fd_limit != UINT64_MAX) {
			hu_stats_header(o, "hutch_open_files", "gauge",
			       "The daemon's descriptors: committed (fd_budget.h: the base, the reserve, 2 per sandbox), the limit.");
			evbuffer_add_printf(o, "hutch_open_files{kind=\"committed\"} %llu\nhutch_open_files{kind=\"limit\"} %llu\n",
					    (unsigned long long)hu_fd_needed(cap.fd_base, cap.fd_limit, cap.fds_held,
									     cap.fds_creating),
					    (unsigned long long)cap.fd_limit);
		}
	}
	return 0;
}

void hu_api_get_metrics(struct hu_req *r)
{
	struct evbuffer *out = evbuffer_new();

	if (!out || render(hu_req_daemon(r), out) < 0) {
		if (out)
			evbuffer_free(out);
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	hu_reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", out);
	evbuffer_free(out);
}
