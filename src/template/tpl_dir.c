/*
 * A host directory as a template source (template.h): walked with fds and
 * O_NOFOLLOW, symlinks copied as symlinks, special files skipped by the
 * writer. Only what root can read of it is copied; nothing outside it is
 * reached (the walk never follows a link and never leaves its mount).
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "template/template.h"
#include "util/cleanup.h"

#define DIR_MAX_DEPTH 128

static ssize_t read_fd(void *arg, void *buf, size_t n)
{
	return read(*(int *)arg, buf, n);
}

static int walk(struct hu_tpl_writer *w, int dfd, dev_t dev, char *path, size_t len, int depth, hu_err *err)
{
	if (depth > DIR_MAX_DEPTH)
		return hu_err_set(err, -ELOOP, "'%.200s': nested deeper than %d", path, DIR_MAX_DEPTH);
	int dup_fd = dup(dfd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return hu_err_sys(err, "open directory '%.200s'", path);
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		struct stat st;
		char target[PATH_MAX];
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		size_t nlen = strlen(de->d_name);
		if (len + 1 + nlen + 1 > PATH_MAX) {
			rc = hu_err_set(err, -ENAMETOOLONG, "'%.200s/%s': path too long", path, de->d_name);
			break;
		}
		size_t sub = len;
		if (len)
			path[sub++] = '/';
		memcpy(path + sub, de->d_name, nlen + 1);
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = hu_err_sys(err, "stat '%.200s'", path);
			break;
		}
		struct hu_tpl_entry e = {.path = path, .mode = st.st_mode, .uid = st.st_uid, .gid = st.st_gid,
					 .size = st.st_size, .mtime = st.st_mtime};
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlinkat(dfd, de->d_name, target, sizeof(target) - 1);
			if (n < 0) {
				rc = hu_err_sys(err, "readlink '%.200s'", path);
				break;
			}
			target[n] = '\0';
			e.link = target;
			rc = hu_tpl_put(w, &e, NULL, NULL, err);
		} else if (S_ISREG(st.st_mode)) {
			_cleanup_close_ int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				rc = hu_err_sys(err, "open '%.200s'", path);
				break;
			}
			rc = hu_tpl_put(w, &e, read_fd, &fd, err);
		} else if (S_ISDIR(st.st_mode)) {
			if (st.st_dev != dev) {
				rc = hu_err_set(err, -EXDEV, "'%.200s' is another file system's mount point", path);
				break;
			}
			_cleanup_close_ int sub_fd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub_fd < 0) {
				rc = hu_err_sys(err, "open '%.200s'", path);
				break;
			}
			rc = hu_tpl_put(w, &e, NULL, NULL, err);
			if (rc == 0)
				rc = walk(w, sub_fd, dev, path, strlen(path), depth + 1, err);
		} else {
			rc = hu_tpl_put(w, &e, NULL, NULL, err); /* counted as skipped */
		}
		path[len] = '\0';
	}
	closedir(d);
	return rc;
}

int hu_tpl_import_dir(struct hu_tpl_writer *w, const char *dir, hu_err *err)
{
	struct stat st;
	char path[PATH_MAX] = "";
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0)
		return hu_err_sys(err, "open %s", dir);
	return walk(w, fd, st.st_dev, path, 0, 0, err);
}
