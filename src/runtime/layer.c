/*
 * One sandbox's writable layer: <data_dir>/layers/<id>, a btrfs subvolume
 * whose quota group caps what the sandbox can write (EDQUOT inside). It is
 * a plain directory tree to everything but btrfs, so a later daemon, after
 * a restart or a reboot, finds the files where they were; the sandbox's
 * overlay is mounted over it inside the sandbox's own mount namespace only.
 *
 * Inodes: btrfs allocates them from its metadata, which the quota group
 * counts, so a layer's byte cap also bounds how many files it can hold
 * (docs/operations.md, "Storage"); there is no fixed inode table that one
 * sandbox could exhaust for the others.
 *
 * Owners: the layer's top directory and its mount points belong to the
 * sandbox's host uid base (which names its uid slot); the files in rw/ carry
 * the ids the sandbox itself sees, like a template's, and the sandbox sees
 * them through an idmapped mount. A layer made before rw/ existed holds
 * upper/ and work/ at its top, with the files at the sandbox's host uids;
 * it is still started as it is (hu_layer_idmapped).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/btrfs.h"
#include "runtime/layers.h"
#include "util/cleanup.h"

int hu_layer_path(const struct hu_layers *ly, const char *id, char *buf, size_t n, hu_err *err)
{
	if (!hu_sandbox_id_valid(id))
		return hu_err_set(err, EINVAL, "invalid sandbox id '%s'", id);
	if ((size_t)snprintf(buf, n, "%s/%s", ly->root, id) >= n)
		return hu_err_set(err, ENAMETOOLONG, "layer path %s/%s", ly->root, id);
	return 0;
}

int hu_layer_create(const struct hu_layers *ly, const char *id, uint64_t bytes, uint32_t owner, int ephemeral,
		    hu_err *err)
{
	static const char *const subdirs[] = {"rootfs", "lower", "bootid"};
	hu_err ignore;

	if (!hu_sandbox_id_valid(id))
		return hu_err_set(err, EINVAL, "invalid sandbox id '%s'", id);
	if (hu_btrfs_subvol_create(ly->root_fd, id, err) < 0)
		return -1;
	_cleanup_close_ int fd = openat(ly->root_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		hu_err_sys(err, "open layer %s", id);
		goto fail;
	}
	/* the cap first: nothing is written to the layer before it holds */
	if (hu_btrfs_qgroup_limit(fd, bytes, err) < 0)
		goto fail;
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++)
		if (mkdirat(fd, subdirs[i], 0755) < 0 || fchownat(fd, subdirs[i], owner, owner, AT_SYMLINK_NOFOLLOW) < 0) {
			hu_err_sys(err, "layer %s: mkdir %s", id, subdirs[i]);
			goto fail;
		}
	/* rw/: the overlay's upper and work dirs, owned by the ids the
	 * sandbox sees (root is 0), not by its host uids: the sandbox reaches
	 * them through a mount idmapped to its user namespace (sandbox.c), so
	 * a copy of them serves any uid slot as it is (snapshot.c). 0700: on
	 * the host, only root may enter a tree of root-owned files */
	if (mkdirat(fd, HU_LAYER_RW, 0700) < 0 || mkdirat(fd, HU_LAYER_RW "/upper", 0755) < 0 ||
	    mkdirat(fd, HU_LAYER_RW "/work", 0755) < 0 || fchmodat(fd, HU_LAYER_RW, 0700, 0) < 0 ||
	    fchmodat(fd, HU_LAYER_RW "/upper", 0755, 0) < 0) {
		hu_err_sys(err, "layer %s: mkdir %s", id, HU_LAYER_RW);
		goto fail;
	}
	if (ephemeral) {
		int m = openat(fd, "ephemeral", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (m < 0) {
			hu_err_sys(err, "layer %s: mark ephemeral", id);
			goto fail;
		}
		close(m);
	}
	/* the top last: its owner says the layer is complete (and which uid
	 * slot it belongs to) */
	if (fchmod(fd, 0700) < 0 || fchown(fd, owner, owner) < 0) {
		hu_err_sys(err, "layer %s: chown", id);
		goto fail;
	}
	return 0;
fail:
	hu_layer_destroy(ly, id, &ignore);
	return -1;
}

int hu_layer_idmapped(int layer_fd)
{
	struct stat st;

	return fstatat(layer_fd, HU_LAYER_RW, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

int hu_layer_destroy(const struct hu_layers *ly, const char *id, hu_err *err)
{
	struct stat st;

	if (!hu_sandbox_id_valid(id))
		return hu_err_set(err, EINVAL, "invalid sandbox id '%s'", id);
	if (fstatat(ly->root_fd, id, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : hu_err_sys(err, "layer %s", id);
	/* the quota group goes with the subvolume once the kernel has freed
	 * its extents (in the background, after this returns) */
	return hu_btrfs_subvol_delete(ly->root_fd, id, err);
}

int hu_layer_ephemeral(const struct hu_layers *ly, const char *id)
{
	char path[HU_ID_MAX + 16];

	snprintf(path, sizeof(path), "%s/ephemeral", id);
	return hu_sandbox_id_valid(id) && faccessat(ly->root_fd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

int hu_layer_usage(const struct hu_layers *ly, const char *id, uint64_t *bytes, hu_err *err)
{
	uint64_t subvol;

	if (!hu_sandbox_id_valid(id))
		return hu_err_set(err, EINVAL, "invalid sandbox id '%s'", id);
	_cleanup_close_ int fd = openat(ly->root_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return hu_err_sys(err, "open layer %s", id);
	if (hu_btrfs_subvol_id(fd, &subvol, err) < 0)
		return -1;
	return hu_btrfs_qgroup_usage(ly->fsid, subvol, bytes, err);
}

int hu_layer_owner(const struct hu_layers *ly, const char *id, uint32_t *uid, hu_err *err)
{
	struct stat st;

	if (!hu_sandbox_id_valid(id))
		return hu_err_set(err, EINVAL, "invalid sandbox id '%s'", id);
	if (fstatat(ly->root_fd, id, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return hu_err_sys(err, "layer %s", id);
	if (!S_ISDIR(st.st_mode))
		return hu_err_set(err, EUCLEAN, "layer %s is not a directory", id);
	*uid = st.st_uid;
	return 0;
}
