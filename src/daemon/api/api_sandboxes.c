/*
 * The E2B control plane: sandbox create, inspect, kill, deadlines, pause,
 * resume, connect and metrics (see docs/api.md "Control plane"). Handlers
 * decode with api_json.c, act through sandbox_ops.c and answer E2B's JSON.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "daemon/api/api_json.h"
#include "daemon/api/api_sandboxes.h"
#include "daemon/api/handlers.h"
#include "daemon/sandboxes/elsewhere.h"
#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/sandboxes/sbx_metrics.h"
#include "daemon/common/stats.h"
#include "daemon/store/store.h"
#include "daemon/sandboxes/sbx_network.h"
#include "util/parse.h"

struct hu_sbx *hu_api_own_sandbox(struct hu_req *r)
{
	struct hu_sbx *s = hu_registry_get(hu_req_daemon(r)->reg, r->param);
	char reason[256];

	if (!s || strcmp(s->team, r->principal)) {
		if (!s && hu_sbx_answer_elsewhere(r, r->param, r->principal))
			return NULL;
		/* one the daemon found dead at its start says so, for a week */
		if (hu_req_daemon(r)->store && hu_store_lost_reason(hu_req_daemon(r)->store, r->param, r->principal, reason, sizeof(reason)))
			hu_reply_error(r, 404, "sandbox %s not found: it was lost while the server was down (%s)",
				       r->param, reason);
		else
			hu_reply_error(r, 404, "sandbox %s not found", r->param);
		return NULL;
	}
	return s;
}

static void reply_sandbox(struct hu_req *r, int status, const struct hu_sbx *s)
{
	json_t *v = hu_sbx_json_sandbox(s);

	if (!v) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	hu_reply_json(r, status, v);
}

/* A refused or failed create, counted by reason for GET /metrics. */
static void count_failure(int code)
{
	hu_stat_add(code == ENOENT	 ? HU_STAT_CREATE_FAIL_TEMPLATE
		    : code == EAGAIN ? HU_STAT_CREATE_FAIL_CAPACITY
		    : code == ENOMEM ? HU_STAT_CREATE_FAIL_PRESSURE
				     : HU_STAT_CREATE_FAIL_RUNTIME,
		    1);
}

static void on_created(struct hu_daemon *d, struct hu_sbx *s, int created, const hu_err *err, void *arg)
{
	struct hu_req *r = arg;

	if (!s) {
		count_failure(err->code);
		hu_log(HU_LOG_ERROR, NULL, r->id, "%s", err->msg);
		hu_reply_err(r, err);
		return;
	}
	/* 200: the sandbox that this Idempotency-Key made earlier */
	reply_sandbox(r, created ? 201 : 200, s);
}

/* Idempotency-Key: 1..128 visible ASCII characters, or absent (NULL). */
static int idempotency_key(struct hu_req *r, const char **key)
{
	const char *k = hu_req_header(r, "Idempotency-Key");
	size_t n;

	*key = NULL;
	if (!k)
		return 0;
	n = strlen(k);
	for (size_t i = 0; i < n; i++)
		if (k[i] < 0x21 || k[i] > 0x7e) {
			hu_reply_error(r, 400, "Idempotency-Key must be visible ASCII characters (no spaces)");
			return -1;
		}
	if (n == 0 || n >= HU_IDEM_KEY_MAX) {
		hu_reply_error(r, 400, "Idempotency-Key must be 1 to %d characters", HU_IDEM_KEY_MAX - 1);
		return -1;
	}
	*key = k;
	return 0;
}

