/*
 * The daemon's log: one structured line per event,
 *   2026-11-29T10:00:00.123Z level=info sandbox=<id|-> req=<n|-> msg="..."
 * to stderr and to <data_dir>/logs/hutch.log.
 *
 * Each line is one write(2) on an O_APPEND descriptor, never buffered in
 * stdio: a daemon that crashes or is killed leaves every line it logged on
 * disk (logs are persisted before anything else can go wrong). The file
 * rotates at LOG_ROTATE_BYTES into hutch.log.1 .. hutch.log.<LOG_KEEP>.
 *
 * The state below is one of the few globals a daemon truly has: there is one
 * log per process, and every layer writes to it.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/common/log.h"
#include "util/fileutil.h"

#define LOG_ROTATE_BYTES (10u << 20)
#define LOG_KEEP 5
#define LOG_LINE_MAX 4096

static struct {
	int fd;                     /* the log file, -1 when logging to stderr only */
	enum hu_log_level min;      /* lines below this level are dropped */
	uint64_t size;              /* bytes in the current file */
	char path[PATH_MAX];        /* <data_dir>/logs/hutch.log */
} g_log = {.fd = -1, .min = HU_LOG_INFO};

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int hu_log_level_parse(const char *name, enum hu_log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (!strcmp(name, level_names[i])) {
			*out = (enum hu_log_level)i;
			return 0;
		}
	}
	return -1;
}

static int open_file(hu_err *err)
{
	struct stat st;
	int fd = open(g_log.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return hu_err_sys(err, "open log %s", g_log.path);
	g_log.size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
	g_log.fd = fd;
	return 0;
}

int hu_log_open(const char *data_dir, enum hu_log_level min, hu_err *err)
{
	char dir[PATH_MAX];

	hu_log_close();
	g_log.min = min;
	if (!data_dir)
		return 0; /* stderr only (tools and the fuzz drivers) */
	if (snprintf(dir, sizeof(dir), "%s/logs", data_dir) >= (int)sizeof(dir) ||
	    snprintf(g_log.path, sizeof(g_log.path), "%s/hutch.log", dir) >= (int)sizeof(g_log.path))
		return hu_err_set(err, ENAMETOOLONG, "log directory under %s", data_dir);
	if (hu_mkdir_p(dir, 0700, err) < 0)
		return -1;
	return open_file(err);
}

void hu_log_close(void)
{
	if (g_log.fd >= 0)
		close(g_log.fd);
	g_log.fd = -1;
}

/* hutch.log.4 -> .5, ..., hutch.log -> .1, then a fresh hutch.log. A failure
 * here must not lose the daemon's logging, so the old file stays open then. */
static void rotate(void)
{
	char from[PATH_MAX + 8], to[PATH_MAX + 8];
	hu_err err;

	for (int i = LOG_KEEP - 1; i >= 1; i--) {
		snprintf(from, sizeof(from), "%s.%d", g_log.path, i);
		snprintf(to, sizeof(to), "%s.%d", g_log.path, i + 1);
		rename(from, to); /* a missing older file is fine */
	}
	snprintf(to, sizeof(to), "%s.1", g_log.path);
	if (rename(g_log.path, to) < 0)
		return;
	int old = g_log.fd;
	if (open_file(&err) < 0) {
		g_log.fd = old;
		return;
	}
	close(old);
}

/* Append s to the line with quotes, backslashes and control characters
 * escaped, so that one log call is always exactly one parseable line. */
static size_t put_escaped(char *line, size_t at, size_t cap, const char *s)
{
	for (; *s && at + 5 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			line[at++] = '\\';
			line[at++] = (char)c;
		} else if (c == '\n') {
			line[at++] = '\\';
			line[at++] = 'n';
		} else if (c == '\r') {
			line[at++] = '\\';
			line[at++] = 'r';
		} else if (c == '\t') {
			line[at++] = '\\';
			line[at++] = 't';
		} else if (c < 0x20 || c == 0x7f) {
			at += (size_t)snprintf(line + at, cap - at, "\\x%02x", c);
		} else {
			line[at++] = (char)c;
		}
	}
	return at;
}

/* Sandbox ids are validated before they reach the log, but a field without
 * quotes must never carry a space or a newline, whatever a caller passes. */
static size_t put_field(char *line, size_t at, size_t cap, const char *s)
{
	if (!s || !*s)
		s = "-";
	for (; *s && at + 1 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c == '-' || c == '_' || c == '.';
		line[at++] = plain ? (char)c : '?';
	}
	return at;
}

void hu_log(enum hu_log_level lvl, const char *sandbox_id, uint64_t req_id, const char *fmt, ...)
{
	char line[LOG_LINE_MAX], msg[LOG_LINE_MAX];
	struct timespec ts;
	struct tm tm;
	size_t at;
	va_list ap;

	if (lvl < g_log.min || lvl > HU_LOG_ERROR)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	at = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	at += (size_t)snprintf(line + at, sizeof(line) - at, ".%03ldZ level=%s sandbox=", ts.tv_nsec / 1000000,
			       level_names[lvl]);
	at = put_field(line, at, sizeof(line), sandbox_id);
	if (req_id)
		at += (size_t)snprintf(line + at, sizeof(line) - at, " req=%llu msg=\"", (unsigned long long)req_id);
	else
		at += (size_t)snprintf(line + at, sizeof(line) - at, " req=- msg=\"");
	at = put_escaped(line, at, sizeof(line) - 2, msg);
	line[at++] = '"';
	line[at++] = '\n';

	/* Best effort: a full disk must not take the daemon down with it. */
	if (hu_write_all(STDERR_FILENO, line, at) < 0) {
		/* nothing better to do */
	}
	if (g_log.fd >= 0 && hu_write_all(g_log.fd, line, at) == 0) {
		g_log.size += at;
		if (g_log.size >= LOG_ROTATE_BYTES)
			rotate();
	}
}
