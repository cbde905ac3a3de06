/*
 * The built-in template `base`, made from the host.
 *
 * It is a small skeleton root: the usual top-level directories, the host's
 * merged-/usr symlinks (bin -> usr/bin, ...), an empty /usr that every
 * sandbox covers with the host's /usr bound read-only, a *selected* set of
 * /etc files (never the whole of /etc: no shadow, no host keys, no host
 * configuration secrets), and generated /etc/passwd and /etc/group holding
 * only root and user (uid 1000, home /home/user, shell /bin/bash).
 *
 * Files are owned by uid 0 and 1000 on disk; the sandbox sees the template
 * through an idmapped mount, so they appear as root and user inside.
 */
#include <dirent.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime_internal.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

#define USER_UID 1000
#define COPY_MAX_DEPTH 8

/* /etc entries copied from the host when present: what dynamic linking,
 * shells, Python, Node, TLS and locale/timezone handling read. */
static const char *const etc_copy[] = {
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "bash.bashrc",
	"inputrc", "localtime", "timezone", "ssl", "ca-certificates", "ca-certificates.conf", "mime.types",
	"protocols", "services", "shells", "os-release", "debian_version", "python3", "python3.11",
	"terminfo", "magic", "magic.mime", "login.defs", "environment", "skel", "fonts", "gai.conf",
	"host.conf", "rpc", "locale.alias", "default", "mailcap", "papersize",
};

static const char passwd_text[] = "root:x:0:0:root:/root:/bin/bash\n"
				  "user:x:1000:1000:user:/home/user:/bin/bash\n"
				  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group_text[] = "root:x:0:\n"
				 "tty:x:5:\n"
				 "user:x:1000:\n"
				 "nogroup:x:65534:\n";
static const char hosts_text[] = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
static const char nsswitch_text[] = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
				    "networks: files\nprotocols: files\nservices: files\n";
/* The template's own login profile (every `commands.run` is a `bash -l`):
 * Debian's runs `$(id -u)`, a fork and exec in every command; bash knows its
 * EUID. The host's /etc/profile.d is host configuration and is not copied. */
static const char profile_text[] =
	"# /etc/profile: login shells in a hutch sandbox\n"
	"if [ \"${EUID:-$(id -u)}\" -eq 0 ]; then\n"
	"  PATH=\"/opt/hutch/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"\n"
	"else\n"
	"  PATH=\"/opt/hutch/bin:/usr/local/bin:/usr/bin:/bin\"\n"
	"fi\n"
	"export PATH\n"
	"if [ \"${PS1-}\" ]; then\n"
	"  if [ \"${BASH-}\" ] && [ \"$BASH\" != \"/bin/sh\" ]; then\n"
	"    [ -f /etc/bash.bashrc ] && . /etc/bash.bashrc\n"
	"  elif [ \"${EUID:-$(id -u)}\" -eq 0 ]; then\n"
	"    PS1='# '\n"
	"  else\n"
	"    PS1='$ '\n"
	"  fi\n"
	"fi\n"
	"for i in /etc/profile.d/*.sh; do\n"
	"  [ -r \"$i\" ] && . \"$i\"\n"
	"done\n"
	"unset i\n";
static const char resolv_text[] = "# hutch: this sandbox has no resolver configured\n";

static int copy_tree(int sdir, int ddir, const char *name, int depth, hu_err *err);

static int copy_file(int sdir, int ddir, const char *name, const struct stat *st, hu_err *err)
{
	_cleanup_close_ int in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return errno == EACCES ? 0 : hu_err_sys(err, "open %s", name);
	_cleanup_close_ int out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st->st_mode & 0755);
	if (out < 0)
		return hu_err_sys(err, "create %s", name);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (hu_write_all(out, buf, (size_t)n) < 0)
			return hu_err_sys(err, "write %s", name);
	if (n < 0)
		return hu_err_sys(err, "read %s", name);
	return 0;
}

