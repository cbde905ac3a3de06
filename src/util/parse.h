/* Parsers for human-written values on the command line and in config. All
 * reject trailing garbage, negative numbers and overflow. */
#ifndef HUTCH_UTIL_PARSE_H
#define HUTCH_UTIL_PARSE_H

#include <stdint.h>

#include "util/err.h"

/* "512M", "1G", "64Mi", "1048576", "2GB": bytes (1K = 1024). */
int hu_parse_size(const char *s, uint64_t *out, hu_err *err);
/* "30s", "500ms", "5m", "1h", "90" (seconds): milliseconds. */
int hu_parse_duration_ms(const char *s, uint64_t *out, hu_err *err);
/* "1", "0.5", "2.25": thousandths of a CPU (1000 = one CPU). */
int hu_parse_cpus(const char *s, uint32_t *out, hu_err *err);
/* The value of one hex digit (0-9, a-f, A-F), or -1. */
int hu_hex_digit(char c);

/* A plain decimal unsigned integer. */
int hu_parse_u64(const char *s, uint64_t *out, hu_err *err);

#endif
