// fuzz-sources: src/daemon/common/log_parse.c
/*
 * libFuzzer driver for the log-line parser behind GET /sandboxes/{id}/logs:
 * the input is one line of <data_dir>/logs/hutch.log, which an operator (or
 * a full disk cutting a write) may have mangled. Whatever parses must have
 * sane fields: a known level, a message that is a C string no longer than
 * the line, a time in range.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/common/log_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hu_log_entry e;

	if (hu_log_parse_line((const char *)data, size, &e) < 0)
		return 0;
	if (strcmp(e.level, "debug") && strcmp(e.level, "info") && strcmp(e.level, "warn") && strcmp(e.level, "error"))
		abort();
	if (strlen(e.msg) >= sizeof(e.msg) || strlen(e.msg) > size || e.time_ms < 0)
		abort();
	if (strchr(e.sandbox, ' ') || strchr(e.req, ' '))
		abort();
	return 0;
}
