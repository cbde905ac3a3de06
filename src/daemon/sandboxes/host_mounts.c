/*
 * Host mounts (metadata["host-mount"]): a host directory is mounted only if
 * it lies beneath one of the operator's host_mount_roots that belongs to the
 * sandbox's team: "TEAM:/dir" (TEAM's), "*:/dir" (every team's, shared on
 * purpose) or a bare "/dir", where team T owns only /dir/T. The check is the
 * kernel's, made at every create, resume and restart: the path below the
 * team's directory is resolved with openat2 relative to an fd of it, with
 * RESOLVE_BENEATH (no '..' may climb out), RESOLVE_NO_SYMLINKS (no symlink
 * at all: one planted by a tenant in its own tree cannot lead into another
 * tenant's, whatever it points at) and RESOLVE_NO_MAGICLINKS, and the mount
 * is then made from the fd it returned, so nothing can swap the path
 * between check and mount. The lexical comparison below only picks which
 * root to resolve against; it grants nothing.
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

static int resolve_error(const char *host_path, const char *root, hu_err *err)
{
	switch (errno) {
	case EXDEV:
		return hu_err_set(err, -EINVAL, "host path %s leads outside %s", host_path, root);
	case ELOOP:
		return hu_err_set(err, -EINVAL, "host path %s: symlinks are not followed in host mounts", host_path);
	case ENOENT:
		return hu_err_set(err, -EINVAL, "host path %s does not exist", host_path);
	case ENOTDIR:
		return hu_err_set(err, -EINVAL, "host path %s is not a directory", host_path);
	default:
		return hu_err_sys(err, "host path %s", host_path);
	}
}

static int open_beneath(int dirfd, const char *rest)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, dirfd, *rest ? rest : ".", &how, sizeof(how));
}

/* A team name as one path component (a bare root's subdirectory). */
static int team_component_ok(const char *team)
{
	return team[0] && !strchr(team, '/') && strcmp(team, ".") && strcmp(team, "..");
}

int hu_host_mount_open(const struct hu_config *cfg, const char *team, const char *host_path, hu_err *err)
{
	char team_dir[PATH_MAX + 80];
	int found_other = 0;

	if (cfg->n_host_mount_roots == 0)
		return hu_err_set(err, -EINVAL, "host mounts are disabled on this server (no host_mount_roots)");
	if (hu_host_path_check(host_path, err) < 0)
		return -1;
	for (unsigned i = 0; i < cfg->n_host_mount_roots; i++) {
		const char *root = cfg->host_mount_roots[i], *owner = cfg->host_mount_teams[i];
		const char *scope = root, *rest;
		if (!owner[0]) { /* per-team: the team's subdirectory */
			if (!team_component_ok(team))
				continue;
			size_t n = strlen(root);
			while (n > 1 && root[n - 1] == '/')
				n--;
			snprintf(team_dir, sizeof(team_dir), "%.*s/%s", (int)n, n == 1 ? "" : root, team);
			scope = team_dir;
		}
		if (!(rest = below(scope, host_path))) {
			found_other |= below(root, host_path) != NULL;
			continue;
		}
		if (owner[0] && strcmp(owner, "*") && strcmp(owner, team)) {
			found_other = 1;
			continue;
		}
		_cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0)
			return hu_err_sys(err, "host mount root %s", root);
		/* the team's directory itself is resolved like the rest: a symlink
		 * there is refused, not followed */
		_cleanup_close_ int scopefd = owner[0] ? fcntl(rootfd, F_DUPFD_CLOEXEC, 0) : open_beneath(rootfd, team);
		if (scopefd < 0)
			return resolve_error(host_path, scope, err);
		int fd = open_beneath(scopefd, rest);
		if (fd < 0)
			return resolve_error(host_path, scope, err);
		return fd;
	}
	if (found_other)
		return hu_err_set(err, -EPERM, "host path %s belongs to another team's host mount root", host_path);
	return hu_err_set(err, -EINVAL, "host path %s is not under an allowed host mount root", host_path);
}
