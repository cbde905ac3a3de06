/* RFC 3339 times, as E2B's API writes and reads them. */
#ifndef HUTCH_UTIL_RFC3339_H
#define HUTCH_UTIL_RFC3339_H

#include <stdint.h>

#include "util/err.h"

/* UTC with milliseconds: 2026-11-29T10:00:00.000Z. */
#define HU_TIME_STR_MAX 32
void hu_rfc3339_format(int64_t unix_ms, char buf[HU_TIME_STR_MAX]);
/* Parse "2026-11-29T10:00:00Z" (optional fraction, Z or +hh:mm) into unix
 * milliseconds; EINVAL otherwise. */
int hu_rfc3339_parse(const char *s, int64_t *unix_ms, hu_err *err);

#endif
