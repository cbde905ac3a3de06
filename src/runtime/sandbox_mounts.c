/*
 * A sandbox's extra mounts (volumes, host mounts, tmpfs), both halves:
 *
 * - the parent (sandbox.c) turns each directory hu_mount_spec into a
 *   detached mount: a clone of the directory's mount (open_tree), made
 *   nosuid and nodev, read-only on request, and idmapped through the
 *   child's user namespace on request, the same technique as the template
 *   and /usr;
 * - the child's setup stage (sandbox_child.c) makes each tmpfs itself, in
 *   its own user namespace, as /dev/shm (the sandbox's root owns it, and
 *   its files carry the sandbox's host uid range, never another host id),
 *   and attaches every mount inside the new root before pivot_root,
 *   creating the mount point without following a symlink: the upper layer
 *   can hold the sandbox's own content (a later init over the same files),
 *   which must not steer a mount elsewhere.
 */
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/mountapi.h"
#include "runtime/sandbox_internal.h"
#include "util/cleanup.h"

#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif

static int open_one(const struct hu_mount_spec *m, int userns_fd, hu_err *err)
{
	const char *what = m->source ? m->source : m->target;
	struct stat st;
	_cleanup_close_ int fd = -1;

	if (m->source_fd >= 0)
		fd = hu_open_tree(m->source_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	else if (m->source)
		fd = hu_open_tree(AT_FDCWD, m->source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	else
		return hu_err_set(err, EINVAL, "mount %s: no source", m->target);
	if (fd < 0)
		return hu_err_sys(err, "open_tree %s", what);
	if (fstat(fd, &st) < 0)
		return hu_err_sys(err, "stat %s", what);
	if (!S_ISDIR(st.st_mode))
		return hu_err_set(err, -ENOTDIR, "mount %s: the source is not a directory", m->target);
	struct hu_mount_attr attr = {
		.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (m->read_only ? MOUNT_ATTR_RDONLY : 0) |
			    (m->idmap ? MOUNT_ATTR_IDMAP : 0),
		.userns_fd = m->idmap ? (uint64_t)userns_fd : 0,
	};
	if (hu_mount_setattr(fd, "", AT_EMPTY_PATH, &attr) < 0) {
		if (m->idmap && errno == EINVAL)
			return hu_err_set(err, EINVAL, "mount %s: the file system of %s cannot be idmapped", m->target,
					  what);
		return hu_err_sys(err, "mount %s: set attributes of %s", m->target, what);
	}
	return hu_take_fd(&fd);
}

int hu_mounts_open(const struct hu_sandbox_spec *spec, int userns_fd, int *fds, hu_err *err)
{
	if (spec->n_mounts > HU_MOUNTS_MAX)
		return hu_err_set(err, -EINVAL, "%zu mounts; at most %d are allowed", spec->n_mounts, HU_MOUNTS_MAX);
	for (size_t i = 0; i < spec->n_mounts; i++) {
		fds[i] = -1;
		if (hu_mount_target_check(spec->mounts[i].target, err) < 0 ||
		    (spec->mounts[i].type == HU_MOUNT_TYPE_DIR && (fds[i] = open_one(&spec->mounts[i], userns_fd, err)) < 0)) {
			for (size_t j = 0; j < i; j++)
				if (fds[j] >= 0)
					close(fds[j]);
			return -1;
		}
	}
	return 0;
}

int hu_tmpfs_mount(uint64_t bytes, hu_err *err)
{
	char size[24];

	/* size=0 would be a tmpfs without a cap (hu_mounts_check refuses it
	 * earlier; this is the second lock, where the mount is made) */
	if (bytes == 0)
		return hu_err_set(err, -EINVAL, "a tmpfs of size 0");
	snprintf(size, sizeof(size), "%llu", (unsigned long long)bytes);
	_cleanup_close_ int fs = hu_fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return hu_err_sys(err, "fsopen tmpfs");
	if (hu_fsconfig(fs, HU_FSCONFIG_SET_STRING, "source", "tmpfs", 0) < 0 ||
	    hu_fsconfig(fs, HU_FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
	    hu_fsconfig(fs, HU_FSCONFIG_SET_STRING, "mode", "1777", 0) < 0 ||
	    hu_fsconfig(fs, HU_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return hu_err_sys(err, "create a tmpfs of %s bytes", size);
	int mnt = hu_fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (mnt < 0)
		return hu_err_sys(err, "fsmount tmpfs");
	return mnt;
}

/* One step down: `name` below dir, created if missing, never a symlink,
 * never above dir. */
static int step_into(int dir, const char *name, hu_err *err)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	if (mkdirat(dir, name, 0755) < 0 && errno != EEXIST)
		return hu_err_sys(err, "create %s", name);
	int fd = (int)syscall(SYS_openat2, dir, name, &how, sizeof(how));
	/* the caller's path is wrong for this sandbox's tree: a client error */
	struct stat st;
	if (fd < 0 && errno == ENOTDIR && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		errno = ELOOP;
	if (fd < 0 && (errno == ELOOP || errno == EXDEV))
		return hu_err_set(err, -EINVAL, "'%s' is a symlink, which a mount point may not pass through", name);
	if (fd < 0 && errno == ENOTDIR)
		return hu_err_set(err, -EINVAL, "'%s' is not a directory", name);
	if (fd < 0)
		return hu_err_sys(err, "enter %s", name);
	return fd;
}

int hu_mount_attach(int root_fd, const char *target, int mount_fd, hu_err *err)
{
	char path[HU_MOUNT_TARGET_MAX];

	if (hu_mount_target_check(target, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s", target + 1);
	_cleanup_close_ int dir = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
	if (dir < 0)
		return hu_err_sys(err, "dup");
	for (char *save = NULL, *name = strtok_r(path, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		int next = step_into(dir, name, err);
		if (next < 0) {
			hu_err_prefix(err, "mount point %s", target);
			return -1;
		}
		close(dir);
		dir = next;
	}
	if (hu_move_mount(mount_fd, "", dir, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return hu_err_sys(err, "attach %s", target);
	return 0;
}
