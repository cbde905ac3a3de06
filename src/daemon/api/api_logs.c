/*
 * GET /sandboxes/{id}/logs and GET /v2/sandboxes/{id}/logs (E2B shapes):
 * the daemon's persisted log lines about that sandbox (its create, pauses,
 * resumes, memory releases, errors), read back from <data_dir>/logs/
 * hutch.log and its rotated predecessors, oldest first. A scan of at most
 * six 10 MiB files, done only when asked; lines are matched on
 * "sandbox=<id> " before they are parsed.
 *
 * The scan never holds the event loop: it reads SLICE_BYTES at a time and
 * yields to the loop between slices (a zero timer, which runs after the
 * loop has polled for I/O again), and at most MAX_SCANS run at once (429
 * above), so other requests are answered while one reads 60 MiB.
 */
#include <event2/event.h>
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
#define SLICE_BYTES (256u << 10)
#define MAX_SCANS 2

static unsigned scans_running; /* one event loop per daemon: no lock */
static struct logs_job *scans;  /* the running ones, for a shutdown */

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

struct logs_job {
	struct logs_job *next;
	struct hu_req *r;
	struct logs_query q;
	char needle[HU_ID_MAX + 16];
	int file;            /* the next file to open: LOG_FILES-1 (oldest) .. 0 */
	FILE *f;             /* the file being read, or NULL */
	char *line;
	size_t cap;
	json_t *out;
	struct hu_log_entry e;
	struct event *tick;
};

static void reply_entries(struct hu_req *r, int v2, json_t *entries);

static void job_free(struct logs_job *j)
{
	for (struct logs_job **p = &scans; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			break;
		}
	if (j->tick)
		event_free(j->tick);
	if (j->f)
		fclose(j->f);
	free(j->line);
	json_decref(j->out);
	free(j);
	scans_running--;
}

/* Take one line; false once the limit is reached going forward. */
static bool take_line(struct logs_job *j, const char *line, size_t n)
{
	const struct logs_query *q = &j->q;
	struct hu_log_entry *e = &j->e;

	if (!q->backward && json_array_size(j->out) >= q->limit)
		return false;
	if (!memmem(line, n, j->needle, strlen(j->needle)) || hu_log_parse_line(line, n, e) < 0)
		return true;
	if (level_rank(e->level) < q->min_level || (q->search && !strstr(e->msg, q->search)))
		return true;
	if (q->backward ? e->time_ms >= q->from_ms : e->time_ms < q->from_ms)
		return true;
	json_t *v = entry_json(e);
	if (!v)
		return true;
	json_array_append_new(j->out, v);
	if (q->backward && json_array_size(j->out) > q->limit)
		json_array_remove(j->out, 0);
	return true;
}

/* Read one slice; true when the scan is complete. */
static bool scan_slice(struct logs_job *j)
{
	char path[PATH_MAX + 32];
	size_t done = 0;
	ssize_t n;

	while (done < SLICE_BYTES) {
		if (!j->f) {
			if (j->file < 0)
				return true;
			const char *dir = hu_req_daemon(j->r)->cfg.data_dir;
			if (j->file)
				snprintf(path, sizeof(path), "%s/logs/hutch.log.%d", dir, j->file);
			else
				snprintf(path, sizeof(path), "%s/logs/hutch.log", dir);
			j->file--;
			j->f = fopen(path, "re"); /* NULL: not rotated that far yet */
			continue;
		}
		if ((n = getline(&j->line, &j->cap, j->f)) <= 0) {
			fclose(j->f);
			j->f = NULL;
			continue;
		}
		done += (size_t)n;
		if (!take_line(j, j->line, (size_t)n))
			return true;
	}
	return false;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct logs_job *j = arg;
	static const struct timeval now = {0, 0};

	if (!scan_slice(j)) {
		evtimer_add(j->tick, &now);
		return;
	}
	json_t *entries = j->out;
	j->out = NULL;
	reply_entries(j->r, j->q.v2, entries);
	job_free(j);
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

/* Answer r with entries (stolen) in the v1 or v2 shape. */
static void reply_entries(struct hu_req *r, int v2, json_t *entries)
{
	json_t *body;

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

static void get_logs(struct hu_req *r, int v2)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	static const struct timeval now = {0, 0};
	struct logs_query q = {.v2 = v2};

	if (!s || parse_query(r, &q) < 0)
		return;
	if (scans_running >= MAX_SCANS) {
		hu_reply_error(r, 429, "%u log reads are in progress; retry in a moment", scans_running);
		return;
	}
	struct logs_job *j = calloc(1, sizeof(*j));
	if (!j) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	scans_running++;
	*j = (struct logs_job){.next = scans, .r = r, .q = q, .file = LOG_FILES - 1, .out = json_array()};
	scans = j;
	snprintf(j->needle, sizeof(j->needle), " sandbox=%s ", s->id);
	j->tick = evtimer_new(hu_req_daemon(r)->base, on_tick, j);
	if (!j->out || !j->tick || evtimer_add(j->tick, &now) < 0) {
		hu_reply_error(r, 500, "out of memory");
		job_free(j);
	}
}

void hu_api_get_logs_v1(struct hu_req *r)
{
	get_logs(r, 0);
}

void hu_api_get_logs_v2(struct hu_req *r)
{
	get_logs(r, 1);
}

void hu_api_abort_log_scans(struct hu_daemon *d)
{
	(void)d;
	while (scans) {
		struct logs_job *j = scans;
		hu_reply_error(j->r, 503, "the server is shutting down");
		job_free(j);
	}
}
