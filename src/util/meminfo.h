/* The host's memory, from /proc/meminfo: what admission control, the
 * memory-pressure check and `hutch doctor` all read. */
#ifndef HUTCH_UTIL_MEMINFO_H
#define HUTCH_UTIL_MEMINFO_H

#include <stdint.h>

#include "util/err.h"

/* MemTotal and MemAvailable in bytes. */
int hu_meminfo(uint64_t *total, uint64_t *available, hu_err *err);

#endif