void hu_api_create_sandbox(struct hu_req *r)
{
	struct hu_new_sandbox ns;
	json_t *body;
	hu_err err;
	int rc;

	const char *key;

	if (idempotency_key(r, &key) < 0 || hu_req_json(r, &body) < 0)
		return;
	rc = hu_api_decode_new_sandbox(body, &ns, &err);
	json_decref(body);
	if (rc < 0) {
		hu_stat_add(HU_STAT_CREATE_FAIL_BAD_REQUEST, 1);
		hu_reply_error(r, 400, "%s", err.msg);
		return;
	}
	rc = hu_sbx_create_async(hu_req_daemon(r), r->principal, &ns, key, on_created, r, &err);
	hu_new_sandbox_clear(&ns);
	if (rc < 0) {
		count_failure(err.code);
		hu_log(err.code == ENOENT || err.code == EAGAIN ? HU_LOG_INFO : HU_LOG_ERROR, NULL, r->id, "%s",
		       err.msg);
		hu_reply_err(r, &err);
	}
}

void hu_api_get_sandbox(struct hu_req *r)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	json_t *v;

	if (!s)
		return;
	v = hu_sbx_json_detail(s);
	if (!v) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	hu_reply_json(r, 200, v);
}

/* Whatever teardown could not undo is logged; the sandbox is gone from the
 * API either way, so the caller gets its 204. */
static void on_killed(struct hu_daemon *d, const hu_err *err, void *arg)
{
	hu_reply_empty(arg, 204);
}

void hu_api_kill_sandbox(struct hu_req *r)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	const char *only = hu_req_query(r, "state");

	if (!s)
		return;
	/* ?state=paused (hutch): delete only if it is still paused, so that a
	 * reclaim loop acting on an older list cannot delete a sandbox that a
	 * request has resumed since; the check and the kill are one step */
	if (only && strcmp(only, "paused") && strcmp(only, "running")) {
		hu_reply_error(r, 400, "state must be paused or running");
		return;
	}
	if (only && strcmp(only, s->state == HU_SBX_PAUSED ? "paused" : "running")) {
		hu_reply_error(r, 409, "sandbox %s is %s; not deleted", s->id,
			       s->state == HU_SBX_PAUSED ? "paused" : "running");
		return;
	}
	/* answered when the teardown is complete, without holding the loop
	 * while init dies */
	hu_sbx_kill_async(hu_req_daemon(r), s, "killed by the API", on_killed, r);
}

