/*
 * Test-only fault injection: HUTCH_FAULT=<point> in the daemon's
 * environment makes it SIGKILL itself when it reaches that point, the way
 * a crash or an OOM kill would, so tests can check that a restart finds
 * nothing leaked or lost (tests/e2e/restart.test.mjs). Points are named
 * "<operation>.<step>" (docs/testing.md lists them). Unset, it costs one
 * pointer comparison.
 */
#ifndef HUTCH_DAEMON_FAULT_H
#define HUTCH_DAEMON_FAULT_H

/* Read HUTCH_FAULT once (at start). */
void hu_fault_init(void);
/* Die here (SIGKILL, no cleanup) if this is the configured point. */
void hu_fault_point(const char *point);

#endif
