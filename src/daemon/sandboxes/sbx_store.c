/* A live sandbox and its store row (sbx_store.h). */
#include "daemon/sandboxes/sbx_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/net_rules_json.h"
#include "daemon/sandboxes/sbx_network.h"

#define COPY(dst, src) snprintf((dst), sizeof(dst), "%s", (src))

int hu_sbx_store_put(struct hu_store *st, const struct hu_sbx *s, hu_err *err)
{
	struct hu_sandbox_row row = {
		.state = s->state,
		.started_at_ms = s->started_at_ms,
		.end_at_ms = s->end_at_ms,
		.timeout_s = s->timeout_s,
		.paused_at_ms = s->paused_at_ms,
		.reclaim_after_s = s->reclaim_after_s,
		.released = s->released,
		.metadata = s->metadata,
		.env_vars = s->env_vars,
		.mounts = s->mounts,
		.auto_pause = s->auto_pause,
		.auto_pause_memory = s->auto_pause_memory,
		.auto_resume = s->auto_resume,
		.allow_internet = s->allow_internet,
		.internet = s->internet,
		.cpu_millis = s->cpu_millis,
		.memory_bytes = s->memory_bytes,
		.disk_bytes = s->disk_bytes,
	};
	int rc;

	COPY(row.id, s->id);
	COPY(row.team, s->team);
	COPY(row.template_id, s->template_id);
	COPY(row.access_token, s->access_token);
	COPY(row.idem_key, s->idem_key);
	/* the network, so that a restart sets up the same one */
	row.network = hu_sbx_json_network(s);
	/* the traffic token rides with the network: a restart must keep a
	 * private sandbox private */
	if ((s->traffic_token[0] || s->mask_host[0]) && !row.network)
		row.network = json_object();
	if ((s->traffic_token[0] &&
	     (!row.network || json_object_set_new(row.network, "trafficAccessToken", json_string(s->traffic_token)) < 0)) ||
	    (s->mask_host[0] &&
	     (!row.network || json_object_set_new(row.network, "maskRequestHost", json_string(s->mask_host)) < 0))) {
		json_decref(row.network);
		return hu_err_set(err, ENOMEM, "store: encode the network of sandbox %s", s->id);
	}
	if (s->has_network && !row.network)
		return hu_err_set(err, ENOMEM, "store: encode the network of sandbox %s", s->id);
	rc = hu_store_sandbox_put(st, &row, err);
	json_decref(row.network);
	return rc;
}

/* The row as a new hu_sbx that takes its JSON values; NULL when out of memory. */
static struct hu_sbx *from_row(struct hu_sandbox_row *row)
{
	struct hu_sbx *s = calloc(1, sizeof(*s));
	hu_err ignored;

	if (!s)
		return NULL;
	COPY(s->id, row->id);
	COPY(s->team, row->team);
	COPY(s->template_id, row->template_id);
	COPY(s->access_token, row->access_token);
	COPY(s->idem_key, row->idem_key);
	s->state = row->state;
	s->started_at_ms = row->started_at_ms;
	s->end_at_ms = row->end_at_ms;
	s->timeout_s = row->timeout_s;
	s->paused_at_ms = row->paused_at_ms;
	s->reclaim_after_s = row->reclaim_after_s;
	s->released = row->released;
	s->auto_pause = row->auto_pause;
	s->auto_pause_memory = row->auto_pause_memory;
	s->auto_resume = row->auto_resume;
	s->allow_internet = row->allow_internet;
	s->internet = row->internet;
	s->cpu_millis = row->cpu_millis;
	s->memory_bytes = row->memory_bytes;
	s->disk_bytes = row->disk_bytes;
	s->metadata = row->metadata;
	s->env_vars = row->env_vars;
	s->mounts = row->mounts;
	row->metadata = row->env_vars = row->mounts = NULL;
	/* rules the store holds were valid when written; a row that no longer
	 * decodes gets none rather than wrong ones */
	const char *tt = row->network ? json_string_value(json_object_get(row->network, "trafficAccessToken")) : NULL;
	if (tt && strlen(tt) < sizeof(s->traffic_token))
		COPY(s->traffic_token, tt);
	const char *mh = row->network ? json_string_value(json_object_get(row->network, "maskRequestHost")) : NULL;
	if (mh && strlen(mh) < sizeof(s->mask_host))
		COPY(s->mask_host, mh);
	if (row->network && json_object_get(row->network, "allowOut") &&
	    hu_net_rules_from_json(row->network, &s->net_rules, &ignored) == 0)
		s->has_network = 1;
	s->last_active_ms = s->paused_at_ms ? s->paused_at_ms : s->started_at_ms;
	return s;
}

struct load {
	void (*fn)(struct hu_sbx *s, void *arg);
	void *arg;
	int oom;
};

static void on_row(struct hu_sandbox_row *row, void *arg)
{
	struct load *l = arg;
	struct hu_sbx *s = l->oom ? NULL : from_row(row);

	if (!s) {
		l->oom = 1;
		return;
	}
	l->fn(s, l->arg);
}

int hu_sbx_store_load(struct hu_store *st, void (*fn)(struct hu_sbx *s, void *arg), void *arg, hu_err *err)
{
	struct load l = {fn, arg, 0};

	if (hu_store_sandbox_load(st, on_row, &l, err) < 0)
		return -1;
	if (l.oom)
		return hu_err_set(err, ENOMEM, "store: load sandboxes");
	return 0;
}