static int copy_dir(int sdir, int ddir, const char *name, int depth, hu_err *err)
{
	if (mkdirat(ddir, name, 0755) < 0 && errno != EEXIST)
		return hu_err_sys(err, "mkdir %s", name);
	_cleanup_close_ int s = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int d = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0 || d < 0)
		return hu_err_sys(err, "open %s", name);
	DIR *dir = fdopendir(s);
	if (!dir)
		return hu_err_sys(err, "opendir %s", name);
	s = -1; /* owned by dir now */
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = copy_tree(dirfd(dir), d, de->d_name, depth + 1, err);
	}
	closedir(dir);
	return rc;
}

/* Copy regular files, directories and symlinks; skip everything else and
 * anything the host keeps unreadable (it is not meant for sandboxes). */
static int copy_tree(int sdir, int ddir, const char *name, int depth, hu_err *err)
{
	struct stat st;

	if (depth > COPY_MAX_DEPTH)
		return 0;
	if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : hu_err_sys(err, "stat %s", name);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(sdir, name, target, sizeof(target) - 1);
		if (n < 0)
			return hu_err_sys(err, "readlink %s", name);
		target[n] = '\0';
		if (symlinkat(target, ddir, name) < 0 && errno != EEXIST)
			return hu_err_sys(err, "symlink %s", name);
		return 0;
	}
	if (S_ISDIR(st.st_mode))
		return copy_dir(sdir, ddir, name, depth, err);
	if (S_ISREG(st.st_mode) && (st.st_mode & S_IROTH))
		return copy_file(sdir, ddir, name, &st, err);
	return 0;
}

static int put_file(int parent, const char *name, const char *text, mode_t mode, hu_err *err)
{
	_cleanup_close_ int fd = openat(parent, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0 || hu_write_all(fd, text, strlen(text)) < 0)
		return hu_err_sys(err, "write %s", name);
	return 0;
}

static int make_dirs(int root, hu_err *err)
{
	static const struct {
		const char *path;
		mode_t mode;
	} dirs[] = {
		{"usr", 0755}, {"etc", 0755}, {"proc", 0555}, {"sys", 0555}, {"dev", 0755}, {"run", 0755},
		{"tmp", 01777}, {"var", 0755}, {"var/tmp", 01777}, {"var/lib", 0755}, {"var/cache", 0755},
		{"var/log", 0755}, {"mnt", 0755}, {"opt", 0755}, {"srv", 0755}, {"media", 0755},
		{"home", 0755}, {"home/user", 0755}, {"root", 0700}, {"workspace", 0755},
		{"opt/hutch", 0755}, {"opt/hutch/bin", 0755},
	};
	for (size_t i = 0; i < HU_ARRAY_LEN(dirs); i++) {
		if (mkdirat(root, dirs[i].path, dirs[i].mode) < 0 && errno != EEXIST)
			return hu_err_sys(err, "mkdir %s", dirs[i].path);
		if (fchmodat(root, dirs[i].path, dirs[i].mode, 0) < 0)
			return hu_err_sys(err, "chmod %s", dirs[i].path);
	}
	if (fchownat(root, "home/user", USER_UID, USER_UID, 0) < 0 ||
	    fchownat(root, "workspace", USER_UID, USER_UID, 0) < 0)
		return hu_err_sys(err, "chown home/user");
	return 0;
}

/* Debian 12 merges /bin, /sbin and /lib* into /usr: mirror the host's links
 * so that /bin/bash and the ELF interpreter path /lib64/ld-linux... resolve
 * into the bound /usr. */
