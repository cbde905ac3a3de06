/* Control-plane JSON bodies -> structs (api_json.h). */
#include "daemon/api/api_json.h"

#include "daemon/sandboxes/net_rules_json.h"

#include "daemon/api/metadata_filter.h"
#include "daemon/api/mounts_json.h"
#include "daemon/sandboxes/registry.h"
#include "util/hex.h"
#include "util/rfc3339.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Errors here are the client's: a negative code keeps strerror's
 * "Invalid argument" out of the message the API shows (err.c). */
#define BAD(err, ...) hu_err_set((err), -EINVAL, __VA_ARGS__)

/* A field, or NULL when absent or JSON null. */
static const json_t *field(const json_t *obj, const char *name)
{
	const json_t *v = json_object_get(obj, name);
	return json_is_null(v) ? NULL : v;
}

static int require_object(const json_t *body, hu_err *err)
{
	if (!json_is_object(body))
		return BAD(err, "the request body must be a JSON object");
	return 0;
}

/* An optional boolean: *out keeps its default when absent. */
static int opt_bool(const json_t *obj, const char *name, int *out, hu_err *err)
{
	const json_t *v = field(obj, name);
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return BAD(err, "%s must be a boolean", name);
	*out = json_is_true(v);
	return 0;
}

/* Without libm: the range check keeps the cast defined. */
static int is_whole(double d)
{
	return d > -1e15 && d < 1e15 && (double)(long long)d == d;
}

/* An optional number of seconds in [0, HU_TIMEOUT_MAX_S]. Integral reals
 * (300.0) are accepted: JSON does not distinguish them. */
/* Seconds 0..max, or -1 for "never" (timeouts, reclaimAfter). */
static int opt_seconds_upto(const json_t *obj, const char *name, double max, int *present, int32_t *out,
			    hu_err *err);

static int opt_seconds(const json_t *obj, const char *name, int *present, int32_t *out, hu_err *err)
{
	return opt_seconds_upto(obj, name, HU_TIMEOUT_MAX_S, present, out, err);
}

static int opt_seconds_upto(const json_t *obj, const char *name, double max, int *present, int32_t *out,
			    hu_err *err)
{
	const json_t *v = field(obj, name);
	double d;

	*present = 0;
	if (!v)
		return 0;
	if (json_is_integer(v))
		d = (double)json_integer_value(v);
	else if (json_is_real(v) && is_whole(json_real_value(v)))
		d = json_real_value(v);
	else
		return BAD(err, "%s must be an integer number of seconds", name);
	if (d < 0 && d != -1)
		return BAD(err, "%s must be seconds, or -1 for never (got %.0f)", name, d);
	if (d > max)
		return BAD(err, "%s must be at most %.0f seconds, got %.0f", name, max, d);
	*present = 1;
	*out = (int32_t)d;
	return 0;
}

/* A string without NUL bytes (they would truncate at the C and SQL layer). */
static int clean_string(const json_t *v, size_t max, size_t *len)
{
	if (!json_is_string(v))
		return 0;
	*len = json_string_length(v);
	return *len <= max && strlen(json_string_value(v)) == *len;
}

/* An environment variable name: what execve can carry and a shell can use. */
static int env_name_ok(const char *k)
{
	if (!*k || isdigit((unsigned char)*k))
		return 0;
	for (; *k; k++)
		if (!isalnum((unsigned char)*k) && *k != '_')
			return 0;
	return 1;
}

/* An optional object of string -> string; *out is a new object (empty when
 * absent). */
static int opt_string_map(const json_t *obj, const char *name, int env_names, json_t **out, hu_err *err)
{
	const json_t *v = field(obj, name);
	const char *k;
	json_t *val;
	size_t len;

	*out = NULL;
	if (v && !json_is_object(v))
		return BAD(err, "%s must be an object of strings", name);
	if (v && json_object_size(v) > HU_MAP_MAX_ENTRIES)
		return BAD(err, "%s has %zu entries; at most %d are allowed", name, json_object_size(v),
			   HU_MAP_MAX_ENTRIES);
	if (v) {
		json_object_foreach((json_t *)v, k, val) {
			if (!*k || strlen(k) > HU_MAP_KEY_MAX)
				return BAD(err, "%s: keys must be 1 to %d bytes", name, HU_MAP_KEY_MAX);
			if (env_names && !env_name_ok(k))
				return BAD(err, "%s: '%.64s' is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)",
					   name, k);
			if (!json_is_string(val))
				return BAD(err, "%s.%.64s must be a string", name, k);
			if (!clean_string(val, HU_MAP_VALUE_MAX, &len))
				return BAD(err, "%s.%.64s must be at most %d bytes without NUL", name, k,
					   HU_MAP_VALUE_MAX);
		}
	}
	*out = v ? json_deep_copy(v) : json_object();
	if (!*out)
		return hu_err_set(err, ENOMEM, "copy %s", name);
	return 0;
}

