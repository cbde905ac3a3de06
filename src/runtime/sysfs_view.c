/* The sandboxes' shared read-only sysfs view (sysfs_view.h). */
#include "runtime/sysfs_view.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "runtime/mountapi.h"
#include "runtime/runtime_internal.h"
#include "util/cleanup.h"

#define VIEW_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)
#define VIEW_FLAGS (ST_RDONLY | ST_NOSUID | ST_NODEV | ST_NOEXEC)
#define SYSFS_MAGIC_ 0x62656572

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

/* The inode of a namespace, by descriptor or by path. */
static ino_t fd_ino(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

static ino_t path_ino(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* A network namespace that is not ours and that our user namespace owns:
 * not the host's, and not one a sandbox's user namespace owns. */
static int empty_netns_of_ours(int netns)
{
	if (ioctl(netns, NS_GET_NSTYPE) != CLONE_NEWNET)
		return 0;
	ino_t ino = fd_ino(netns);
	if (ino == 0 || ino == path_ino("/proc/thread-self/ns/net"))
		return 0;
	_cleanup_close_ int owner = ioctl(netns, NS_GET_USERNS);
	return owner >= 0 && fd_ino(owner) == path_ino("/proc/self/ns/user");
}

/* class/net holds lo alone, owned by the host's root. */
static int lists_lo_alone(int view)
{
	int fd = openat(view, "class/net", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int lo = 0, other = 0;

	if (fd < 0)
		return 0;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strcmp(de->d_name, "lo"))
			lo = fstatat(dirfd(d), "lo", &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == 0;
		else
			other = 1;
	}
	closedir(d);
	return lo && !other;
}

int hu_sysfs_view_check(int view, int netns)
{
	struct statfs sf;
	struct statvfs sv;

	if (view < 0 || netns < 0 || fstatfs(view, &sf) < 0 || sf.f_type != SYSFS_MAGIC_ || fstatvfs(view, &sv) < 0 ||
	    (sv.f_flag & VIEW_FLAGS) != VIEW_FLAGS)
		return 0;
	return empty_netns_of_ours(netns) && lists_lo_alone(view);
}

void hu_sysfs_view_adopt(struct hu_runtime *rt, int view, int netns)
{
	hu_sysfs_view_close(rt);
	rt->sysfs_view = view;
	rt->sysfs_netns = netns;
}
