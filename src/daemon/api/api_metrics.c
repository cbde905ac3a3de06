/*
 * GET /metrics: the Prometheus text exposition of the daemon's counters,
 * histograms and capacity gauges (stats.h). It needs no key, like /health:
 * the numbers are aggregates that name no sandbox and no team, and the
 * daemon listens on loopback unless the operator says otherwise.
 */
#include <event2/buffer.h>
#include <stdio.h>
#include <string.h>

#include "daemon/api/handlers.h"
#include "daemon/common/stats.h"
#include "daemon/sandboxes/admission.h"
#include "daemon/sandboxes/commit.h"
#include "daemon/sandboxes/fd_budget.h"
#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/store/store.h"

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

/* The nodes of a shared store, as the store sees them now: one row each,
 * so that any node's scrape shows the whole cluster (leases in the store
 * server's clock; the skew is each node's wall clock against it). */
struct nodes_out {
	struct evbuffer *o;
	const char *self;
	unsigned live, expired;
	struct evbuffer *lease, *skew;
};

static void node_row(const struct hu_node *n, void *arg)
{
	struct nodes_out *no = arg;

	if (n->alive)
		no->live++;
	else
		no->expired++;
	if (!strcmp(n->name, no->self))
		evbuffer_add_printf(no->o, "hutch_node{node=\"%s\",generation=\"%lld\"} 1\n", n->name,
				    (long long)n->generation);
	evbuffer_add_printf(no->lease, "hutch_node_lease_seconds{node=\"%s\"} %.1f\n", n->name,
			    n->lease_left_ms / 1000.0);
	evbuffer_add_printf(no->skew, "hutch_node_clock_skew_seconds{node=\"%s\"} %.3f\n", n->name,
			    n->clock_skew_ms / 1000.0);
}

static void render_nodes(struct hu_daemon *d, struct evbuffer *o)
{
	char self[HU_NODE_NAME_MAX];
	struct nodes_out no = {.o = o, .self = self, .lease = evbuffer_new(), .skew = evbuffer_new()};
	hu_err err;

	hu_config_node_name(&d->cfg, self, sizeof(self));
	if (!no.lease || !no.skew)
		goto out;
	hu_stats_header(o, "hutch_node", "gauge", "This daemon as a node of a shared store: its name and generation.");
	if (hu_store_node_each(d->store, node_row, &no, &err) < 0) {
		/* one host (no nodes), or the store is out of reach: the
		 * sandboxes' own figures below still count */
		goto out;
	}
	hu_stats_header(o, "hutch_cluster_nodes", "gauge", "Nodes of the shared store by lease: live or expired.");
	evbuffer_add_printf(o, "hutch_cluster_nodes{state=\"live\"} %u\nhutch_cluster_nodes{state=\"expired\"} %u\n",
			    no.live, no.expired);
	hu_stats_header(o, "hutch_node_lease_seconds", "gauge", "Each node's lease: seconds left (negative: expired since).");
	evbuffer_add_buffer(o, no.lease);
	hu_stats_header(o, "hutch_node_clock_skew_seconds", "gauge",
			"Each node's wall clock minus the store server's, at its last renewal.");
	evbuffer_add_buffer(o, no.skew);
out:
	if (no.lease)
		evbuffer_free(no.lease);
	if (no.skew)
		evbuffer_free(no.skew);
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

	if (d->cluster && d->store)
		render_nodes(d, o);
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
