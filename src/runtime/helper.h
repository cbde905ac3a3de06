/*
 * Helper processes that work on hostile input for the daemon (the template
 * builder): started the way hutch-init is, never as a fork of the caller.
 *
 * The helper is a sealed memfd copy of a binary, executed from a child made
 * with CLONE_VM|CLONE_VFORK (it never holds a copy of the caller's memory:
 * no tokens, keys or database pages), in fresh PID, network and IPC
 * namespaces, with only the descriptors it is given (0-2 /dev/null, then
 * fds[0..n) as 3, 4, ...), inside a cgroup of its own with memory, pids and
 * CPU limits. It confines itself further before reading its input.
 */
#ifndef HUTCH_RUNTIME_HELPER_H
#define HUTCH_RUNTIME_HELPER_H

#include <stddef.h>
#include <sys/types.h>

#include "runtime/cgroup.h"
#include "runtime/sandbox.h"
#include "util/err.h"

#define HU_HELPER_MAX_FDS 8

struct hu_helper_spec {
	const char *binary;   /* the executable (copied, sealed, then executed from the copy) */
	char *const *argv;
	const int *fds;       /* become 3, 4, ... in the helper */
	size_t n_fds;         /* at most HU_HELPER_MAX_FDS */
	const char *cgroup;   /* its group's name under the runtime's parent */
	struct hu_cgroup_limits limits;
};

struct hu_helper {
	pid_t pid;
	int pidfd;
	struct hu_cgroup *cg;
};

/* Find a helper binary `name` next to the running one (build tree), then in
 * ../libexec/hutch/ (installed layout); the environment variable env_var
 * (NULL: none) overrides both. */
int hu_helper_find(const char *name, const char *env_var, char *buf, size_t n, hu_err *err);

/* Start the helper. The child is in its cgroup before it runs a single
 * instruction of the helper. */
int hu_helper_start(struct hu_runtime *rt, const struct hu_helper_spec *spec, struct hu_helper *out, hu_err *err);

/* Kill whatever is left in the helper's group, reap it (its wait status
 * into *status when not NULL) and remove the group. */
void hu_helper_reap(struct hu_helper *h, int *status);

#endif