void hu_api_set_timeout(struct hu_req *r)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	int32_t secs;
	json_t *body;
	hu_err err;
	int rc;

	if (!s || hu_req_json(r, &body) < 0)
		return;
	rc = hu_api_decode_timeout(body, &secs, &err);
	json_decref(body);
	if (rc < 0 || hu_sbx_set_timeout(hu_req_daemon(r), s, secs, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	hu_reply_empty(r, 204);
}

void hu_api_refresh(struct hu_req *r)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	int32_t secs = 0;
	int present;
	json_t *body;
	hu_err err;
	int rc;

	if (!s || hu_req_json(r, &body) < 0)
		return;
	rc = hu_api_decode_refresh(body, &present, &secs, &err);
	json_decref(body);
	if (rc < 0 || hu_sbx_extend(hu_req_daemon(r), s, present ? secs : s->timeout_s, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	hu_reply_empty(r, 204);
}

void hu_api_pause_sandbox(struct hu_req *r)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	json_t *body;
	hu_err err;
	int memory, rc;

	if (!s || hu_req_json(r, &body) < 0)
		return;
	/* memory: false keeps only the filesystem: the processes end now */
	rc = hu_api_decode_pause(body, &memory, &err);
	json_decref(body);
	if (rc < 0 || hu_sbx_pause(hu_req_daemon(r), s, !memory, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	hu_reply_empty(r, 204);
}

static int decode_connect(struct hu_req *r, const struct hu_sbx *s, struct hu_connect_req *c)
{
	json_t *body;
	hu_err err;
	int rc;

	if (hu_req_json(r, &body) < 0)
		return -1;
	rc = hu_api_decode_connect(body, c, &err);
	json_decref(body);
	if (rc < 0) {
		hu_reply_error(r, 400, "%s", err.msg);
		return -1;
	}
	return 0;
}

/* Resume s; "memory": false asks for a cold boot: a fresh init over the
 * same files, whatever the paused sandbox still held. */
static int resume(struct hu_req *r, struct hu_sbx *s, const struct hu_connect_req *c, int32_t secs, hu_err *err)
{
	if (!c->memory && !s->released && hu_sbx_release(hu_req_daemon(r), s, HU_RELEASE_ASKED, "resume without memory", err) < 0)
		return -1;
	return hu_sbx_resume(hu_req_daemon(r), s, secs, err);
}

/* POST /v2/sandboxes/{id}/connect: resume a paused sandbox (201) or extend
 * a running one's deadline to at least now + timeout (200). */
void hu_api_connect_sandbox(struct hu_req *r)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	struct hu_connect_req c;
	int32_t secs;
	hu_err err;

	if (!s || decode_connect(r, s, &c) < 0)
		return;
	secs = c.has_timeout && c.timeout_s ? c.timeout_s : (int32_t)hu_req_daemon(r)->cfg.default_timeout_s;
	if (s->state == HU_SBX_PAUSED) {
		if (resume(r, s, &c, secs, &err) < 0) {
			hu_reply_err(r, &err);
			return;
		}
		reply_sandbox(r, 201, s);
		return;
	}
	if (hu_sbx_extend(hu_req_daemon(r), s, secs, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	reply_sandbox(r, 200, s);
}

/* The deprecated POST /sandboxes/{id}/resume: 201 with the Sandbox, 409
 * when it is running. Without a timeout the sandbox's own window applies
 * (E2B's schema default of 15 s would surprise more than it helps). */
void hu_api_resume_sandbox(struct hu_req *r)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	struct hu_connect_req c;
	hu_err err;

	if (!s || decode_connect(r, s, &c) < 0)
		return;
	if (s->state == HU_SBX_RUNNING) {
		hu_reply_error(r, 409, "sandbox %s is already running", s->id);
		return;
	}
	if (resume(r, s, &c, c.has_timeout ? c.timeout_s : 0, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	reply_sandbox(r, 201, s);
}

/* ?start= / ?end= in unix seconds; *ms keeps its default when absent. */
static int query_unix(struct hu_req *r, const char *name, int64_t *ms, int end_of_second)
{
	const char *v = hu_req_query(r, name);
	uint64_t secs;
	hu_err err;

	if (!v || !*v)
		return 0;
	if (hu_parse_u64(v, &secs, &err) < 0 || secs > (uint64_t)INT32_MAX * 4) {
		hu_reply_error(r, 400, "%s must be a unix time in seconds", name);
		return -1;
	}
	*ms = (int64_t)secs * 1000 + (end_of_second ? 999 : 0);
	return 0;
}

void hu_api_get_sandbox_metrics(struct hu_req *r)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	struct hu_metric_sample fresh;
	/* no end given: up to now, including the sample taken below (a bound
	 * read before it would exclude the freshest reading) */
	int64_t start, end = INT64_MAX;
	int have_fresh;
	hu_err err;
	json_t *arr;

	if (!s)
		return;
	start = s->started_at_ms;
	if (query_unix(r, "start", &start, 0) < 0 || query_unix(r, "end", &end, 1) < 0)
		return;
	if (end < start) {
		hu_reply_error(r, 400, "end is before start");
		return;
	}
	have_fresh = hu_sbx_metrics_take(s, &fresh, &err) == 0;
	if (!have_fresh)
		hu_log(HU_LOG_WARN, s->id, r->id, "metrics: %s", err.msg);
	/* A range that ends before the sandbox started holds nothing. */
	arr = end < s->started_at_ms ? json_array() : hu_sbx_metrics_json(s, start, end, have_fresh ? &fresh : NULL);
	if (!arr) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	hu_reply_json(r, 200, arr);
}
