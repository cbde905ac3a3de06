/*
 * Make a foreign tree fit to be a sandbox's root (template.h).
 *
 * The runtime mounts proc, sysfs, /dev and (for base) /usr over directories
 * of the tree, and the daemon writes /opt/hutch/bin/sudo into it: those must
 * be real directories of the tree, never symlinks that a later path walk on
 * the host could follow. E2B clients run commands as `user` (uid 1000) by
 * default, so a tree whose /etc/passwd lacks that name gets it added (an
 * image's own uid-1000 account, if any, keeps its line: the first entry
 * wins for lookups by uid, ours for lookups by name).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "template/template.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

#define ACCOUNT_FILE_MAX (1u << 20)
#define USER_ID 1000

/* dirs[i] must be a real directory: whatever else is there goes */
static int real_dir(int root, const char *path, mode_t mode, hu_err *err)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	struct stat st;

	snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - path) : 0, path);
	_cleanup_close_ int pfd = hu_tpl_open_dir(root, parent, 1, err);
	if (pfd < 0)
		return -1;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		if (hu_rm_at(pfd, name, err) < 0)
			return -1;
	}
	if (mkdirat(pfd, name, mode) < 0 || fchmodat(pfd, name, mode, 0) < 0 || fchownat(pfd, name, 0, 0, 0) < 0)
		return hu_err_sys(err, "mkdir %s", path);
	return 0;
}

/* etc/<name> as text (a missing file is empty); a symlink is not followed */
static char *read_account_file(int etc, const char *name, hu_err *err)
{
	_cleanup_close_ int fd = openat(etc, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char *buf;

	if (fd < 0) {
		if (errno != ENOENT && errno != ELOOP) {
			hu_err_sys(err, "open etc/%s", name);
			return NULL;
		}
		return calloc(1, 1);
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > ACCOUNT_FILE_MAX) {
		hu_err_set(err, -EINVAL, "etc/%s: not a regular file of at most %u bytes", name, ACCOUNT_FILE_MAX);
		return NULL;
	}
	buf = calloc(1, (size_t)st.st_size + 1);
	if (!buf || pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		hu_err_set(err, -EIO, "read etc/%s", name);
		return NULL;
	}
	return buf;
}

static int has_account(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ':')
			return 1;
	return 0;
}

/* Rewrite etc/<name> with `head` before and `tail` after its text (when
 * they are not NULL); replaced by rename, 0644, root's. */
static int rewrite(int etc, const char *name, const char *head, const char *text, const char *tail, hu_err *err)
{
	char tmp[64];
	snprintf(tmp, sizeof(tmp), ".%s.hutch", name);
	unlinkat(etc, tmp, 0);
	_cleanup_close_ int fd = openat(etc, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	size_t len = strlen(text);
	if (fd < 0)
		return hu_err_sys(err, "create etc/%s", name);
	if ((head && hu_write_all(fd, head, strlen(head)) < 0) || hu_write_all(fd, text, len) < 0 ||
	    (len && text[len - 1] != '\n' && hu_write_all(fd, "\n", 1) < 0) ||
	    (tail && hu_write_all(fd, tail, strlen(tail)) < 0) || fchmod(fd, 0644) < 0 || fchown(fd, 0, 0) < 0 ||
	    renameat(etc, tmp, etc, name) < 0) {
		hu_err_sys(err, "write etc/%s", name);
		unlinkat(etc, tmp, 0);
		return -1;
	}
	return 0;
}

static int ensure_accounts(int root, hu_err *err)
{
	_cleanup_close_ int etc = hu_tpl_open_dir(root, "etc", 1, err);
	if (etc < 0)
		return -1;
	_cleanup_free_ char *passwd = read_account_file(etc, "passwd", err);
	_cleanup_free_ char *group = passwd ? read_account_file(etc, "group", err) : NULL;
	if (!passwd || !group)
		return -1;
	/* the shell user's commands run in: bash when the tree has one */
	_cleanup_close_ int bin = hu_tpl_open_dir(root, "bin", 0, err);
	struct stat st;
	const char *shell = bin >= 0 && fstatat(bin, "bash", &st, 0) == 0 ? "/bin/bash" : "/bin/sh";
	hu_err_clear(err);
	char user_line[128];
	snprintf(user_line, sizeof(user_line), "user:x:%d:%d:user:/home/user:%s\n", USER_ID, USER_ID, shell);
	int need_root = !has_account(passwd, "root"), need_user = !has_account(passwd, "user");
	if ((need_root || need_user) &&
	    rewrite(etc, "passwd", need_root ? "root:x:0:0:root:/root:/bin/sh\n" : NULL, passwd,
		    need_user ? user_line : NULL, err) < 0)
		return -1;
	need_root = !has_account(group, "root");
	need_user = !has_account(group, "user");
	if ((need_root || need_user) &&
	    rewrite(etc, "group", need_root ? "root:x:0:\n" : NULL, group, need_user ? "user:x:1000:\n" : NULL,
		    err) < 0)
		return -1;
	return 0;
}

int hu_tpl_fixup(int root, hu_err *err)
{
	static const struct {
		const char *path;
		mode_t mode;
	} dirs[] = {
		{"etc", 0755}, {"proc", 0555}, {"sys", 0555}, {"dev", 0755}, {"tmp", 01777}, {"run", 0755},
		{"usr", 0755}, {"opt", 0755}, {"opt/hutch", 0755}, {"opt/hutch/bin", 0755}, {"home", 0755},
		{"root", 0700},
	};
	struct stat st;

	if (fchmod(root, 0755) < 0 || fchown(root, 0, 0) < 0)
		return hu_err_sys(err, "chmod the root");
	for (size_t i = 0; i < HU_ARRAY_LEN(dirs); i++)
		if (real_dir(root, dirs[i].path, dirs[i].mode, err) < 0)
			return -1;
	if (ensure_accounts(root, err) < 0)
		return -1;
	_cleanup_close_ int home = hu_tpl_open_dir(root, "home", 0, err);
	if (home < 0)
		return -1;
	if (fstatat(home, "user", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (mkdirat(home, "user", 0755) < 0 || fchownat(home, "user", USER_ID, USER_ID, 0) < 0)
			return hu_err_sys(err, "mkdir home/user");
	}
	_cleanup_close_ int etc = hu_tpl_open_dir(root, "etc", 0, err);
	if (etc < 0)
		return -1;
	if (fstatat(etc, "hosts", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		static const char hosts[] = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
		_cleanup_close_ int fd = openat(etc, "hosts", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 || hu_write_all(fd, hosts, sizeof(hosts) - 1) < 0)
			return hu_err_sys(err, "write etc/hosts");
	}
	return 0;
}
