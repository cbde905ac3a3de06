/*
 * btrfs through its ioctls, not btrfs-progs: creating and capping a
 * subvolume is on every sandbox create, where a fork and exec would cost
 * more than the work itself.
 */
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "runtime/btrfs.h"
#include "util/fileutil.h"
#include "util/parse.h"

/* since 6.7; the installed headers may predate it */
#ifndef BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA
#define BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA 4
#endif

int hu_btrfs_is(int fd)
{
	struct statfs sfs;
	return fstatfs(fd, &sfs) == 0 && sfs.f_type == (typeof(sfs.f_type))BTRFS_SUPER_MAGIC;
}

int hu_btrfs_fsid(int fd, char *buf, size_t n, hu_err *err)
{
	struct btrfs_ioctl_fs_info_args info;
	const unsigned char *u = info.fsid;

	memset(&info, 0, sizeof(info));
	if (ioctl(fd, BTRFS_IOC_FS_INFO, &info) < 0)
		return hu_err_sys(err, "btrfs file system info");
	snprintf(buf, n, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
		 u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	return 0;
}

int hu_btrfs_quota_mode(const char *fsid, char *mode, size_t n)
{
	char path[128], buf[32];
	hu_err ignore;
	struct stat st;

	mode[0] = '\0';
	snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/qgroups", fsid);
	if (stat(path, &st) < 0)
		return 0;
	/* kernels before simple quotas have no mode file: full quota groups */
	snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/qgroups/mode", fsid);
	if (hu_read_file(path, buf, sizeof(buf), &ignore) < 0)
		snprintf(buf, sizeof(buf), "qgroup");
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(mode, n, "%s", buf);
	return 1;
}

int hu_btrfs_quota_enable(int fd, hu_err *err)
{
	struct btrfs_ioctl_quota_ctl_args q = {.cmd = BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA};

	if (ioctl(fd, BTRFS_IOC_QUOTA_CTL, &q) == 0)
		return 0;
	if (errno != EINVAL && errno != EOPNOTSUPP)
		return hu_err_sys(err, "enable btrfs simple quotas");
	q.cmd = BTRFS_QUOTA_CTL_ENABLE;
	if (ioctl(fd, BTRFS_IOC_QUOTA_CTL, &q) < 0)
		return hu_err_sys(err, "enable btrfs quota groups");
	return 0;
}

static int vol_args(struct btrfs_ioctl_vol_args *a, const char *name, hu_err *err)
{
	memset(a, 0, sizeof(*a));
	if (strlen(name) >= sizeof(a->name) || strchr(name, '/'))
		return hu_err_set(err, EINVAL, "subvolume name '%s'", name);
	snprintf(a->name, sizeof(a->name), "%s", name);
	return 0;
}

int hu_btrfs_subvol_create(int dirfd, const char *name, hu_err *err)
{
	struct btrfs_ioctl_vol_args a;

	if (vol_args(&a, name, err) < 0)
		return -1;
	if (ioctl(dirfd, BTRFS_IOC_SUBVOL_CREATE, &a) < 0)
		return hu_err_sys(err, "create subvolume %s", name);
	return 0;
}

int hu_btrfs_subvol_delete(int dirfd, const char *name, hu_err *err)
{
	struct btrfs_ioctl_vol_args a;

	if (vol_args(&a, name, err) < 0)
		return -1;
	if (ioctl(dirfd, BTRFS_IOC_SNAP_DESTROY, &a) < 0)
		return hu_err_sys(err, "delete subvolume %s", name);
	return 0;
}

int hu_btrfs_subvol_id(int fd, uint64_t *id, hu_err *err)
{
	struct btrfs_ioctl_ino_lookup_args a;

	memset(&a, 0, sizeof(a));
	a.treeid = 0; /* the tree of fd */
	a.objectid = BTRFS_FIRST_FREE_OBJECTID;
	if (ioctl(fd, BTRFS_IOC_INO_LOOKUP, &a) < 0)
		return hu_err_sys(err, "subvolume id");
	*id = a.treeid;
	return 0;
}

int hu_btrfs_qgroup_limit(int fd, uint64_t bytes, hu_err *err)
{
	struct btrfs_ioctl_qgroup_limit_args a;

	memset(&a, 0, sizeof(a));
	a.qgroupid = 0; /* the subvolume of fd */
	a.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
	a.lim.max_rfer = bytes ? bytes : (uint64_t)-1;
	if (ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &a) < 0)
		return hu_err_sys(err, "set the quota group limit");
	return 0;
}

int hu_btrfs_qgroup_usage(const char *fsid, uint64_t subvol, uint64_t *bytes, hu_err *err)
{
	char path[160], buf[32];

	snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/qgroups/0_%llu/referenced", fsid, (unsigned long long)subvol);
	if (hu_read_file(path, buf, sizeof(buf), err) < 0)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return hu_parse_u64(buf, bytes, err);
}