static int decode_template(const json_t *body, char *out, size_t n, hu_err *err)
{
	const json_t *v = field(body, "templateID");
	size_t len;

	if (!v) {
		snprintf(out, n, "base");
		return 0;
	}
	if (!json_is_string(v))
		return BAD(err, "templateID must be a string");
	if (!clean_string(v, n - 1, &len) || len == 0)
		return BAD(err, "templateID must be 1 to %zu bytes", n - 1);
	memcpy(out, json_string_value(v), len + 1);
	return 0;
}

/* autoResume is {"enabled": bool}; it only makes sense with autoPause
 * (a killed sandbox cannot resume) and a memory-keeping pause, as the SDK
 * and E2B both insist. */
static int decode_lifecycle(const json_t *body, struct hu_new_sandbox *ns, hu_err *err)
{
	const json_t *ar = field(body, "autoResume");

	if (opt_bool(body, "autoPause", &ns->auto_pause, err) < 0 ||
	    opt_bool(body, "autoPauseMemory", &ns->auto_pause_memory, err) < 0)
		return -1;
	if (ar && !json_is_object(ar))
		return BAD(err, "autoResume must be an object {\"enabled\": bool}");
	if (ar && opt_bool(ar, "enabled", &ns->auto_resume, err) < 0) {
		hu_err_prefix(err, "autoResume");
		return -1;
	}
	if (ns->auto_resume && !ns->auto_pause)
		return BAD(err, "autoResume requires autoPause (a sandbox killed on timeout cannot resume)");
	if (ns->auto_resume && !ns->auto_pause_memory)
		return BAD(err, "autoResume cannot be combined with autoPauseMemory: false");
	return 0;
}

/* volumeMounts and metadata["host-mount"] (after metadata is decoded);
 * ns->mounts stays NULL when there are none. */
static int decode_mounts(const json_t *body, struct hu_new_sandbox *ns, hu_err *err)
{
	const json_t *vm = field(body, "volumeMounts");
	const json_t *hm = json_object_get(ns->metadata, HU_HOST_MOUNT_KEY);

	if (!hm && (!vm || (json_is_array(vm) && json_array_size(vm) == 0)))
		return 0;
	ns->mounts = calloc(1, sizeof(*ns->mounts));
	if (!ns->mounts)
		return hu_err_set(err, ENOMEM, "mounts");
	if (hu_api_decode_volume_mounts(vm, ns->mounts, err) < 0 ||
	    (hm && hu_api_decode_host_mounts(json_string_value(hm), ns->mounts, err) < 0))
		return -1;
	return 0;
}

int hu_api_decode_network(const json_t *net, struct hu_net_rules *rules, hu_err *err)
{
	const json_t *rl = field(net, "rules");

	memset(rules, 0, sizeof(*rules));
	if (!json_is_object(net))
		return BAD(err, "network must be an object");
	if (field(net, "egressProxy"))
		return BAD(err, "network.egressProxy is not supported by this server");
	if (rl && (!json_is_object(rl) || json_object_size(rl) > 0))
		return BAD(err, "network.rules (per-host transforms) are not supported by this server");
	return hu_net_rules_from_json(net, rules, err);
}

int hu_api_decode_network_update(const json_t *body, struct hu_net_rules *rules, int *allow_internet, hu_err *err)
{
	*allow_internet = -1;
	if (require_object(body, err) < 0 || opt_bool(body, "allow_internet_access", allow_internet, err) < 0)
		return -1;
	return hu_api_decode_network(body, rules, err);
}

