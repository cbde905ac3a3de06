/*
 * Host mounts (metadata["host-mount"]): a host directory is mounted only if
 * it lies beneath one of the operator's host_mount_roots. The check is the
 * kernel's: the path below the root is resolved with openat2 relative to an
 * fd of the root, with RESOLVE_BENEATH (no '..' or absolute symlink may
 * climb out) and RESOLVE_NO_MAGICLINKS (no /proc/self/... style escapes),
 * and the mount is then made from the fd it returned, so nothing can swap
 * the path between check and mount. The lexical comparison below only picks
 * which root to resolve against; it grants nothing.
 */
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/sandboxes/sbx_mounts.h"
#include "util/cleanup.h"

/* If path is root or below it (component-wise), the rest ("" for root). */
static const char *below(const char *root, const char *path)
{
	size_t n = strlen(root);
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (n == 1) /* the root is "/" */
		return path + 1;
	if (strncmp(root, path, n) || (path[n] != '/' && path[n] != '\0'))
		return NULL;
	return path[n] == '/' ? path + n + 1 : path + n;
}

int hu_host_mount_open(const struct hu_config *cfg, const char *host_path, hu_err *err)
{
	if (cfg->n_host_mount_roots == 0)
		return hu_err_set(err, -EINVAL, "host mounts are disabled on this server (no host_mount_roots)");
	if (hu_host_path_check(host_path, err) < 0)
		return -1;
	for (unsigned i = 0; i < cfg->n_host_mount_roots; i++) {
		const char *root = cfg->host_mount_roots[i], *rest = below(root, host_path);
		if (!rest)
			continue;
		_cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0)
			return hu_err_sys(err, "host mount root %s", root);
		struct open_how how = {
			.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
		};
		int fd = (int)syscall(SYS_openat2, rootfd, *rest ? rest : ".", &how, sizeof(how));
		if (fd >= 0)
			return fd;
		switch (errno) {
		case EXDEV:
			return hu_err_set(err, -EINVAL, "host path %s leads outside %s (a symlink?)", host_path, root);
		case ELOOP:
			return hu_err_set(err, -EINVAL, "host path %s: too many or forbidden symlinks", host_path);
		case ENOENT:
			return hu_err_set(err, -EINVAL, "host path %s does not exist", host_path);
		case ENOTDIR:
			return hu_err_set(err, -EINVAL, "host path %s is not a directory", host_path);
		default:
			return hu_err_sys(err, "host path %s", host_path);
		}
	}
	return hu_err_set(err, -EINVAL, "host path %s is not under an allowed host mount root", host_path);
}
