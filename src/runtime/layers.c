/*
 * The host's layer store: which backend, and bringing it up (layers.h).
 *
 * The image backend makes <data_dir>/layers.img once (sparse, so it takes
 * only what is written; mounted with discard=async, so deleted files give
 * their space back to the host), attaches it to a loop device with direct
 * I/O (the sandbox's page cache is the btrfs one, charged to its cgroup; no
 * second copy in the host's cache of the image file) and mounts it on
 * <data_dir>/layers. That is the one hutch mount in the host's namespace;
 * no per-sandbox mount is ever made there.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/btrfs.h"
#include "runtime/layers.h"
#include "util/cleanup.h"
#include "util/fileutil.h"
#include "util/fstype.h"
#include "util/parse.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

#define MIB (1024ull * 1024ull)
#define GIB (1024ull * MIB)
/* the smallest image: btrfs needs ~120 MiB for itself; a few sandboxes fit */
#define IMAGE_MIN (1 * GIB)

int hu_layers_choose(const struct hu_layers_facts *f, enum hu_layers_kind *kind, char *reason, size_t n,
		     hu_err *err)
{
	const char *want = f->want[0] ? f->want : "auto";

	if (strcmp(want, "auto") && strcmp(want, "data-dir") && strcmp(want, "image"))
		return hu_err_set(err, EINVAL, "HUTCH_LAYERS=%s: expected auto, data-dir or image", want);
	if (!strcmp(want, "image")) {
		*kind = HU_LAYERS_IMAGE;
		snprintf(reason, n, "HUTCH_LAYERS=image");
		return 0;
	}
	if (f->on_btrfs && f->btrfs_quota) {
		*kind = HU_LAYERS_DATA_DIR;
		snprintf(reason, n, "the data dir is on btrfs with quota groups enabled");
		return 0;
	}
	if (!strcmp(want, "data-dir"))
		return hu_err_set(err, EINVAL, "HUTCH_LAYERS=data-dir: the data dir is on %s%s, which cannot cap a layer",
				  f->fs_name, f->on_btrfs ? " without quota groups" : "");
	*kind = HU_LAYERS_IMAGE;
	if (f->on_btrfs)
		snprintf(reason, n, "the data dir is on btrfs without quota groups (`btrfs quota enable` on it, "
				    "or keep the image)");
	else
		snprintf(reason, n, "the data dir is on %s: no per-sandbox caps with copy-on-write there, so the "
				    "layers live in hutch's own btrfs image", f->fs_name);
	return 0;
}