int hu_api_decode_new_sandbox(const json_t *body, struct hu_new_sandbox *out, hu_err *err)
{
	struct hu_new_sandbox ns = {.allow_internet = -1, .auto_pause_memory = 1};
	int present, allow = -1;

	*out = (struct hu_new_sandbox){.allow_internet = -1, .auto_pause_memory = 1};
	if (require_object(body, err) < 0 || decode_template(body, ns.template_id, sizeof(ns.template_id), err) < 0 ||
	    opt_seconds(body, "timeout", &present, &ns.timeout_s, err) < 0 ||
	    opt_bool(body, "allow_internet_access", &allow, err) < 0 || decode_lifecycle(body, &ns, err) < 0 ||
	    opt_seconds_upto(body, "reclaimAfter", HU_RECLAIM_MAX_S, &present, &ns.reclaim_after_s, err) < 0)
		return -1;
	if (present && ns.reclaim_after_s == 0)
		return BAD(err, "reclaimAfter must be at least 1 second, or -1 for never");
	if (field(body, "network")) {
		if (hu_api_decode_network(field(body, "network"), &ns.net, err) < 0)
			return -1;
		ns.has_network = 1;
		int public_traffic = -1;
		if (opt_bool(field(body, "network"), "allowPublicTraffic", &public_traffic, err) < 0)
			return -1;
		ns.private_traffic = public_traffic == 0;
		const json_t *mask = field(field(body, "network"), "maskRequestHost");
		if (mask) {
			const char *m = json_string_value(mask);
			size_t ml = m ? strlen(m) : 0;
			/* it becomes a header line: printable ASCII, no spaces */
			if (!m || ml == 0 || ml >= sizeof(ns.mask_host) || strspn(m, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:[]${}") != ml)
				return BAD(err, "network.maskRequestHost must be a host name with an optional :port or :${PORT}");
			snprintf(ns.mask_host, sizeof(ns.mask_host), "%s", m);
		}
		if (allow == 0 && hu_net_rules_any(&ns.net))
			return BAD(err, "network rules need allow_internet_access (it is false)");
	}
	ns.allow_internet = allow;
	if (opt_string_map(body, "metadata", 0, &ns.metadata, err) < 0)
		return -1;
	if (opt_string_map(body, "envVars", 1, &ns.env_vars, err) < 0 || decode_mounts(body, &ns, err) < 0) {
		hu_new_sandbox_clear(&ns);
		return -1;
	}
	*out = ns;
	return 0;
}

void hu_new_sandbox_clear(struct hu_new_sandbox *ns)
{
	json_decref(ns->metadata);
	json_decref(ns->env_vars);
	free(ns->mounts);
	ns->metadata = ns->env_vars = NULL;
	ns->mounts = NULL;
}

int hu_api_decode_timeout(const json_t *body, int32_t *seconds, hu_err *err)
{
	int present;

	if (require_object(body, err) < 0 || opt_seconds(body, "timeout", &present, seconds, err) < 0)
		return -1;
	if (!present)
		return BAD(err, "timeout is required (seconds)");
	return 0;
}

int hu_api_decode_refresh(const json_t *body, int *present, int32_t *seconds, hu_err *err)
{
	if (require_object(body, err) < 0)
		return -1;
	return opt_seconds(body, "duration", present, seconds, err);
}

int hu_api_decode_connect(const json_t *body, struct hu_connect_req *out, hu_err *err)
{
	struct hu_connect_req c = {.memory = 1};
	int auto_pause = 0;

	*out = c;
	/* autoPause (deprecated, resume only) is type-checked and ignored: the
	 * sandbox's lifecycle was fixed at create. */
	if (require_object(body, err) < 0 || opt_seconds(body, "timeout", &c.has_timeout, &c.timeout_s, err) < 0 ||
	    opt_bool(body, "memory", &c.memory, err) < 0 || opt_bool(body, "autoPause", &auto_pause, err) < 0)
		return -1;
	*out = c;
	return 0;
}

int hu_api_decode_pause(const json_t *body, int *memory, hu_err *err)
{
	int m = 1;

	*memory = 1;
	if (require_object(body, err) < 0 || opt_bool(body, "memory", &m, err) < 0)
		return -1;
	*memory = m;
	return 0;
}


/* The token is the hex of "<startedAt ms>:<id>": opaque to clients (they
 * pass it back unchanged), cheap to validate strictly. */
void hu_list_token_encode(int64_t started_ms, const char *id, char out[HU_LIST_TOKEN_MAX])
{
	char plain[24 + HU_ID_MAX];
	int n = snprintf(plain, sizeof(plain), "%lld:%s", (long long)started_ms, id);

	if (n < 0 || (size_t)n >= sizeof(plain))
		n = (int)strlen(plain);

	/* n < sizeof(plain), so 2 * n + 1 <= HU_LIST_TOKEN_MAX */
	hu_hex_encode(plain, (size_t)n, out);
}

/* Strict: only the lower-case digits hu_hex_encode writes. */
static const char hexdigits[] = "0123456789abcdef";

static int hexnib(char c)
{
	const char *p = c ? strchr(hexdigits, c) : NULL;
	return p ? (int)(p - hexdigits) : -1;
}

static int decode_token(const char *tok, struct hu_list_query *q, hu_err *err)
{
	char plain[24 + HU_ID_MAX], *colon, *end;
	size_t n = strlen(tok);
	long long ms;

	if (n == 0 || n % 2 || n / 2 >= sizeof(plain))
		return BAD(err, "nextToken is not a token this server issued");
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hexnib(tok[2 * i]), lo = hexnib(tok[2 * i + 1]);
		if (hi < 0 || lo < 0 || (hi | lo) == 0)
			return BAD(err, "nextToken is not a token this server issued");
		plain[i] = (char)(hi << 4 | lo);
	}
	plain[n / 2] = '\0';
	colon = strchr(plain, ':');
	if (!colon || colon == plain || !colon[1] || strlen(colon + 1) >= HU_ID_MAX)
		return BAD(err, "nextToken is not a token this server issued");
	*colon = '\0';
	errno = 0;
	ms = strtoll(plain, &end, 10);
	if (errno || *end || !isdigit((unsigned char)plain[0]))
		return BAD(err, "nextToken is not a token this server issued");
	for (const char *c = colon + 1; *c; c++)
		if (!islower((unsigned char)*c) && !isdigit((unsigned char)*c) && *c != '-')
			return BAD(err, "nextToken is not a token this server issued");
	q->has_cursor = 1;
	q->cursor_started_ms = ms;
	snprintf(q->cursor_id, sizeof(q->cursor_id), "%s", colon + 1);
	return 0;
}

/* "running,paused" (the SDK joins the array with commas). */
static int decode_states(const char *v, unsigned *out, hu_err *err)
{
	const char *p = v;

	*out = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		if (len == 7 && !strncmp(p, "running", 7))
			*out |= HU_STATE_BIT(HU_SBX_RUNNING);
		else if (len == 6 && !strncmp(p, "paused", 6))
			*out |= HU_STATE_BIT(HU_SBX_PAUSED);
		else if (len)
			return BAD(err, "state: '%.*s' is not running or paused", (int)(len > 32 ? 32 : len), p);
		p += len + (p[len] == ',');
	}
	if (!*out) /* "state=" alone: no filter */
		*out = HU_STATE_BIT(HU_SBX_RUNNING) | HU_STATE_BIT(HU_SBX_PAUSED);
	return 0;
}

