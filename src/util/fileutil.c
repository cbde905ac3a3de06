#include "util/fileutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/hex.h"

int hu_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int hu_replace_private_at(int dirfd, const char *name, const struct iovec *parts, size_t n_parts, hu_err *err)
{
	char tmp[NAME_MAX + 1], rnd[17];

	if (hu_random_hex(rnd, 8, err) < 0)
		return -1;
	if (snprintf(tmp, sizeof(tmp), "%s.%s.tmp", name, rnd) >= (int)sizeof(tmp))
		return hu_err_set(err, ENAMETOOLONG, "%s: name too long", name);
	_cleanup_close_ int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return hu_err_sys(err, "create %s", tmp);
	int rc = 0;
	/* the mode asked for at creation is masked by the umask: set it */
	if (fchmod(fd, 0600) < 0)
		rc = hu_err_sys(err, "chmod %s", tmp);
	for (size_t i = 0; rc == 0 && i < n_parts; i++) {
		if (hu_write_all(fd, parts[i].iov_base, parts[i].iov_len) < 0)
			rc = hu_err_sys(err, "write %s", tmp);
	}
	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		rc = hu_err_sys(err, "rename %s", tmp);
	if (rc < 0)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

int hu_write_file(const char *path, const void *buf, size_t len, int extra_flags, mode_t mode, hu_err *err)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | extra_flags, mode);
	if (fd < 0)
		return hu_err_sys(err, "open %s", path);
	if (hu_write_all(fd, buf, len) < 0)
		return hu_err_sys(err, "write %s", path);
	return 0;
}

int hu_write_str(const char *path, const char *s, hu_err *err)
{
	return hu_write_file(path, s, strlen(s), 0, 0, err);
}

ssize_t hu_read_file(const char *path, char *buf, size_t cap, hu_err *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t used = 0;

	if (fd < 0)
		return hu_err_sys(err, "open %s", path);
	while (used + 1 < cap) {
		ssize_t n = read(fd, buf + used, cap - 1 - used);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return hu_err_sys(err, "read %s", path);
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	buf[used] = '\0';
	return (ssize_t)used;
}

int hu_mkdir_p(const char *path, mode_t mode, hu_err *err)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(tmp))
		return hu_err_set(err, ENAMETOOLONG, "mkdir %s", path);
	/* the whole path first: it usually exists, or only its last part is
	 * missing (a sandbox's directory), and each level tried is a lookup */
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return hu_err_sys(err, "mkdir %s", path);
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return hu_err_sys(err, "mkdir %s", tmp);
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return hu_err_sys(err, "mkdir %s", tmp);
	return 0;
}

static int rm_at(int parent, const char *name, dev_t dev, hu_err *err)
{
	struct stat st;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : hu_err_sys(err, "stat %s", name);
	if (S_ISDIR(st.st_mode)) {
		if (st.st_dev != dev)
			return hu_err_set(err, EBUSY, "refusing to remove %s: a mount point", name);
		int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return hu_err_sys(err, "open %s", name);
		DIR *d = fdopendir(fd);
		if (!d) {
			close(fd);
			return hu_err_sys(err, "opendir %s", name);
		}
		struct dirent *de;
		int rc = 0;
		while ((de = readdir(d)) != NULL) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (rm_at(dirfd(d), de->d_name, dev, err) < 0) {
				rc = -1;
				break;
			}
		}
		closedir(d);
		if (rc < 0)
			return rc;
		if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			return hu_err_sys(err, "rmdir %s", name);
		return 0;
	}
	if (unlinkat(parent, name, 0) < 0 && errno != ENOENT)
		return hu_err_sys(err, "unlink %s", name);
	return 0;
}

int hu_rm_at(int parent, const char *name, hu_err *err)
{
	struct stat st;

	if (fstat(parent, &st) < 0)
		return hu_err_sys(err, "stat parent of %s", name);
	return rm_at(parent, name, st.st_dev, err);
}

int hu_rm_rf(const char *path, hu_err *err)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : hu_err_sys(err, "stat %s", path);
	if (rm_at(AT_FDCWD, path, st.st_dev, err) < 0) {
		hu_err_prefix(err, "remove %s", path);
		return -1;
	}
	return 0;
}