static int mirror_usr_links(int root, hu_err *err)
{
	static const char *const links[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
	for (size_t i = 0; i < HU_ARRAY_LEN(links); i++) {
		char target[PATH_MAX];
		char host[32];
		snprintf(host, sizeof(host), "/%s", links[i]);
		ssize_t n = readlink(host, target, sizeof(target) - 1);
		if (n < 0)
			continue; /* absent, or a real directory: nothing to mirror */
		target[n] = '\0';
		if (symlinkat(target, root, links[i]) < 0 && errno != EEXIST)
			return hu_err_sys(err, "symlink %s", links[i]);
	}
	return 0;
}

static int chown_tree(int parent, const char *name, uid_t uid, int depth)
{
	struct stat st;
	if (depth > COPY_MAX_DEPTH || fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (fchownat(parent, name, uid, uid, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode))
		return 0;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = chown_tree(dirfd(d), de->d_name, uid, depth + 1);
	closedir(d);
	return rc;
}

static int populate_home(int root, hu_err *err)
{
	_cleanup_close_ int skel = open("/etc/skel", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (skel < 0)
		return 0;
	_cleanup_close_ int home = openat(root, "home", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int roothome = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (home < 0 || roothome < 0)
		return hu_err_sys(err, "open home");
	/* copy_dir copies skel's contents into <dir>/<name>: go through /etc */
	_cleanup_close_ int etc = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (etc < 0)
		return hu_err_sys(err, "open /etc");
	if (renameat(home, "user", home, "user.tmp") < 0)
		return hu_err_sys(err, "rename home/user");
	int rc = copy_dir(etc, home, "skel", 0, err);
	if (rc == 0 && renameat(home, "skel", home, "user") < 0)
		rc = hu_err_sys(err, "rename skel");
	unlinkat(home, "user.tmp", AT_REMOVEDIR);
	if (rc < 0)
		return rc;
	if (fchmodat(home, "user", 0755, 0) < 0 || chown_tree(home, "user", USER_UID, 0) < 0)
		return hu_err_sys(err, "chown home/user");
	/* root's home gets the same shell profile */
	if (renameat(roothome, "root", roothome, "root.tmp") < 0)
		return hu_err_sys(err, "rename root");
	rc = copy_dir(etc, roothome, "skel", 0, err);
	if (rc == 0 && renameat(roothome, "skel", roothome, "root") < 0)
		rc = hu_err_sys(err, "rename skel");
	unlinkat(roothome, "root.tmp", AT_REMOVEDIR);
	if (rc == 0 && fchmodat(roothome, "root", 0700, 0) < 0)
		rc = hu_err_sys(err, "chmod root");
	return rc;
}

static int populate_etc(int root, hu_err *err)
{
	_cleanup_close_ int hostetc = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int etc = openat(root, "etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (hostetc < 0 || etc < 0)
		return hu_err_sys(err, "open etc");
	for (size_t i = 0; i < HU_ARRAY_LEN(etc_copy); i++)
		if (copy_tree(hostetc, etc, etc_copy[i], 0, err) < 0)
			return -1;
	if (put_file(etc, "passwd", passwd_text, 0644, err) < 0 || put_file(etc, "group", group_text, 0644, err) < 0 ||
	    put_file(etc, "hosts", hosts_text, 0644, err) < 0 || put_file(etc, "nsswitch.conf", nsswitch_text, 0644, err) < 0 ||
	    put_file(etc, "resolv.conf", resolv_text, 0644, err) < 0 || put_file(etc, "hostname", "sandbox\n", 0644, err) < 0 ||
	    put_file(etc, "profile", profile_text, 0644, err) < 0)
		return -1;
	if (mkdirat(etc, "profile.d", 0755) < 0 && errno != EEXIST)
		return hu_err_sys(err, "mkdir etc/profile.d");
	return 0;
}

int hu_template_rootfs(const struct hu_runtime *rt, const char *name, char *buf, size_t n, hu_err *err)
{
	if (!hu_sandbox_id_valid(name))
		return hu_err_set(err, EINVAL, "invalid template name '%s'", name);
	if ((size_t)snprintf(buf, n, "%s/%s/rootfs", rt->templates_dir, name) >= n)
		return hu_err_set(err, ENAMETOOLONG, "template path");
	return 0;
}

static int build_rootfs(const char *path, hu_err *err)
{
	if (hu_mkdir_p(path, 0755, err) < 0)
		return -1;
	if (chmod(path, 0755) < 0)
		return hu_err_sys(err, "chmod %s", path);
	_cleanup_close_ int root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return hu_err_sys(err, "open %s", path);
	if (make_dirs(root, err) < 0 || mirror_usr_links(root, err) < 0 || populate_etc(root, err) < 0 ||
	    populate_home(root, err) < 0)
		return -1;
	return 0;
}

/* Is the file `name` of dir byte for byte the content of fd? */
static bool same_content(int dir, const char *name, int fd)
{
	struct stat a, b;
	uint8_t x[16384], y[16384];
	_cleanup_close_ int in = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (in < 0 || fstat(in, &a) < 0 || fstat(fd, &b) < 0 || a.st_size != b.st_size || (a.st_mode & 07777) != 0755)
		return false;
	for (off_t off = 0; off < a.st_size;) {
		ssize_t n = pread(fd, x, sizeof(x), off);
		if (n <= 0 || read(in, y, (size_t)n) != n || memcmp(x, y, (size_t)n))
			return false;
		off += n;
	}
	return true;
}

/* What the sudo stamp says: the init file this runtime's memfd was copied
 * from and the installed shim, as stat sees them (inode, size, change
 * times). The comparison of the shim with the memfd reads 2 x 1.2 MB, which
 * cost every `hutch run` ~1 ms; when the stamp written after the last
 * comparison or install still matches, neither file has changed since
 * (only root writes the template dir; a rebuilt init or a rewritten shim
 * gets a new inode or change time) and the comparison is skipped. */
static int sudo_stamp(const struct hu_runtime *rt, int bin, char *buf, size_t n)
{
	const struct stat *i = &rt->init_stat;
	struct stat s;

	if (i->st_ino == 0 || fstatat(bin, "sudo", &s, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(s.st_mode))
		return -1;
	snprintf(buf, n, "init %llu %llu %lld %lld.%09ld %lld.%09ld\nsudo %llu %llu %lld %o %u %lld.%09ld %lld.%09ld\n",
		 (unsigned long long)i->st_dev, (unsigned long long)i->st_ino, (long long)i->st_size,
		 (long long)i->st_mtim.tv_sec, i->st_mtim.tv_nsec, (long long)i->st_ctim.tv_sec, i->st_ctim.tv_nsec,
		 (unsigned long long)s.st_dev, (unsigned long long)s.st_ino, (long long)s.st_size,
		 (unsigned)(s.st_mode & 07777), (unsigned)s.st_uid, (long long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec,
		 (long long)s.st_ctim.tv_sec, s.st_ctim.tv_nsec);
	return 0;
}

static bool sudo_stamp_matches(const struct hu_runtime *rt, const char *tdir, int bin)
{
	char path[PATH_MAX], want[256], have[256];
	hu_err ignore;

	snprintf(path, sizeof(path), "%s/sudo.stamp", tdir);
	return sudo_stamp(rt, bin, want, sizeof(want)) == 0 && hu_read_file(path, have, sizeof(have), &ignore) >= 0 &&
	       !strcmp(have, want);
}

/* After a comparison or an install: a failure only costs the next run a comparison. */
static void sudo_stamp_write(const struct hu_runtime *rt, const char *tdir, int bin)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16], stamp[256];
	hu_err ignore;

	if (sudo_stamp(rt, bin, stamp, sizeof(stamp)) < 0)
		return;
	snprintf(path, sizeof(path), "%s/sudo.stamp", tdir);
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	if (hu_write_file(tmp, stamp, strlen(stamp), O_CREAT | O_TRUNC | O_NOFOLLOW, 0600, &ignore) < 0 ||
	    rename(tmp, path) < 0)
		unlink(tmp);
}

/* /opt/hutch/bin/sudo: hutch-init itself, which acts as the sudo shim under
 * that name (src/init/sudo.h). Rewritten at every start, so it always
 * matches the init that serves it; replaced by rename, so a sandbox running
 * the old one is not disturbed. The directory is opened beneath the
 * template with no symlink on the way: a built template's tree came from an
 * archive, and must not steer this write elsewhere on the host. */
static int install_sudo(const struct hu_runtime *rt, const char *tdir, hu_err *err)
{
	char tmp[64];
	uint8_t buf[65536];
	ssize_t n;
	off_t off = 0;
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};

	if (rt->init_memfd < 0)
		return 0; /* a runtime that never starts sandboxes */
	_cleanup_close_ int tfd = open(tdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0)
		return hu_err_sys(err, "open %s", tdir);
	_cleanup_close_ int bin = (int)syscall(SYS_openat2, tfd, "rootfs/opt/hutch/bin", &how, sizeof(how));
	if (bin < 0)
		return hu_err_sys(err, "open %s/rootfs/opt/hutch/bin", tdir);
	if (sudo_stamp_matches(rt, tdir, bin))
		return 0;
	if (same_content(bin, "sudo", rt->init_memfd)) {
		sudo_stamp_write(rt, tdir, bin);
		return 0;
	}
	snprintf(tmp, sizeof(tmp), ".sudo-%d", (int)getpid());
	unlinkat(bin, tmp, 0);
	_cleanup_close_ int out = openat(bin, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0755);
	if (out < 0)
		return hu_err_sys(err, "create %s/rootfs/opt/hutch/bin/%s", tdir, tmp);
	while ((n = pread(rt->init_memfd, buf, sizeof(buf), off)) > 0) {
		if (hu_write_all(out, buf, (size_t)n) < 0) {
			unlinkat(bin, tmp, 0);
			return hu_err_sys(err, "write %s", tmp);
		}
		off += n;
	}
	if (n < 0 || fchown(out, 0, 0) < 0 || fchmod(out, 0755) < 0 || renameat(bin, tmp, bin, "sudo") < 0) {
		hu_err_sys(err, "install %s/rootfs/opt/hutch/bin/sudo", tdir);
		unlinkat(bin, tmp, 0);
		return -1;
	}
	sudo_stamp_write(rt, tdir, bin);
	return 0;
}

int hu_template_own_usr(const struct hu_runtime *rt, const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s/own-usr", rt->templates_dir, name);
	return access(path, F_OK) == 0;
}

int hu_template_refresh(struct hu_runtime *rt, const char *name, hu_err *err)
{
	char tdir[PATH_MAX];

	if (!hu_sandbox_id_valid(name))
		return hu_err_set(err, EINVAL, "invalid template name '%s'", name);
	snprintf(tdir, sizeof(tdir), "%s/%s", rt->templates_dir, name);
	if (install_sudo(rt, tdir, err) < 0) {
		hu_err_prefix(err, "template %s", name);
		return -1;
	}
	return 0;
}

static int layout_current(const char *tdir)
{
	char path[PATH_MAX], buf[32];
	hu_err ignore;
	snprintf(path, sizeof(path), "%s/layout", tdir);
	if (hu_read_file(path, buf, sizeof(buf), &ignore) < 0)
		return 0;
	return atoi(buf) == HU_TEMPLATE_LAYOUT;
}

/* Build into a private directory, then rename it into place: a reader never
 * sees a half-built template, and concurrent builders do not collide. */
int hu_template_ensure_base(struct hu_runtime *rt, hu_err *err)
{
	char tdir[PATH_MAX], tmp[PATH_MAX], old[PATH_MAX], path[PATH_MAX];
	char layout[16];

	snprintf(tdir, sizeof(tdir), "%s/base", rt->templates_dir);
	if (layout_current(tdir))
		return install_sudo(rt, tdir, err);
	snprintf(tmp, sizeof(tmp), "%s/.build-base-%d", rt->templates_dir, (int)getpid());
	if (hu_rm_rf(tmp, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/rootfs", tmp);
	if (build_rootfs(path, err) < 0)
		goto fail;
	snprintf(path, sizeof(path), "%s/layout", tmp);
	snprintf(layout, sizeof(layout), "%d\n", HU_TEMPLATE_LAYOUT);
	if (hu_write_file(path, layout, strlen(layout), O_CREAT | O_TRUNC, 0644, err) < 0)
		goto fail;
	/* move an outdated template aside before the new one takes its name */
	snprintf(old, sizeof(old), "%s/.old-base-%d", rt->templates_dir, (int)getpid());
	if (rename(tdir, old) == 0)
		hu_rm_rf(old, err);
	if (rename(tmp, tdir) < 0) {
		if ((errno == ENOTEMPTY || errno == EEXIST) && layout_current(tdir)) {
			hu_rm_rf(tmp, err); /* another builder won the race */
			hu_err_clear(err);
			return install_sudo(rt, tdir, err);
		}
		hu_err_sys(err, "rename %s", tmp);
		goto fail;
	}
	return install_sudo(rt, tdir, err);
fail:
	{
		hu_err ignore;
		hu_rm_rf(tmp, &ignore);
	}
	hu_err_prefix(err, "build template base");
	return -1;
}