static int decode_limit(const char *v, size_t *out, hu_err *err)
{
	size_t n = 0;

	if (!*v || strlen(v) > 7)
		return BAD(err, "limit must be an integer from 1 to %d", HU_LIST_MAX_LIMIT);
	for (const char *c = v; *c; c++) {
		if (!isdigit((unsigned char)*c))
			return BAD(err, "limit must be an integer from 1 to %d", HU_LIST_MAX_LIMIT);
		n = n * 10 + (size_t)(*c - '0');
	}
	if (n < 1 || n > HU_LIST_MAX_LIMIT)
		return BAD(err, "limit must be an integer from 1 to %d", HU_LIST_MAX_LIMIT);
	*out = n;
	return 0;
}

int hu_api_decode_list_query(const struct hu_list_params *p, struct hu_list_query *q, hu_err *err)
{
	*q = (struct hu_list_query){
		.states = HU_STATE_BIT(HU_SBX_RUNNING) | HU_STATE_BIT(HU_SBX_PAUSED),
		.limit = HU_LIST_DEFAULT_LIMIT,
		.template_id = p->template_id && *p->template_id ? p->template_id : NULL,
	};
	if (p->order && strcmp(p->order, "desc")) {
		if (strcmp(p->order, "asc"))
			return BAD(err, "order must be asc or desc");
		q->asc = 1;
	}
	if ((p->state && decode_states(p->state, &q->states, err) < 0) ||
	    (p->limit && decode_limit(p->limit, &q->limit, err) < 0) ||
	    (p->next_token && *p->next_token && decode_token(p->next_token, q, err) < 0))
		return -1;
	if (p->started_after && *p->started_after) {
		if (hu_rfc3339_parse(p->started_after, &q->started_after_ms, err) < 0) {
			hu_err_prefix(err, "startedAfter");
			return -1;
		}
		q->has_started_after = 1;
	}
	if (p->metadata && *p->metadata && hu_metadata_filter_parse(p->metadata, &q->metadata, err) < 0)
		return -1;
	return 0;
}

void hu_list_query_clear(struct hu_list_query *q)
{
	json_decref(q->metadata);
	q->metadata = NULL;
}
