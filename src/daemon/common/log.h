/*
 * The daemon's log (log.c): one structured line per event, to stderr and to
 * <data_dir>/logs/hutch.log. One log per process; every layer writes to it.
 */
#ifndef HUTCH_DAEMON_COMMON_LOG_H
#define HUTCH_DAEMON_COMMON_LOG_H

#include <stdint.h>

#include "util/err.h"

/* time, level, sandbox id (or NULL), request id (or 0), message. */
enum hu_log_level { HU_LOG_DEBUG, HU_LOG_INFO, HU_LOG_WARN, HU_LOG_ERROR };
void hu_log(enum hu_log_level lvl, const char *sandbox_id, uint64_t req_id, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Log to stderr and <data_dir>/logs/hutch.log (data_dir NULL: stderr only). */
int hu_log_open(const char *data_dir, enum hu_log_level min, hu_err *err);
void hu_log_close(void);
/* "debug" | "info" | "warn" | "error"; -1 for anything else. */
int hu_log_level_parse(const char *name, enum hu_log_level *out);

#endif
