/*
 * Landlock: the file-system layer under seccomp and the user namespace.
 *
 * hutch-init confines itself, right after building the sandbox's root, to
 * the tree under that root; every process of the sandbox descends from it
 * and shares the one domain. docs/security.md ("Landlock") says what it
 * adds: a directory fd of the host that reaches a sandbox by any means
 * cannot be used to open anything, and no device node can be made.
 */
#ifndef HUTCH_RUNTIME_LANDLOCK_H
#define HUTCH_RUNTIME_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

/* The kernel's Landlock ABI version, or 0 when Landlock is absent or off. */
int hu_landlock_abi(void);

/* Confine the calling process (no_new_privs must be set) and everything it
 * starts to the tree under the current root. Returns 1 when confined, 0
 * when the kernel cannot do it (no Landlock, or ABI 1, which forbids every
 * rename across directories), -1 with err set on failure. */
int hu_landlock_confine_to_root(hu_err *err);

/* The same with rules of one's own: every right beneath each rule's
 * directory (never making devices), or only reading and executing there.
 * A process that works on hostile input (the template builder) can then
 * touch nothing else. */
struct hu_landlock_rule {
	int dirfd;
	bool read_only;
};
int hu_landlock_confine(const struct hu_landlock_rule *rules, size_t n, hu_err *err);

#endif
