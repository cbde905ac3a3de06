/*
 * GET /sandboxes/{id}/logs and GET /v2/sandboxes/{id}/logs (E2B shapes):
 * the daemon's persisted log lines about that sandbox (its create, pauses,
 * resumes, memory releases, errors), read back from <data_dir>/logs/
 * hutch.log and its rotated predecessors, oldest first. Lines are matched
 * on "sandbox=<id> " before they are parsed.
 *
 * The reply is streamed, and the loop is never held: the files (at most
 * six of 10 MiB) are read SLICE_BYTES at a time, yielding to the loop
 * between slices (a zero timer, which runs after the loop has polled for I/O
 * again); each entry found is written to a chunked reply at once, and the
 * reading pauses while more than HIGH_WATER bytes wait for a slow client
 * (resumed when it drained). Memory is therefore one line and one slice's
 * output, whatever the log or the limit. The shapes need more than one
 * pass over the files: backward first counts the matching entries (to skip
 * all but the last `limit`), and v1 writes its two arrays ("logs", then
 * "logEntries") from one pass each. A rotation during a read may shift
 * what a later pass sees; every pass stops at `limit` entries. At most
 * MAX_SCANS run at once (429 above).
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api_json.h"
#include "util/rfc3339.h"
#include "daemon/api/api_sandboxes.h"
#include "daemon/common/log_parse.h"
#include "daemon/http/connect.h"
#include "daemon/api/handlers.h"
#include "util/parse.h"

#define LOGS_DEFAULT_LIMIT 1000
#define LOGS_MAX_LIMIT 10000
#define LOG_FILES 6 /* hutch.log.5 .. hutch.log.1, hutch.log */
#define SLICE_BYTES (256u << 10)
#define HIGH_WATER (256u << 10)
#define MAX_SCANS 4

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

/* The passes of a read: what each one writes. */
enum logs_pass { PASS_COUNT, PASS_LINES, PASS_ENTRIES, PASS_DONE };

struct logs_job {
	struct logs_job *next;
	struct hu_req *r;
	struct hu_stream *stream; /* the reply, once started */
	struct logs_query q;
	char needle[HU_ID_MAX + 16];
	enum logs_pass pass;
	int file;            /* the next file to open: LOG_FILES-1 (oldest) .. 0 */
	FILE *f;             /* the file being read, or NULL */
	char *line;
	size_t cap;
	size_t matched;      /* entries matched in this pass */
	size_t skip;         /* entries to leave out at the start (backward) */
	size_t written;      /* entries written in this pass */
	bool paused;         /* the client is slow: no slice until it drained */
	struct hu_log_entry e;
	struct event *tick;
};

static const struct timeval now_tv = {0, 0};

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
	free(j);
	scans_running--;
}

/* Does the line match the query? Parses it into j->e. */
static bool line_matches(struct logs_job *j, const char *line, size_t n)
{
	const struct logs_query *q = &j->q;
	struct hu_log_entry *e = &j->e;

	if (!memmem(line, n, j->needle, strlen(j->needle)) || hu_log_parse_line(line, n, e) < 0)
		return false;
	if (level_rank(e->level) < q->min_level || (q->search && !strstr(e->msg, q->search)))
		return false;
	return q->backward ? e->time_ms < q->from_ms : e->time_ms >= q->from_ms;
}

/* Write text to the reply; false when the client is gone or memory short. */
static bool put(struct logs_job *j, const char *text)
{
	int rc = hu_stream_send_bytes(j->stream, text, strlen(text));
	if (rc > 0)
		j->paused = true;
	return rc >= 0;
}

/* One matching entry, in this pass's shape. */
static bool put_entry(struct logs_job *j)
{
	json_t *v = entry_json(&j->e);
	if (!v)
		return false;
	if (j->pass == PASS_LINES) {
		json_t *line = json_pack("{s:O, s:O}", "timestamp", json_object_get(v, "timestamp"), "line",
					 json_object_get(v, "message"));
		json_decref(v);
		if (!(v = line))
			return false;
	}
	char *text = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (!text)
		return false;
	bool ok = (!j->written || put(j, ",")) && put(j, text);
	free(text);
	j->written++;
	return ok;
}

/* Take one line; false when the pass has what it needs (or failed: then
 * j->pass is PASS_DONE and the stream is cut). */
