/* The new mount API (open_tree, move_mount, mount_setattr, fsopen) through raw
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
#ifndef MOUNT_ATTR_NOEXEC
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif

#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif
/* fsconfig commands (enum fsconfig_command) */
#define HU_FSCONFIG_SET_FLAG 0
#define HU_FSCONFIG_SET_STRING 1
#define HU_FSCONFIG_CMD_CREATE 6

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

static inline int hu_fsopen(const char *fstype, unsigned flags)
{
	return (int)syscall(SYS_fsopen, fstype, flags);
}

static inline int hu_fsconfig(int fs_fd, unsigned cmd, const char *key, const void *value, int aux)
{
	return (int)syscall(SYS_fsconfig, fs_fd, cmd, key, value, aux);
}

static inline int hu_fsmount(int fs_fd, unsigned flags, unsigned attr_flags)
{
	return (int)syscall(SYS_fsmount, fs_fd, flags, attr_flags);
}

#endif
