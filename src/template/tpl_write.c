/*
 * The one writer of a template tree (template.h): every entry of a tar
 * layer, of an OCI image or of a copied directory is written here, relative
 * to an fd of the tree's root. Nothing is resolved through the host's file
 * system: parents are opened with openat2(RESOLVE_IN_ROOT), so a symlink the
 * tree already holds ("etc -> /etc", "x -> ../../..") can only lead to
 * another place inside the tree, and the final component is never followed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "template/template.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

#define ID_LIMIT 65536u /* a sandbox maps ids 0..65535 */

static int resolve_in_root(int root, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	return (int)syscall(SYS_openat2, root, *path ? path : ".", &how, sizeof(how));
}

int hu_tpl_open_dir(int root, const char *path, int create, hu_err *err)
{
	int fd = resolve_in_root(root, path, O_RDONLY | O_DIRECTORY);
	if (fd >= 0 || errno != ENOENT || !create) {
		if (fd < 0)
			hu_err_sys(err, "open directory '%.200s'", path);
		return fd;
	}
	/* make the missing components one by one, each resolved in the root */
	char prefix[PATH_MAX];
	size_t len = strlen(path);
	if (len >= sizeof(prefix))
		return hu_err_set(err, -ENAMETOOLONG, "path '%.200s'", path);
	for (size_t i = 0; i <= len; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		memcpy(prefix, path, i);
		prefix[i] = '\0';
		_cleanup_close_ int cur = resolve_in_root(root, prefix, O_RDONLY | O_DIRECTORY);
		if (cur >= 0)
			continue;
		if (errno != ENOENT)
			return hu_err_sys(err, "open directory '%.200s'", prefix);
		char *slash = strrchr(prefix, '/');
		const char *name = slash ? slash + 1 : prefix;
		if (slash)
			*slash = '\0';
		_cleanup_close_ int parent = resolve_in_root(root, slash ? prefix : "", O_RDONLY | O_DIRECTORY);
		if (parent < 0)
			return hu_err_sys(err, "open directory '%.200s'", slash ? prefix : ".");
		if (mkdirat(parent, name, 0755) < 0 && errno != EEXIST)
			return hu_err_sys(err, "mkdir '%.200s'", path);
	}
	fd = resolve_in_root(root, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		hu_err_sys(err, "open directory '%.200s'", path);
	return fd;
}

/* Split "a/b/c" into the parent's fd (made if missing) and "c". */
static int open_parent(struct hu_tpl_writer *w, const char *path, const char **name, hu_err *err)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	*name = slash ? slash + 1 : path;
	if (!**name)
		return hu_err_set(err, -EINVAL, "entry '%.200s': empty name", path);
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	return hu_tpl_open_dir(w->root, dir, 1, err);
}