static bool take_line(struct logs_job *j, const char *line, size_t n)
{
	if (!line_matches(j, line, n))
		return true;
	if (j->pass == PASS_COUNT) {
		j->matched++;
		return true;
	}
	if (j->matched++ < j->skip)
		return true;
	if (!put_entry(j)) {
		hu_stream_abort(j->stream, "out of memory, or the client left");
		j->stream = NULL;
		j->pass = PASS_DONE;
		return false;
	}
	return j->written < j->q.limit;
}

/* The text between passes: what ends one and opens the next. */
static const char *pass_opening(const struct logs_job *j, enum logs_pass p)
{
	if (p == PASS_LINES)
		return "{\"logs\":[";
	/* v2 has one array of entries, named logs; v1 names it logEntries */
	return j->q.v2 ? "{\"logs\":[" : "],\"logEntries\":[";
}

/* The pass that follows p for this query. */
static enum logs_pass next_pass(const struct logs_job *j, enum logs_pass p)
{
	if (p == PASS_COUNT)
		return j->q.v2 ? PASS_ENTRIES : PASS_LINES;
	if (p == PASS_LINES)
		return PASS_ENTRIES;
	return PASS_DONE;
}

/* The current pass is over: start the next, or end the reply. */
static void end_pass(struct logs_job *j)
{
	if (j->f) {
		fclose(j->f);
		j->f = NULL;
	}
	j->file = LOG_FILES - 1;
	if (j->pass == PASS_COUNT && j->q.backward)
		j->skip = j->matched > j->q.limit ? j->matched - j->q.limit : 0;
	enum logs_pass p = next_pass(j, j->pass);
	if (p == PASS_DONE) {
		if (put(j, "]}"))
			hu_stream_finish(j->stream);
		else
			hu_stream_abort(j->stream, "out of memory");
		j->stream = NULL;
	} else if (!put(j, pass_opening(j, p))) {
		hu_stream_abort(j->stream, "out of memory");
		j->stream = NULL;
		p = PASS_DONE;
	}
	j->pass = p;
	j->matched = 0;
	j->written = 0;
}

/* Read one slice; true when the current pass is complete. */
static bool scan_slice(struct logs_job *j)
{
	char path[PATH_MAX + 32];
	size_t done = 0;
	ssize_t n;

	while (done < SLICE_BYTES && !j->paused) {
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

	if (j->pass != PASS_DONE && scan_slice(j))
		end_pass(j);
	if (j->pass == PASS_DONE) {
		job_free(j);
		return;
	}
	if (!j->paused)
		evtimer_add(j->tick, &now_tv);
}

static void on_pause(void *arg)
{
	((struct logs_job *)arg)->paused = true;
}

static void on_resume(void *arg)
{
	struct logs_job *j = arg;
	if (j->paused) {
		j->paused = false;
		evtimer_add(j->tick, &now_tv);
	}
}

static void on_gone(void *arg)
{
	struct logs_job *j = arg;
	hu_stream_finish(j->stream); /* frees it: the client is gone already */
	j->stream = NULL;
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

static void get_logs(struct hu_req *r, int v2)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
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
	*j = (struct logs_job){.next = scans, .r = r, .q = q, .file = LOG_FILES - 1};
	scans = j;
	snprintf(j->needle, sizeof(j->needle), " sandbox=%s ", s->id);
	/* forward needs no count: the first `limit` entries are the answer */
	j->pass = q.backward ? PASS_COUNT : next_pass(j, PASS_COUNT);
	j->tick = evtimer_new(hu_req_daemon(r)->base, on_tick, j);
	if (!j->tick) {
		hu_reply_error(r, 500, "out of memory");
		job_free(j);
		return;
	}
	/* everything is checked: the answer is a 200 from here on */
	struct hu_stream_cbs cbs = {on_pause, on_resume, on_gone, j};
	if (!(j->stream = hu_stream_start_raw(r, "application/json", HIGH_WATER, &cbs))) {
		hu_reply_error(r, 500, "out of memory");
		job_free(j);
		return;
	}
	if (j->pass != PASS_COUNT && !put(j, pass_opening(j, j->pass))) {
		hu_stream_abort(j->stream, "out of memory");
		job_free(j);
		return;
	}
	evtimer_add(j->tick, &now_tv);
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
		if (j->stream)
			hu_stream_abort(j->stream, "the server is shutting down");
		job_free(j);
	}
}
