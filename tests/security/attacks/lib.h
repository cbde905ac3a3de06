/* Helpers for the C attacks (tests/security/attacks/NAME.c). run.sh compiles
 * each attack statically on the host and streams the binary into the
 * sandbox through stdin. Same output protocol as lib.py: one "ok - " or
 * "not ok - " line per assertion, "# end" last. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failed;
static const char *who(void) { return geteuid() == 0 ? "root" : "user"; }

static void ok(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("ok - [%s] ", who());
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

static void not_ok(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	failed++;
	printf("not ok - [%s] ", who());
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

static const char *ename(int e)
{
	static char buf[32];
	const char *n = strerrorname_np(e);
	if (n)
		return n;
	snprintf(buf, sizeof(buf), "%d", e);
	return buf;
}

/* r is the syscall's return value and e the errno right after it: the call
 * must have failed with `want` (or `want2`, if not 0). */
static __attribute__((unused)) void expect_err(const char *desc, long r, int e, int want, int want2)
{
	if (r == -1 && (e == want || (want2 && e == want2)))
		ok("%s: %s", desc, ename(e));
	else if (r == -1)
		not_ok("%s: expected %s, got %s", desc, ename(want), ename(e));
	else
		not_ok("%s: SUCCEEDED (returned %ld)", desc, r);
}

#define EXPECT_SYS(desc, want, want2, ...)                                                         \
	do {                                                                                       \
		errno = 0;                                                                         \
		long r_ = syscall(__VA_ARGS__);                                                    \
		expect_err(desc, r_, errno, want, want2);                                          \
	} while (0)

static int end(void)
{
	printf("# end\n");
	fflush(stdout);
	return failed ? 1 : 0;
}