static int gather_facts(const struct hu_runtime_config *cfg, struct hu_layers_facts *f, char *fsid, size_t n,
			hu_err *err)
{
	struct statfs sfs;
	char mode[16];

	memset(f, 0, sizeof(*f));
	fsid[0] = '\0';
	snprintf(f->want, sizeof(f->want), "%s", cfg->layers);
	_cleanup_close_ int fd = open(cfg->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return hu_err_sys(err, "open %s", cfg->data_dir);
	if (fstatfs(fd, &sfs) < 0)
		return hu_err_sys(err, "statfs %s", cfg->data_dir);
	snprintf(f->fs_name, sizeof(f->fs_name), "%s", hu_fs_type_name((unsigned long)sfs.f_type));
	f->on_btrfs = sfs.f_type == (typeof(sfs.f_type))BTRFS_SUPER_MAGIC;
	if (f->on_btrfs) {
		if (hu_btrfs_fsid(fd, fsid, n, err) < 0)
			return -1;
		f->btrfs_quota = hu_btrfs_quota_mode(fsid, mode, sizeof(mode));
	}
	return 0;
}

static int is_mount_root(const char *path)
{
	struct statx stx;
	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) < 0)
		return 0;
	return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* Run argv (a tool looked up in the system's bin and sbin dirs); its first
 * line of output goes into the error message when it fails. */
static int run_tool(char *const argv[], hu_err *err)
{
	int pipefd[2];
	char out[256] = "";

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return hu_err_sys(err, "pipe");
	pid_t pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return hu_err_sys(err, "fork");
	}
	if (pid == 0) {
		char *envp[] = {"PATH=/usr/local/sbin:/usr/sbin:/sbin:/usr/local/bin:/usr/bin:/bin", NULL};
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		execvpe(argv[0], argv, envp);
		dprintf(2, "%s", strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	/* keep the first bytes for the message, drain the rest */
	size_t got = 0;
	char chunk[512];
	ssize_t r;
	while ((r = read(pipefd[0], chunk, sizeof(chunk))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		size_t take = (size_t)r < sizeof(out) - 1 - got ? (size_t)r : sizeof(out) - 1 - got;
		memcpy(out + got, chunk, take);
		got += take;
	}
	out[got] = '\0';
	close(pipefd[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	out[strcspn(out, "\n")] = '\0';
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return hu_err_set(err, ENOENT, "%s: %s (install btrfs-progs)", argv[0], out);
	return hu_err_set(err, EIO, "%s failed: %s", argv[0], out);
}

/* The size of a new image: HUTCH_LAYERS_SIZE, or what the data dir's file
 * system has free now (the image is sparse: it takes only what is written). */
static int image_size(const struct hu_runtime_config *cfg, uint64_t *bytes, hu_err *err)
{
	struct statfs sfs;

	if (cfg->layers_size[0]) {
		if (hu_parse_size(cfg->layers_size, bytes, err) < 0) {
			hu_err_prefix(err, "HUTCH_LAYERS_SIZE");
			return -1;
		}
	} else {
		if (statfs(cfg->data_dir, &sfs) < 0)
			return hu_err_sys(err, "statfs %s", cfg->data_dir);
		*bytes = (uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize;
	}
	*bytes &= ~(MIB - 1);
	if (*bytes < IMAGE_MIN)
		return hu_err_set(err, ENOSPC, "a layers image needs at least 1 GiB (%llu MiB %s)",
				  (unsigned long long)(*bytes / MIB), cfg->layers_size[0] ? "asked for" : "free");
	return 0;
}

/* Make <data_dir>/layers.img: a sparse file with a fresh btrfs, renamed
 * into place only once complete. */
static int make_image(const struct hu_layers *ly, const struct hu_runtime_config *cfg, hu_err *err)
{
	char tmp[PATH_MAX + 8];
	uint64_t bytes;

	if (image_size(cfg, &bytes, err) < 0)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.new", ly->image);
	unlink(tmp);
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return hu_err_sys(err, "create %s", tmp);
	if (ftruncate(fd, (off_t)bytes) < 0) {
		hu_err_sys(err, "size %s", tmp);
		unlink(tmp);
		return -1;
	}
	/* single metadata: one file on one disk gains nothing from a second
	 * copy, and every metadata write would cost two */
	char *argv[] = {"mkfs.btrfs", "-q", "-f", "-m", "single", "-d", "single", "-L", "hutch-layers", tmp, NULL};
	if (run_tool(argv, err) < 0 || fsync(fd) < 0 || rename(tmp, ly->image) < 0) {
		if (err->code == 0)
			hu_err_sys(err, "install %s", ly->image);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* The loop device the image is already attached to (a mount of it was
 * detached but is still alive in some namespace): attaching it twice would
 * give two writers of one file system. -1 if none. */
static int find_loop(const char *image)
{
	DIR *d = opendir("/sys/block");
	struct dirent *de;
	char path[PATH_MAX], buf[PATH_MAX];
	hu_err ignore;
	int found = -1;

	if (!d)
		return -1;
	while (found < 0 && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "loop", 4))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file", de->d_name);
		if (hu_read_file(path, buf, sizeof(buf), &ignore) < 0)
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		if (!strcmp(buf, image))
			found = atoi(de->d_name + 4);
	}
	closedir(d);
	return found;
}

/* Attach the image to a free loop device (direct I/O where the host's file
 * system allows it; detached by the kernel when its last mount goes). */
static int attach_loop(const char *image, char *dev, size_t n, hu_err *err)
{
	char real[PATH_MAX];
	int nr = realpath(image, real) ? find_loop(real) : -1;
	if (nr >= 0) {
		snprintf(dev, n, "/dev/loop%d", nr);
		int fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return hu_err_sys(err, "open %s", dev);
		return fd;
	}
	_cleanup_close_ int img = open(image, O_RDWR | O_CLOEXEC);
	if (img < 0)
		return hu_err_sys(err, "open %s", image);
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return hu_err_sys(err, "open /dev/loop-control");
	for (int attempt = 0; attempt < 16; attempt++) {
		nr = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (nr < 0)
			return hu_err_sys(err, "find a free loop device");
		snprintf(dev, n, "/dev/loop%d", nr);
		_cleanup_close_ int lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0)
			return hu_err_sys(err, "open %s", dev);
		struct loop_config lc;
		memset(&lc, 0, sizeof(lc));
		lc.fd = (uint32_t)img;
		lc.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
		snprintf((char *)lc.info.lo_file_name, sizeof(lc.info.lo_file_name), "%s", image);
		int rc = ioctl(lfd, LOOP_CONFIGURE, &lc);
		if (rc < 0 && errno == EINVAL) {
			/* the host's file system takes no direct I/O (tmpfs) */
			lc.info.lo_flags = LO_FLAGS_AUTOCLEAR;
			rc = ioctl(lfd, LOOP_CONFIGURE, &lc);
		}
		if (rc == 0) {
			/* autoclear detaches on the last close once mounted; until
			 * the mount, an open fd keeps it: the caller mounts at once */
			return hu_take_fd(&lfd);
		}
		if (errno != EBUSY)
			return hu_err_sys(err, "attach %s to %s", image, dev);
		/* another process took this device between the two calls */
	}
	return hu_err_set(err, EBUSY, "no free loop device for %s", image);
}

static int mount_image(struct hu_layers *ly, const struct hu_runtime_config *cfg, hu_err *err)
{
	char dev[32];
	struct stat st;

	if (is_mount_root(ly->root)) {
		struct statfs sfs;
		if (statfs(ly->root, &sfs) < 0 || sfs.f_type != (typeof(sfs.f_type))BTRFS_SUPER_MAGIC)
			return hu_err_set(err, EEXIST, "%s is a mount point but not hutch's btrfs", ly->root);
		return 0; /* up already (another runtime of this host) */
	}
	if (stat(ly->image, &st) < 0) {
		if (errno != ENOENT)
			return hu_err_sys(err, "stat %s", ly->image);
		if (make_image(ly, cfg, err) < 0)
			return -1;
	}
	int lfd = attach_loop(ly->image, dev, sizeof(dev), err);
	if (lfd < 0)
		return -1;
	/* nosuid, nodev: nothing on it is ever executed or opened as a device
	 * by the host; the sandboxes see it only through their overlays */
	int rc = mount(dev, ly->root, "btrfs", MS_NOSUID | MS_NODEV | MS_NOATIME, "discard=async");
	int saved = errno;
	close(lfd);
	if (rc < 0) {
		errno = saved;
		return hu_err_sys(err, "mount %s (%s) on %s", ly->image, dev, ly->root);
	}
	return 0;
}

int hu_layers_open(struct hu_layers *ly, const struct hu_runtime_config *cfg, hu_err *err)
{
	struct hu_layers_facts f;
	char lock[PATH_MAX + 16], users[PATH_MAX + 16];

	memset(ly, 0, sizeof(*ly));
	ly->root_fd = -1;
	ly->lock_fd = -1;
	ly->users_fd = -1;
	ly->keep_init_fd = -1;
	ly->keep_dir_fd = -1;
	ly->keep_view_fd = -1;
	ly->keep_view_netns_fd = -1;
	ly->linger_ms = cfg->layers_linger_ms;
	if ((size_t)snprintf(ly->root, sizeof(ly->root), "%s/layers", cfg->data_dir) >= sizeof(ly->root) ||
	    (size_t)snprintf(ly->image, sizeof(ly->image), "%s/layers.img", cfg->data_dir) >= sizeof(ly->image))
		return hu_err_set(err, ENAMETOOLONG, "data dir %s", cfg->data_dir);
	if (mkdir(ly->root, 0700) < 0 && errno != EEXIST)
		return hu_err_sys(err, "mkdir %s", ly->root);
	snprintf(lock, sizeof(lock), "%s/layers.lock", cfg->data_dir);
	ly->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (ly->lock_fd < 0)
		return hu_err_sys(err, "open %s", lock);
	/* one maker of the image, one mount; and no last user's unmount in
	 * between (hu_layers_close takes this lock too) */
	if (flock(ly->lock_fd, LOCK_EX) < 0) {
		hu_err_sys(err, "lock %s", lock);
		goto fail;
	}
	snprintf(users, sizeof(users), "%s/layers.users", cfg->data_dir);
	ly->users_fd = open(users, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (ly->users_fd < 0 || flock(ly->users_fd, LOCK_SH) < 0) {
		hu_err_sys(err, "lock %s", users);
		goto fail;
	}
	if (gather_facts(cfg, &f, ly->fsid, sizeof(ly->fsid), err) < 0 ||
	    hu_layers_choose(&f, &ly->kind, ly->reason, sizeof(ly->reason), err) < 0)
		goto fail;
	if (ly->kind == HU_LAYERS_IMAGE) {
		if (mount_image(ly, cfg, err) < 0)
			goto fail;
	} else {
		ly->image[0] = '\0';
	}
	ly->root_fd = open(ly->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (ly->root_fd < 0) {
		hu_err_sys(err, "open %s", ly->root);
		goto fail;
	}
	if (!hu_btrfs_is(ly->root_fd)) {
		hu_err_set(err, EXDEV, "%s is not on btrfs", ly->root);
		goto fail;
	}
	if (hu_btrfs_fsid(ly->root_fd, ly->fsid, sizeof(ly->fsid), err) < 0)
		goto fail;
	if (!hu_btrfs_quota_mode(ly->fsid, ly->quota, sizeof(ly->quota))) {
		/* only ever on hutch's own image: the data dir's btrfs was chosen
		 * because its quota groups were on */
		if (hu_btrfs_quota_enable(ly->root_fd, err) < 0)
			goto fail;
		hu_btrfs_quota_mode(ly->fsid, ly->quota, sizeof(ly->quota));
	}
	flock(ly->lock_fd, LOCK_UN);
	return 0;
fail:
	hu_err_prefix(err, "layers in %s", cfg->data_dir);
	hu_layers_close(ly);
	return -1;
}

/* Does the layers root hold any sandbox's layer? */
static int holds_layers(int root_fd)
{
	/* a fresh open: btrfs lists only the entries a directory had when it
	 * was opened */
	int dup = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	struct dirent *de;
	int any = 0;

	if (!d) {
		if (dup >= 0)
			close(dup);
		return 1; /* cannot tell: keep it */
	}
	while (!any && (de = readdir(d)) != NULL)
		any = hu_sandbox_id_valid(de->d_name);
	closedir(d);
	return any;
}

int hu_layers_last_out(struct hu_layers *ly)
{
	char fsid[40];
	hu_err ignore;

	if (ly->kind != HU_LAYERS_IMAGE || ly->lock_fd < 0 || ly->users_fd < 0 || flock(ly->lock_fd, LOCK_EX) < 0 ||
	    flock(ly->users_fd, LOCK_UN) < 0 || flock(ly->users_fd, LOCK_EX | LOCK_NB) < 0)
		return 0;
	/* a fresh look: a keeper's root may have been unmounted by hand since */
	_cleanup_close_ int fd = open(ly->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return fd >= 0 && is_mount_root(ly->root) && hu_btrfs_is(fd) &&
	       hu_btrfs_fsid(fd, fsid, sizeof(fsid), &ignore) == 0 && !strcmp(fsid, ly->fsid) && !holds_layers(fd);
}

void hu_layers_close(struct hu_layers *ly)
{
	/* the last runtime out, with no layer left: unmount hutch's image (or
	 * let a keeper do it later). Under layers.lock no other runtime is
	 * opening; our shared hold on layers.users is dropped first, so getting
	 * it exclusive means no other runtime has it open. */
	if (ly->root_fd >= 0)
		close(ly->root_fd);
	ly->root_fd = -1;
	if (hu_layers_last_out(ly) && (ly->linger_ms == 0 || hu_layers_linger(ly) < 0))
		umount2(ly->root, MNT_DETACH);
	if (ly->users_fd >= 0)
		close(ly->users_fd);
	if (ly->lock_fd >= 0)
		close(ly->lock_fd);
	ly->root_fd = ly->lock_fd = ly->users_fd = -1;
}

int hu_layers_probe(const struct hu_runtime_config *cfg, struct hu_storage_info *out, hu_err *err)
{
	struct hu_layers_facts f;
	enum hu_layers_kind kind;
	char fsid[40], root[PATH_MAX + 8];

	memset(out, 0, sizeof(*out));
	if (gather_facts(cfg, &f, fsid, sizeof(fsid), err) < 0 ||
	    hu_layers_choose(&f, &kind, out->reason, sizeof(out->reason), err) < 0)
		return -1;
	snprintf(root, sizeof(root), "%s/layers", cfg->data_dir);
	snprintf(out->root, sizeof(out->root), "%s", root);
	snprintf(out->backend, sizeof(out->backend), "%s", kind == HU_LAYERS_IMAGE ? "image" : "data-dir");
	if (kind == HU_LAYERS_IMAGE)
		snprintf(out->image, sizeof(out->image), "%s/layers.img", cfg->data_dir);
	_cleanup_close_ int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && hu_btrfs_is(fd) && (kind == HU_LAYERS_DATA_DIR || is_mount_root(root)) &&
	    hu_btrfs_fsid(fd, fsid, sizeof(fsid), err) == 0)
		out->ready = hu_btrfs_quota_mode(fsid, out->quota, sizeof(out->quota));
	hu_err_clear(err);
	return 0;
}
