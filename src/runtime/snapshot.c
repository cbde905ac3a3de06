/*
 * Snapshots of a sandbox's files (sandbox.h): a read-only btrfs snapshot of
 * its layer at <data_dir>/layers/.snapshots/<name> (".snapshots" is no
 * sandbox id, so the layer walks never meet it), and new layers made from
 * one as writable snapshots of it. Both are copy-on-write: the cost is the
 * file system's metadata, not the files' bytes. A snapshot ioctl is one
 * btrfs transaction, so a crash leaves a snapshot whole or not at all.
 *
 * Memory is not part of a snapshot: a sandbox made from one starts a fresh
 * init over its files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/btrfs.h"
#include "runtime/layers.h"
#include "runtime/runtime_internal.h"
#include "runtime/sandbox_priv.h"
#include "util/cleanup.h"

#define SNAP_DIR ".snapshots"

static int snap_dir(const struct hu_layers *ly, int create, hu_err *err)
{
	if (create && mkdirat(ly->root_fd, SNAP_DIR, 0700) < 0 && errno != EEXIST)
		return hu_err_sys(err, "mkdir %s/%s", ly->root, SNAP_DIR);
	int fd = openat(ly->root_fd, SNAP_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return hu_err_sys(err, "open %s/%s", ly->root, SNAP_DIR);
	return fd;
}

int hu_sandbox_snapshot(struct hu_sandbox *sb, const char *name, hu_err *err)
{
	const struct hu_layers *ly = &sb->rt->layers;

	if (!hu_sandbox_id_valid(name))
		return hu_err_set(err, EINVAL, "invalid snapshot name '%s'", name);
	_cleanup_close_ int dir = snap_dir(ly, 1, err);
	if (dir < 0)
		return -1;
	_cleanup_close_ int src = openat(ly->root_fd, sb->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0)
		return hu_err_sys(err, "open layer %s", sb->id);
	/* btrfs writes the source's dirty pages out first, so what the sandbox
	 * wrote up to now (its page cache included) is in the snapshot */
	if (hu_btrfs_snapshot(src, dir, name, 1, err) < 0) {
		hu_err_prefix(err, "snapshot of sandbox %s", sb->id);
		return -1;
	}
	return 0;
}

int hu_snapshot_delete(struct hu_runtime *rt, const char *name, hu_err *err)
{
	struct stat st;

	if (!hu_sandbox_id_valid(name))
		return hu_err_set(err, EINVAL, "invalid snapshot name '%s'", name);
	_cleanup_close_ int dir = snap_dir(&rt->layers, 0, err);
	if (dir < 0)
		return err->code == ENOENT ? (hu_err_clear(err), 0) : -1;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : hu_err_sys(err, "snapshot %s", name);
	/* a read-only snapshot is deleted like any subvolume */
	return hu_btrfs_subvol_delete(dir, name, err);
}

int hu_runtime_snapshots(struct hu_runtime *rt, int (*fn)(const char *name, void *arg), void *arg, hu_err *err)
{
	int fd = snap_dir(&rt->layers, 0, err);
	if (fd < 0)
		return err->code == ENOENT ? (hu_err_clear(err), 0) : -1;
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		close(fd);
		return hu_err_sys(err, "read %s/%s", rt->layers.root, SNAP_DIR);
	}
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (hu_sandbox_id_valid(de->d_name) && de->d_type == DT_DIR)
			rc = fn(de->d_name, arg);
	closedir(d);
	return rc;
}

/* For a snapshot of a layer without rw/ (made by an older hutch): the walk
 * that moves a new layer's files from the snapshot's uid range to the new
 * sandbox's (nftw has no argument: one walk per thread at a time). */
static __thread uint32_t shift_from, shift_to;
static __thread int shift_errno;

static uint32_t shifted(uint32_t id)
{
	return id >= shift_from && id - shift_from < HU_UID_RANGE ? shift_to + (id - shift_from) : id;
}

static int shift_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	uid_t u = shifted(st->st_uid);
	gid_t g = shifted(st->st_gid);

	if (type == FTW_NS || type == FTW_DNR) {
		shift_errno = EIO;
		return 1;
	}
	if (u == st->st_uid && g == st->st_gid)
		return 0;
	if (lchown(path, u, g) < 0) {
		shift_errno = errno;
		return 1;
	}
	/* chown clears set-user-ID and set-group-ID: they were the sandbox's */
	if ((st->st_mode & (S_ISUID | S_ISGID)) && !S_ISLNK(st->st_mode) && chmod(path, st->st_mode & 07777) < 0) {
		shift_errno = errno;
		return 1;
	}
	return 0;
}

int hu_layer_from_snapshot(const struct hu_layers *ly, const char *snap, const char *id, uint64_t bytes,
			   uint32_t owner, hu_err *err)
{
	char path[PATH_MAX + HU_ID_MAX + 2];
	struct stat st;
	hu_err ignore;

	if (!hu_sandbox_id_valid(id) || !hu_sandbox_id_valid(snap))
		return hu_err_set(err, EINVAL, "invalid layer '%s' or snapshot '%s'", id, snap);
	_cleanup_close_ int dir = snap_dir(ly, 0, err);
	if (dir < 0)
		return -1;
	_cleanup_close_ int src = openat(dir, snap, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0 || fstat(src, &st) < 0)
		return hu_err_sys(err, "open snapshot %s", snap);
	if (hu_btrfs_snapshot(src, ly->root_fd, id, 0, err) < 0)
		return -1;
	_cleanup_close_ int fd = openat(ly->root_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		hu_err_sys(err, "open layer %s", id);
		goto fail;
	}
	if (hu_btrfs_qgroup_limit(fd, bytes, err) < 0)
		goto fail;
	if (st.st_uid == owner)
		return 0;
	if (hu_layer_idmapped(fd)) {
		/* the files in rw/ serve any uid slot as they are: only the mount
		 * points are the slot's. The top directory goes last (its owner
		 * names the slot, and says the layer is complete) */
		static const char *const slot_dirs[] = {"rootfs", "lower", "bootid"};
		for (size_t i = 0; i < sizeof(slot_dirs) / sizeof(slot_dirs[0]); i++)
			if (fchownat(fd, slot_dirs[i], owner, owner, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT) {
				hu_err_sys(err, "layer %s: chown %s", id, slot_dirs[i]);
				goto fail;
			}
		if (fchown(fd, owner, owner) < 0) {
			hu_err_sys(err, "layer %s: chown", id);
			goto fail;
		}
		return 0;
	}
	/* a snapshot of a layer made before rw/: its files carry the source
	 * sandbox's host uids, and this sandbox has its own range */
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", ly->root, id) >= sizeof(path)) {
		hu_err_set(err, ENAMETOOLONG, "layer path %s/%s", ly->root, id);
		goto fail;
	}
	shift_from = st.st_uid;
	shift_to = owner;
	shift_errno = 0;
	if (fchown(fd, 0, 0) < 0 || nftw(path, shift_one, 16, FTW_PHYS | FTW_MOUNT) != 0) {
		hu_err_set(err, shift_errno ? shift_errno : errno, "layer %s: give its files the sandbox's uids", id);
		goto fail;
	}
	if (fchown(fd, owner, owner) < 0) {
		hu_err_sys(err, "layer %s: chown", id);
		goto fail;
	}
	return 0;
fail:
	hu_layer_destroy(ly, id, &ignore);
	return -1;
}
