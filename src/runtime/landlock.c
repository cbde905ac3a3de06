/*
 * Landlock confinement of a sandbox to its own root (landlock.h).
 *
 * One rule: every access right the kernel knows is granted beneath "/",
 * except making character and block devices. Whatever is not beneath the
 * sandbox's root (its overlay, with /usr, /proc, /dev and the volumes
 * mounted inside it) gets nothing, which only matters for a path walk that
 * starts outside that tree: a directory fd of the host's (passed over a
 * unix socket in a volume, or leaked by a bug) or a root moved by a mount
 * trick. The scopes of ABI 6 (signals and abstract unix sockets) apply to
 * the same domain; every sandbox process is in it, so they change nothing
 * inside a sandbox and cut anything outside it.
 *
 * The system calls are made directly: glibc 2.36 has no wrappers, and
 * Debian 12's kernel headers stop at ABI 2, so the newer bits are defined
 * here with their kernel values.
 */
#include "runtime/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* The ruleset attribute as of ABI 6; older kernels accept the larger
 * struct as long as the fields they do not know are zero. */
struct ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

int hu_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return abi > 0 ? (int)abi : 0;
}

/* Every file-system right of an ABI version. */
static uint64_t fs_rights(int abi)
{
	uint64_t r = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0-12 */
	if (abi >= 2)
		r |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		r |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return r;
}

int hu_landlock_confine(const struct hu_landlock_rule *rules, size_t n, hu_err *err)
{
	int abi = hu_landlock_abi();
	/* ABI 1 cannot grant REFER, so it would forbid every rename or link
	 * between directories: that breaks `mv`, package managers, git. */
	if (abi < 2)
		return 0;
	struct ruleset_attr attr = {.handled_access_fs = fs_rights(abi)};
	if (abi >= 6)
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
	_cleanup_close_ int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (ruleset < 0)
		return hu_err_sys(err, "landlock_create_ruleset");
	const uint64_t read_exec = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	for (size_t i = 0; i < n; i++) {
		struct landlock_path_beneath_attr beneath = {
			.allowed_access = rules[i].read_only ? read_exec
							     : attr.handled_access_fs & ~(LANDLOCK_ACCESS_FS_MAKE_CHAR |
											  LANDLOCK_ACCESS_FS_MAKE_BLOCK),
			.parent_fd = rules[i].dirfd,
		};
		if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0) < 0)
			return hu_err_sys(err, "landlock_add_rule");
	}
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		return hu_err_sys(err, "landlock_restrict_self");
	return 1;
}

int hu_landlock_confine_to_root(hu_err *err)
{
	_cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return hu_err_sys(err, "open / for Landlock");
	const struct hu_landlock_rule all = {.dirfd = root};
	return hu_landlock_confine(&all, 1, err);
}
