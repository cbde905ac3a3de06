/*
 * The sandboxes' /sys: one read-only sysfs instance per runtime, made the
 * first time a sandbox starts, in a network namespace of its own that holds
 * nothing but a loopback device (down). Every sandbox gets a clone of its
 * detached mount (open_tree), which makes no new superblock.
 *
 * Why not a sysfs instance per sandbox: a sysfs superblock is keyed by its
 * network namespace, and the kernel finds the key by comparing it with every
 * sysfs superblock on the host, one per sandbox alive, under a global lock;
 * at 1000 alive that walk is a large part of a create. A clone is O(1).
 *
 * What a sandbox sees through it (docs/security.md, "/sys"): the same
 * read-only tree its own instance shows, nothing mounted below it, except
 * the network class: /sys/class/net lists the view's namespace, i.e. lo
 * only, neither the host's interfaces nor the sandbox's own eth0. Its files
 * belong to the host's root, which no sandbox maps, so even a writable mount
 * of it would refuse root inside (and the mount and the superblock are both
 * read-only).
 *
 * A kernel that cannot clone a detached mount (older kernels refuse
 * open_tree of one with EINVAL) has no
 * view: each sandbox then mounts a sysfs of its own network namespace, as
 * the setup stage falls back to.
 */
#ifndef HUTCH_RUNTIME_SYSFS_VIEW_H
#define HUTCH_RUNTIME_SYSFS_VIEW_H

#include "util/err.h"

/* rt->sysfs_view before the first sandbox and when there is no view */
#define HU_SYSFS_VIEW_UNTRIED (-2)
#define HU_SYSFS_VIEW_NONE (-1)

struct hu_runtime;

/* Into *fd a detached clone of the view for one sandbox (the caller owns
 * it), making the view on first use; -1 with err set when the clone fails.
 * On a kernel that offers no view, 0 with *fd = -1: the sandbox mounts its
 * own. */
int hu_sysfs_view_clone(struct hu_runtime *rt, int *fd, hu_err *err);

/* Is there a view (after the first sandbox start)? 1, 0, or -1 untried. */
int hu_sysfs_view_shared(const struct hu_runtime *rt);

void hu_sysfs_view_close(struct hu_runtime *rt);

/* Is `view` (with `netns`, the namespace it keeps alive) a view as
 * make_view makes it, fit to be a sandbox's /sys? A sysfs mount that is
 * read-only, nosuid, nodev and noexec, whose class/net lists lo alone,
 * owned by the host's root; `netns` a network namespace other than ours,
 * owned by our user namespace. For a view handed over by another process
 * (init_keep.h): 1 or 0. */
int hu_sysfs_view_check(int view, int netns);

/* Adopt a checked view and its namespace (the runtime owns both now). */
void hu_sysfs_view_adopt(struct hu_runtime *rt, int view, int netns);

#endif
