/* The sandboxes' shared read-only sysfs view (sysfs_view.h). */
#include "runtime/sysfs_view.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/mountapi.h"
#include "runtime/runtime_internal.h"
#include "util/cleanup.h"

#define VIEW_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)

/* An fs context for sysfs keyed by a new, empty network namespace: the
 * context takes the namespace of the calling thread when it is opened, so
 * the thread enters a fresh one for that call only. The context (and the
 * superblock) hold only a passive reference, which keeps the namespace's
 * memory but not its devices: *netns, an fd of it, keeps it alive, with its
 * loopback device (else class/net would be empty). */
static int open_in_empty_netns(int *netns, hu_err *err)
{
	_cleanup_close_ int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return hu_err_sys(err, "open /proc/thread-self/ns/net");
	if (unshare(CLONE_NEWNET) < 0)
		return hu_err_sys(err, "a network namespace for /sys");
	*netns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	int fs = *netns < 0 ? -1 : hu_fsopen("sysfs", FSOPEN_CLOEXEC);
	int saved = errno;
	if (setns(self, CLONE_NEWNET) < 0) {
		/* cannot happen with a valid fd; carrying on would do the
		 * runtime's network work in the empty namespace */
		perror("hutch: return to the runtime's network namespace");
		abort();
	}
	errno = saved;
	if (fs < 0) {
		if (*netns >= 0)
			close(*netns);
		*netns = -1;
		return hu_err_sys(err, "fsopen sysfs");
	}
	return fs;
}

/* The view: a detached mount, read-only on a read-only superblock; *netns
 * keeps its namespace alive (open_in_empty_netns). */
static int make_view(int *netns, hu_err *err)
{
	_cleanup_close_ int fs = open_in_empty_netns(netns, err);
	if (fs < 0)
		return -1;
	/* "sysfs" as the source in mountinfo, as a mount(2) of it shows */
	if (hu_fsconfig(fs, HU_FSCONFIG_SET_STRING, "source", "sysfs", 0) < 0 ||
	    hu_fsconfig(fs, HU_FSCONFIG_SET_FLAG, "ro", NULL, 0) < 0 ||
	    hu_fsconfig(fs, HU_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return hu_err_sys(err, "create the sandboxes' sysfs");
	int mnt = hu_fsmount(fs, FSMOUNT_CLOEXEC, VIEW_ATTRS);
	if (mnt < 0)
		return hu_err_sys(err, "fsmount sysfs");
	return mnt;
}

static int clone_view(int view)
{
	return hu_open_tree(view, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
}

/* Make the view and check this kernel clones it; HU_SYSFS_VIEW_NONE if not. */
static int try_view(int *netns)
{
	hu_err ignore = {0};
	_cleanup_close_ int ns = -1;
	_cleanup_close_ int view = make_view(&ns, &ignore);
	if (view < 0)
		return HU_SYSFS_VIEW_NONE;
	int probe = clone_view(view);
	if (probe < 0)
		return HU_SYSFS_VIEW_NONE; /* EINVAL: no clones of detached mounts */
	close(probe);
	*netns = hu_take_fd(&ns);
	return hu_take_fd(&view);
}

int hu_sysfs_view_clone(struct hu_runtime *rt, int *fd, hu_err *err)
{
	*fd = -1;
	if (rt->sysfs_view == HU_SYSFS_VIEW_UNTRIED)
		rt->sysfs_view = try_view(&rt->sysfs_netns);
	if (rt->sysfs_view == HU_SYSFS_VIEW_NONE)
		return 0;
	*fd = clone_view(rt->sysfs_view);
	if (*fd < 0)
		return hu_err_sys(err, "clone the sandboxes' /sys");
	return 0;
}

int hu_sysfs_view_shared(const struct hu_runtime *rt)
{
	return rt->sysfs_view == HU_SYSFS_VIEW_UNTRIED ? -1 : rt->sysfs_view >= 0;
}

void hu_sysfs_view_close(struct hu_runtime *rt)
{
	if (rt->sysfs_view >= 0)
		close(rt->sysfs_view);
	if (rt->sysfs_netns >= 0)
		close(rt->sysfs_netns);
	rt->sysfs_view = HU_SYSFS_VIEW_UNTRIED;
	rt->sysfs_netns = -1;
}