static int set_owner_mode(int parent, const char *name, const struct hu_tpl_entry *e, hu_err *err)
{
	uid_t uid = e->uid < ID_LIMIT ? e->uid : 0;
	gid_t gid = e->gid < ID_LIMIT ? e->gid : 0;

	if (fchownat(parent, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return hu_err_sys(err, "chown '%.200s'", e->path);
	if (S_ISLNK(e->mode))
		return 0;
	/* no setuid/setgid files: sandboxes run with no_new_privs anyway, and
	 * a setuid file must not exist on the host's disk either */
	if (fchmodat(parent, name, e->mode & 01777, 0) < 0)
		return hu_err_sys(err, "chmod '%.200s'", e->path);
	if (e->mtime > 0 && !S_ISDIR(e->mode)) {
		struct timespec ts[2] = {{.tv_sec = e->mtime}, {.tv_sec = e->mtime}};
		utimensat(parent, name, ts, AT_SYMLINK_NOFOLLOW);
	}
	return 0;
}

static int write_content(struct hu_tpl_writer *w, int fd, const struct hu_tpl_entry *e, hu_tpl_read_fn rd,
			 void *arg, hu_err *err)
{
	char buf[65536];
	ssize_t n;

	while ((n = rd(arg, buf, sizeof(buf))) > 0) {
		w->bytes += (uint64_t)n;
		if (w->bytes > w->caps.max_bytes)
			return hu_err_set(err, -EFBIG, "entry '%.200s': the template passes its size cap of %llu bytes",
					  e->path, (unsigned long long)w->caps.max_bytes);
		if (hu_write_all(fd, buf, (size_t)n) < 0)
			return hu_err_sys(err, "write '%.200s'", e->path);
	}
	if (n < 0)
		return hu_err_set(err, -EIO, "read the content of '%.200s'", e->path);
	return 0;
}

int hu_tpl_put(struct hu_tpl_writer *w, const struct hu_tpl_entry *e, hu_tpl_read_fn rd, void *arg, hu_err *err)
{
	const char *name;
	struct stat st;

	if (!S_ISREG(e->mode) && !S_ISDIR(e->mode) && !S_ISLNK(e->mode)) {
		w->skipped++; /* device nodes, fifos, sockets: never on a template's disk */
		return 0;
	}
	if (!*e->path) {
		if (!S_ISDIR(e->mode))
			return hu_err_set(err, -EINVAL, "entry '.': the root must be a directory");
		return 0; /* the root keeps its own owner and mode */
	}
	if (++w->files > w->caps.max_files)
		return hu_err_set(err, -EMFILE, "the template passes its cap of %llu files",
				  (unsigned long long)w->caps.max_files);
	if (S_ISREG(e->mode) && !e->hardlink && e->size > 0 &&
	    w->bytes + (uint64_t)e->size > w->caps.max_bytes)
		return hu_err_set(err, -EFBIG, "entry '%.200s' (%lld bytes): the template passes its size cap of %llu bytes",
				  e->path, (long long)e->size, (unsigned long long)w->caps.max_bytes);
	_cleanup_close_ int parent = open_parent(w, e->path, &name, err);
	if (parent < 0)
		return -1;
	int exists = fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (exists && !(S_ISDIR(st.st_mode) && S_ISDIR(e->mode)) && hu_rm_at(parent, name, err) < 0)
		return -1;
	if (S_ISDIR(e->mode)) {
		if (mkdirat(parent, name, 0700) < 0 && errno != EEXIST)
			return hu_err_sys(err, "mkdir '%.200s'", e->path);
	} else if (S_ISLNK(e->mode) && !e->hardlink) {
		if (symlinkat(e->link ? e->link : "", parent, name) < 0)
			return hu_err_sys(err, "symlink '%.200s'", e->path);
	} else if (e->hardlink) {
		const char *tname;
		_cleanup_close_ int tparent = open_parent(w, e->link ? e->link : "", &tname, err);
		if (tparent < 0)
			return -1;
		if (fstatat(tparent, tname, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
			return hu_err_set(err, -EINVAL, "hard link '%.200s': target '%.200s' is not a file in the template",
					  e->path, e->link ? e->link : "");
		if (linkat(tparent, tname, parent, name, 0) < 0)
			return hu_err_sys(err, "hard link '%.200s'", e->path);
		return 0; /* it shares the target's owner and mode */
	} else {
		_cleanup_close_ int fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return hu_err_sys(err, "create '%.200s'", e->path);
		if (rd && write_content(w, fd, e, rd, arg, err) < 0)
			return -1;
	}
	return set_owner_mode(parent, name, e, err);
}

int hu_tpl_remove(struct hu_tpl_writer *w, const char *path, hu_err *err)
{
	const char *name;
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	name = slash ? slash + 1 : path;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	_cleanup_close_ int parent = hu_tpl_open_dir(w->root, dir, 0, err);
	if (parent < 0) {
		if (err->code == ENOENT || err->code == ENOTDIR) {
			hu_err_clear(err); /* nothing there to hide */
			return 0;
		}
		return -1;
	}
	return hu_rm_at(parent, name, err);
}

int hu_tpl_clear_dir(struct hu_tpl_writer *w, const char *dir, hu_err *err)
{
	_cleanup_close_ int fd = hu_tpl_open_dir(w->root, dir, 0, err);
	if (fd < 0) {
		if (err->code == ENOENT || err->code == ENOTDIR) {
			hu_err_clear(err);
			return 0;
		}
		return -1;
	}
	int dup_fd = dup(fd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return hu_err_sys(err, "open directory '%.200s'", dir);
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = hu_rm_at(fd, de->d_name, err);
	closedir(d);
	return rc;
}
