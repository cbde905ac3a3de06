/* The new mount API (open_tree, move_mount, mount_setattr) through raw
 * syscalls: glibc 2.36's wrappers live in <sys/mount.h>, which clashes with
 * <linux/mount.h>, so hutch declares what it needs here. */
#ifndef HUTCH_RUNTIME_MOUNTAPI_H
#define HUTCH_RUNTIME_MOUNTAPI_H

#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC 02000000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif

struct hu_mount_attr {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};

static inline int hu_open_tree(int dfd, const char *path, unsigned flags)
{
	return (int)syscall(SYS_open_tree, dfd, path, flags);
}

static inline int hu_move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags)
{
	return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

static inline int hu_mount_setattr(int dfd, const char *path, unsigned flags, struct hu_mount_attr *attr)
{
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, sizeof(*attr));
}

#endif
