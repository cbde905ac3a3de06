/*
 * GET /sandboxes/{id}/logs and GET /v2/sandboxes/{id}/logs (E2B shapes):
 * the daemon's persisted log lines about that sandbox (its create, pauses,
 * resumes, memory releases, errors), read back from <data_dir>/logs/
 * hutch.log and its rotated predecessors, oldest first. A scan of at most
 * six 10 MiB files, done only when asked; lines are matched on
 * "sandbox=<id> " before they are parsed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api_json.h"
#include "util/rfc3339.h"
#include "daemon/api/api_sandboxes.h"
#include "daemon/common/log_parse.h"
#include "daemon/api/handlers.h"
#include "util/parse.h"

#define LOGS_DEFAULT_LIMIT 1000
#define LOGS_MAX_LIMIT 10000
#define LOG_FILES 6 /* hutch.log.5 .. hutch.log.1, hutch.log */

struct logs_query {
	int64_t from_ms;     /* entries at or after (forward) / before (backward) */
	size_t limit;
	int backward;
	int min_level;       /* 0 debug .. 3 error */
	const char *search;  /* substring of the message, or NULL */
	int v2;
};

static int level_rank(const char *level)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	for (int i = 0; i < 4; i++)
		if (!strcmp(level, names[i]))
			return i;
	return -1;
}

static json_t *entry_json(const struct hu_log_entry *e)
{
	char ts[HU_TIME_STR_MAX];

	hu_rfc3339_format(e->time_ms, ts);
	json_t *fields = json_pack("{s:s}", "sandboxID", e->sandbox);
	if (fields && e->req[0])
		json_object_set_new(fields, "requestID", json_string(e->req));
	json_t *v = json_pack("{s:s, s:s, s:o, s:o}", "timestamp", ts, "level", e->level, "message", hu_json_text(e->msg),
			      "fields", fields ? fields : json_object());
	return v;
}

/* Append the matching entries of one file to out (keeping at most limit:
 * the first ones going forward, the last ones going backward). */
static void scan_file(const char *path, const char *needle, const struct logs_query *q, json_t *out,
		      struct hu_log_entry *e)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		return; /* not rotated that far yet */
	while ((n = getline(&line, &cap, f)) > 0) {
		if (!q->backward && json_array_size(out) >= q->limit)
			break;
		if (!memmem(line, (size_t)n, needle, strlen(needle)) || hu_log_parse_line(line, (size_t)n, e) < 0)
			continue;
		if (level_rank(e->level) < q->min_level || (q->search && !strstr(e->msg, q->search)))
			continue;
		if (q->backward ? e->time_ms >= q->from_ms : e->time_ms < q->from_ms)
			continue;
		json_t *v = entry_json(e);
		if (!v)
			continue;
		json_array_append_new(out, v);
		if (q->backward && json_array_size(out) > q->limit)
			json_array_remove(out, 0);
	}
	free(line);
	fclose(f);
}

static json_t *collect(struct hu_req *r, const char *id, const struct logs_query *q)
{
	char path[PATH_MAX + 32], needle[HU_ID_MAX + 16];
	struct hu_log_entry *e = malloc(sizeof(*e));
	json_t *out = json_array();

	if (!e || !out) {
		free(e);
		json_decref(out);
		return NULL;
	}
	snprintf(needle, sizeof(needle), " sandbox=%s ", id);
	for (int i = LOG_FILES - 1; i >= 0; i--) {
		if (i)
			snprintf(path, sizeof(path), "%s/logs/hutch.log.%d", hu_req_daemon(r)->cfg.data_dir, i);
		else
			snprintf(path, sizeof(path), "%s/logs/hutch.log", hu_req_daemon(r)->cfg.data_dir);
		scan_file(path, needle, q, out, e);
	}
	free(e);
	return out;
}

/* limit= (1..10000), a unix-ms timestamp, level=, direction=. */
static int parse_query(struct hu_req *r, struct logs_query *q)
{
	const char *limit = hu_req_query(r, "limit"), *start = hu_req_query(r, q->v2 ? "cursor" : "start");
	const char *dir = hu_req_query(r, "direction"), *level = hu_req_query(r, "level");
	uint64_t v;
	hu_err err;

	q->limit = LOGS_DEFAULT_LIMIT;
	q->from_ms = 0;
	q->search = hu_req_query(r, "search");
	if (limit && *limit) {
		if (hu_parse_u64(limit, &v, &err) < 0 || v < 1 || v > LOGS_MAX_LIMIT) {
			hu_reply_error(r, 400, "limit must be 1..%d", LOGS_MAX_LIMIT);
			return -1;
		}
		q->limit = (size_t)v;
	}
	if (dir && *dir && strcmp(dir, "forward") && strcmp(dir, "backward")) {
		hu_reply_error(r, 400, "direction must be forward or backward");
		return -1;
	}
	q->backward = dir && !strcmp(dir, "backward");
	if (start && *start) {
		if (hu_parse_u64(start, &v, &err) < 0 || v > (uint64_t)INT64_MAX / 2) {
			hu_reply_error(r, 400, "%s must be a unix time in milliseconds", q->v2 ? "cursor" : "start");
			return -1;
		}
		q->from_ms = (int64_t)v;
	} else if (q->backward) {
		q->from_ms = INT64_MAX;
	}
	if (level && *level && (q->min_level = level_rank(level)) < 0) {
		hu_reply_error(r, 400, "level must be debug, info, warn or error");
		return -1;
	}
	return 0;
}

static void get_logs(struct hu_req *r, int v2)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	struct logs_query q = {.v2 = v2};
	json_t *entries, *body;

	if (!s || parse_query(r, &q) < 0)
		return;
	entries = collect(r, s->id, &q);
	if (!entries) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	if (v2) {
		body = json_pack("{s:o}", "logs", entries);
	} else {
		json_t *lines = json_array();
		size_t i;
		json_t *e;
		json_array_foreach(entries, i, e)
			json_array_append_new(lines, json_pack("{s:O, s:O}", "timestamp", json_object_get(e, "timestamp"),
							       "line", json_object_get(e, "message")));
		body = json_pack("{s:o, s:o}", "logs", lines, "logEntries", entries);
	}
	if (!body) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	hu_reply_json(r, 200, body);
}

void hu_api_get_logs_v1(struct hu_req *r)
{
	get_logs(r, 0);
}

void hu_api_get_logs_v2(struct hu_req *r)
{
	get_logs(r, 1);
}
