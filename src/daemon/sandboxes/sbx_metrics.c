/* Usage samples of a sandbox (sbx_metrics.h). */
#include "util/clock.h"
#include "util/rfc3339.h"
#include "daemon/sandboxes/sbx_metrics.h"

#include <stdlib.h>
#include <time.h>

#include "daemon/sandboxes/host_readings.h"
#include "daemon/sandboxes/registry.h"

int hu_cpu_count_of(uint32_t cpu_millis)
{
	if (cpu_millis == 0) { /* unlimited: the host's CPUs */
		struct hu_host_readings host;
		hu_err ignored;
		return hu_host_readings(&host, &ignored) == 0 ? (int)host.cpus : 1;
	}
	return (int)((cpu_millis + 999) / 1000);
}

int hu_sbx_cpu_count(const struct hu_sbx *s)
{
	return hu_cpu_count_of(s->cpu_millis);
}

/* The reading a new sample's CPU delta is taken against: the last recorded
 * sample, or the sandbox's start with no CPU used. */
static void baseline(const struct hu_sbx *s, int64_t *ts_ms, uint64_t *cpu_usec)
{
	const struct hu_sbx_metrics *m = s->metrics;

	*ts_ms = s->started_at_ms;
	*cpu_usec = 0;
	if (m && m->count) {
		const struct hu_metric_sample *last = &m->ring[(m->head + HU_METRICS_RING - 1) % HU_METRICS_RING];
		*ts_ms = last->ts_ms;
		*cpu_usec = last->cpu_usec;
	}
}

int hu_sbx_metrics_take(struct hu_sbx *s, struct hu_metric_sample *out, hu_err *err)
{
	struct hu_cgroup_stats st = {0};
	uint64_t disk_used = 0, prev_cpu;
	int64_t prev_ts;
	double allowance, pct = 0;

	if (hu_sandbox_stats(s->rt, &st, &disk_used, err) < 0)
		return -1;
	*out = (struct hu_metric_sample){
		.ts_ms = hu_wall_ms(),
		.cpu_usec = st.cpu_usage_usec,
		.mem_used = st.memory_bytes,
		.mem_total = st.memory_limit ? st.memory_limit : s->memory_bytes,
		.disk_used = disk_used,
		.disk_total = s->disk_bytes,
		.pids = st.pids_current,
	};
	baseline(s, &prev_ts, &prev_cpu);
	allowance = s->cpu_millis ? s->cpu_millis / 1000.0 : hu_sbx_cpu_count(s);
	if (out->ts_ms > prev_ts && out->cpu_usec >= prev_cpu)
		pct = (double)(out->cpu_usec - prev_cpu) / ((double)(out->ts_ms - prev_ts) * 1000.0 * allowance) * 100.0;
	if (pct > 100.0) /* CFS lets a group overshoot its quota briefly */
		pct = 100.0;
	out->cpu_pct = (double)(long)(pct * 100.0 + 0.5) / 100.0; /* two decimals */
	return 0;
}

int hu_sbx_metrics_record(struct hu_sbx *s, hu_err *err)
{
	struct hu_metric_sample smp;

	if (!s->metrics && !(s->metrics = calloc(1, sizeof(*s->metrics))))
		return hu_err_set(err, ENOMEM, "metrics");
	if (hu_sbx_metrics_take(s, &smp, err) < 0)
		return -1;
	if (!s->released) {
		s->held_memory_bytes = smp.mem_used;
		s->held_pids = smp.pids;
	}
	s->metrics->ring[s->metrics->head] = smp;
	s->metrics->head = (s->metrics->head + 1) % HU_METRICS_RING;
	if (s->metrics->count < HU_METRICS_RING)
		s->metrics->count++;
	return 0;
}

static json_t *sample_json(const struct hu_sbx *s, const struct hu_metric_sample *m)
{
	char ts[HU_TIME_STR_MAX];

	hu_rfc3339_format(m->ts_ms, ts);
	return json_pack("{s:s, s:I, s:i, s:f, s:I, s:I, s:I, s:I, s:I}", "timestamp", ts, "timestampUnix",
			 (json_int_t)(m->ts_ms / 1000), "cpuCount", hu_sbx_cpu_count(s), "cpuUsedPct", m->cpu_pct,
			 "memUsed", (json_int_t)m->mem_used, "memTotal", (json_int_t)m->mem_total, "memCache",
			 (json_int_t)0, "diskUsed", (json_int_t)m->disk_used, "diskTotal", (json_int_t)m->disk_total);
}

static int in_range(const struct hu_metric_sample *m, int64_t start_ms, int64_t end_ms)
{
	return m->ts_ms >= start_ms && m->ts_ms <= end_ms;
}

json_t *hu_sbx_metrics_json(const struct hu_sbx *s, int64_t start_ms, int64_t end_ms,
			    const struct hu_metric_sample *fresh)
{
	const struct hu_sbx_metrics *m = s->metrics;
	json_t *arr = json_array();

	if (!arr)
		return NULL;
	for (unsigned i = 0; m && i < m->count; i++) {
		const struct hu_metric_sample *smp =
			&m->ring[(m->head + HU_METRICS_RING - m->count + i) % HU_METRICS_RING];
		if (in_range(smp, start_ms, end_ms) && json_array_append_new(arr, sample_json(s, smp)) < 0)
			goto fail;
	}
	if (fresh && in_range(fresh, start_ms, end_ms) && json_array_append_new(arr, sample_json(s, fresh)) < 0)
		goto fail;
	return arr;
fail:
	json_decref(arr);
	return NULL;
}

void hu_sbx_read_held(struct hu_sbx *s)
{
	struct hu_cgroup_stats st = {0};
	uint64_t disk_used;
	hu_err ignored;

	/* unread (0) counts as the limits: the safe side */
	if (s->rt && hu_sandbox_stats(s->rt, &st, &disk_used, &ignored) == 0) {
		s->held_memory_bytes = st.memory_bytes;
		s->held_pids = st.pids_current;
	} else {
		s->held_memory_bytes = 0;
		s->held_pids = 0;
	}
}
