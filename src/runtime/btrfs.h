/* The few btrfs ioctls the writable layers use (layers.c, layer.c). */
#ifndef HUTCH_RUNTIME_BTRFS_H
#define HUTCH_RUNTIME_BTRFS_H

#include <stdint.h>

#include "util/err.h"

/* Is the file system of fd btrfs? */
int hu_btrfs_is(int fd);
/* The file system's UUID as text (its /sys/fs/btrfs/<uuid>/ directory). */
int hu_btrfs_fsid(int fd, char *buf, size_t n, hu_err *err);
/* Are quota groups enabled on the file system (/sys/fs/btrfs/<uuid>/qgroups)?
 * mode gets "simple", "qgroup" or "" when off. */
int hu_btrfs_quota_mode(const char *fsid, char *mode, size_t n);
/* Enable quota groups: simple quotas where the kernel has them (accounted
 * when extents are allocated, no back-reference walks at each commit),
 * full quota groups otherwise. */
int hu_btrfs_quota_enable(int fd, hu_err *err);
/* Subvolume `name` below the directory dirfd. */
int hu_btrfs_subvol_create(int dirfd, const char *name, hu_err *err);
/* Delete subvolume `name` below dirfd with everything in it (the kernel
 * frees its extents in the background). ENOENT is an error here. */
int hu_btrfs_subvol_delete(int dirfd, const char *name, hu_err *err);
/* The id of the subvolume whose root fd is (its quota group is 0/<id>). */
int hu_btrfs_subvol_id(int fd, uint64_t *id, hu_err *err);
/* Cap the bytes the subvolume of fd may reference (0 = no cap). Writes past
 * it fail with EDQUOT. */
int hu_btrfs_qgroup_limit(int fd, uint64_t bytes, hu_err *err);
/* Bytes referenced by quota group 0/<subvol> (as of the last commit). */
int hu_btrfs_qgroup_usage(const char *fsid, uint64_t subvol, uint64_t *bytes, hu_err *err);

#endif
