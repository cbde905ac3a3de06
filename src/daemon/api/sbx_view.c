/* The E2B JSON views of a sandbox (api_sandboxes.h). */
#include <stdint.h>
#include <stdio.h>

#include "daemon/api/api_json.h"
#include "util/rfc3339.h"
#include "daemon/api/api_sandboxes.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/sbx_metrics.h"
#include "daemon/sandboxes/sbx_mounts.h"
#include "daemon/sandboxes/sbx_network.h"

/* clientID is deprecated in E2B and meaningless here; the SDK requires it. */
#define CLIENT_ID "hutch"
#define MIB (1024ull * 1024ull)

/* `domain` makes the SDK's getHost(port) name this server's sandbox host
 * names; `trafficAccessToken` is null for a sandbox with public ports. */
json_t *hu_sbx_json_sandbox(const struct hu_sbx *s)
{
	const struct hu_daemon *d = s->reg ? hu_registry_daemon(s->reg) : NULL;
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "sandboxID", s->id, "templateID", s->template_id,
			 "clientID", CLIENT_ID, "envdVersion", HU_ENVD_VERSION, "envdAccessToken", s->access_token,
			 "domain", d ? json_string(d->cfg.sandbox_domain) : json_null(), "trafficAccessToken",
			 s->traffic_token[0] ? json_string(s->traffic_token) : json_null());
}

void hu_listed_of_sbx(const struct hu_sbx *s, struct hu_listed *out)
{
	snprintf(out->id, sizeof(out->id), "%s", s->id);
	snprintf(out->template_id, sizeof(out->template_id), "%s", s->template_id);
	out->state = s->state;
	out->started_at_ms = s->started_at_ms;
	out->end_at_ms = hu_lifecycle_end_at(hu_registry_daemon(s->reg), s);
	out->cpu_count = hu_sbx_cpu_count(s);
	out->memory_bytes = s->memory_bytes;
	out->disk_bytes = s->disk_bytes;
	out->metadata = json_incref(s->metadata);
}

void hu_listed_of_row(const struct hu_daemon *d, struct hu_sandbox_row *row, struct hu_listed *out)
{
	snprintf(out->id, sizeof(out->id), "%s", row->id);
	snprintf(out->template_id, sizeof(out->template_id), "%s", row->template_id);
	out->state = row->state;
	out->started_at_ms = row->started_at_ms;
	out->end_at_ms = hu_lifecycle_row_end_at(d, row);
	out->cpu_count = hu_cpu_count_of(row->cpu_millis);
	out->memory_bytes = row->memory_bytes;
	out->disk_bytes = row->disk_bytes;
	out->metadata = row->metadata;
	row->metadata = NULL;
}

void hu_listed_clear(struct hu_listed *v)
{
	json_decref(v->metadata);
	v->metadata = NULL;
}

json_t *hu_listed_json(const struct hu_listed *v)
{
	char started[HU_TIME_STR_MAX], end[HU_TIME_STR_MAX];

	hu_rfc3339_format(v->started_at_ms, started);
	hu_rfc3339_format(v->end_at_ms, end);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:O, s:s, s:s}", "sandboxID", v->id, "templateID",
			 v->template_id, "clientID", CLIENT_ID, "startedAt", started, "endAt", end, "cpuCount",
			 v->cpu_count, "memoryMB", (json_int_t)(v->memory_bytes / MIB), "diskSizeMB",
			 (json_int_t)(v->disk_bytes / MIB), "metadata", v->metadata, "state",
			 v->state == HU_SBX_PAUSED ? "paused" : "running", "envdVersion", HU_ENVD_VERSION);
}

json_t *hu_sbx_json_listed(const struct hu_sbx *s)
{
	struct hu_listed v;

	hu_listed_of_sbx(s, &v);
	json_t *out = hu_listed_json(&v);
	hu_listed_clear(&v);
	return out;
}

json_t *hu_sbx_json_detail(const struct hu_sbx *s)
{
	json_t *v = hu_sbx_json_listed(s);
	json_t *allow = s->allow_internet < 0 ? json_null() : json_boolean(s->allow_internet);
	json_t *net = hu_sbx_json_network(s);

	if (!v || json_object_set_new(v, "envdAccessToken", json_string(s->access_token)) < 0 ||
	    json_object_set_new(v, "allowInternetAccess", allow) < 0 ||
	    json_object_set_new(v, "memoryReleased", json_boolean(s->released)) < 0 ||
	    json_object_set_new(v, "lifecycle",
				json_pack("{s:s, s:b}", "onTimeout", s->auto_pause ? "pause" : "kill", "autoResume",
					  s->auto_resume)) < 0 ||
	    json_object_set_new(v, "volumeMounts", hu_sbx_volume_mounts_json(s)) < 0) {
		json_decref(v);
		json_decref(net);
		return NULL;
	}
	if (net && json_object_set_new(v, "network", net) < 0) {
		json_decref(v);
		return NULL;
	}
	return v;
}
