/*
 * Whether the host's kernel.core_pattern lets a crash inside a sandbox reach
 * a host program. Sandboxes run with RLIMIT_CORE 1/1 (sandbox_child.c),
 * which the kernel honours for files (1 byte is below the smallest core) and
 * pipes (1 is its guard against recursive dumps: no helper is started). A
 * socket pattern ("@path" or "@@path", Linux 6.16+) ignores RLIMIT_CORE, 0
 * included: the kernel connects, as itself, to that host socket and streams
 * the core to whatever listens there. Only a non-dumpable process escapes
 * that, and every execve makes a process dumpable again, so hutch cannot
 * make arbitrary sandbox programs non-dumpable: it refuses to start
 * sandboxes under a socket pattern instead (docs/security.md, "Crashes").
 */
#ifndef HUTCH_RUNTIME_COREDUMP_H
#define HUTCH_RUNTIME_COREDUMP_H

#include <stddef.h>

#include "util/err.h"

#define HU_CORE_PATTERN_FILE "/proc/sys/kernel/core_pattern"

/* Read the pattern (newline stripped) into buf. */
int hu_core_pattern_read(char *buf, size_t cap, hu_err *err);

/* 0 when a crash under `pattern` reaches no host program from a process
 * with RLIMIT_CORE 1; -1 with EPERM and a message naming the pattern for a
 * socket pattern. Pure. */
int hu_core_pattern_safe(const char *pattern, hu_err *err);

/* Both: the check every sandbox start makes. A pattern that cannot be read
 * is refused too (a host whose /proc hides it cannot be judged). */
int hu_core_pattern_check(hu_err *err);

#endif
