/*
 * Reading the daemon's own log back (GET /sandboxes/{id}/logs): one line
 * as log.c writes it,
 *   2026-11-29T10:00:00.123Z level=info sandbox=<id|-> req=<n|-> msg="..."
 * parsed into its fields, the message unescaped. Lines come from a file an
 * operator may have edited: anything malformed is rejected, never trusted.
 */
#ifndef HUTCH_DAEMON_LOG_PARSE_H
#define HUTCH_DAEMON_LOG_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define HU_LOG_MSG_MAX 4096

struct hu_log_entry {
	char time[32];      /* RFC 3339 as written */
	int64_t time_ms;    /* the same in unix ms */
	char level[8];      /* debug|info|warn|error */
	char sandbox[64];   /* "" for "-" */
	char req[24];       /* "" for "-" */
	char msg[HU_LOG_MSG_MAX];
};

/* 0 and *e filled, or -1 for a line that is not a log line. */
int hu_log_parse_line(const char *line, size_t len, struct hu_log_entry *e);

#endif
