/* Named volumes on disk (volumes.h): directories, or ext4 images for
 * capped volumes, under the volume root. */
#include "daemon/sandboxes/volumes.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/fileutil.h"

#define TRASH_PREFIX ".trash-"

extern char **environ;

void hu_volume_root(const struct hu_config *cfg, char *buf, size_t n)
{
	if (cfg->volume_root[0])
		snprintf(buf, n, "%s", cfg->volume_root);
	else
		snprintf(buf, n, "%s/volumes", cfg->data_dir);
}

/* <volume_root>/<id><suffix>; the root is made 0700 on first use: volume
 * files carry the sandboxes' ids (0 = a sandbox's root), so no host user
 * may reach them. */
static int volume_path(const struct hu_config *cfg, const struct hu_volume *v, const char *suffix, char *buf,
		       size_t n, hu_err *err)
{
	char root[PATH_MAX];

	hu_volume_root(cfg, root, sizeof(root));
	if (hu_mkdir_p(root, 0700, err) < 0)
		return -1;
	if ((size_t)snprintf(buf, n, "%s/%s%s", root, v->id, suffix) >= n)
		return hu_err_set(err, ENAMETOOLONG, "volume path under %s", root);
	return 0;
}

/* Where a capped volume's image is mounted on the host. */
static int mount_point(const struct hu_config *cfg, const struct hu_volume *v, char *buf, size_t n, hu_err *err)
{
	char dir[PATH_MAX];

	if ((size_t)snprintf(dir, sizeof(dir), "%s/volumes", cfg->run_dir) >= sizeof(dir) ||
	    (size_t)snprintf(buf, n, "%s/%s", dir, v->id) >= n)
		return hu_err_set(err, ENAMETOOLONG, "volume mount point under %s", cfg->run_dir);
	return hu_mkdir_p(dir, 0700, err);
}

/* Run a program to its end (argv[0] is its absolute path); stdin and
 * stdout on /dev/null, nothing of the daemon's open files inherited. */
static int run_program(char *const argv[], hu_err *err)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		errno = rc;
		return hu_err_sys(err, "run %s", argv[0]);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return hu_err_sys(err, "wait for %s", argv[0]);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return hu_err_set(err, EIO, "%s failed (status %d)", argv[0], status);
	return 0;
}

static const char *find_program(const char *const *candidates)
{
	for (; *candidates; candidates++)
		if (access(*candidates, X_OK) == 0)
			return *candidates;
	return NULL;
}

/* A sparse image of v->size bytes with an ext4 file system whose top
 * directory belongs to the sandbox's user; no blocks reserved for root. */
static int make_image(const char *image, uint64_t size, hu_err *err)
{
	static const char *const mkfs[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", NULL};
	const char *prog = find_program(mkfs);
	char opts[128];

	if (!prog)
		return hu_err_set(err, ENOSYS, "capped volumes need mkfs.ext4 (e2fsprogs), which is not installed");
	_cleanup_close_ int fd = open(image, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return hu_err_sys(err, "create %s", image);
	if (ftruncate(fd, (off_t)size) < 0) {
		hu_err_sys(err, "size %s", image);
		unlink(image);
		return -1;
	}
	snprintf(opts, sizeof(opts), "root_owner=%d:%d,lazy_itable_init=1,lazy_journal_init=1", HU_VOLUME_OWNER,
		 HU_VOLUME_OWNER);
	char *argv[] = {(char *)prog, "-q", "-F", "-m", "0", "-E", opts, (char *)image, NULL};
	if (run_program(argv, err) < 0) {
		unlink(image);
		return -1;
	}
	return 0;
}

int hu_volume_create_disk(const struct hu_config *cfg, const struct hu_volume *v, hu_err *err)
{
	char path[PATH_MAX];

	if (v->size) {
		if (volume_path(cfg, v, ".img", path, sizeof(path), err) < 0)
			return -1;
		return make_image(path, v->size, err);
	}
	if (volume_path(cfg, v, "", path, sizeof(path), err) < 0)
		return -1;
	if (mkdir(path, 0755) < 0)
		return hu_err_sys(err, "create %s", path);
	if (chown(path, HU_VOLUME_OWNER, HU_VOLUME_OWNER) < 0) {
		hu_err_sys(err, "chown %s", path);
		rmdir(path);
		return -1;
	}
	return 0;
}

static int is_mount_root(const char *path)
{
	struct statx stx;
	return statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) == 0 &&
	       (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* The loop device the image is attached to already, if any: its file
 * system must be mounted again from that device (the kernel then hands
 * back the same superblock), never from a second one. This happens when the
 * run dir's mount point was lost while sandboxes still hold clones of the
 * mount. Compared by device and inode, so no path spelling can fool it. */
static int find_attached_loop(const char *image, char *dev, size_t n)
{
	struct stat want;
	DIR *dir;
	struct dirent *de;
	int found = 0;

	if (stat(image, &want) < 0 || !(dir = opendir("/sys/block")))
		return 0;
	while (!found && (de = readdir(dir)) != NULL) {
		char path[300], backing[PATH_MAX];
		struct stat got;
		hu_err ignored;
		if (strncmp(de->d_name, "loop", 4))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file", de->d_name);
		ssize_t len = hu_read_file(path, backing, sizeof(backing), &ignored);
		if (len <= 0)
			continue;
		backing[len - (backing[len - 1] == '\n')] = '\0';
		if (stat(backing, &got) == 0 && got.st_dev == want.st_dev && got.st_ino == want.st_ino) {
			snprintf(dev, n, "/dev/%s", de->d_name);
			found = 1;
		}
	}
	closedir(dir);
	return found;
}

/* Attach the image to a free loop device (detached again automatically
 * when its last mount goes) and mount it at mp. One mount per image: two
 * loop devices over one image would be two file systems writing the same
 * blocks, so every sandbox clones this one mount. */
static int mount_image(const char *image, const char *mp, hu_err *err)
{
	char dev[32];
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	_cleanup_close_ int img = open(image, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

	if (find_attached_loop(image, dev, sizeof(dev))) {
		if (mount(dev, mp, "ext4", MS_NOSUID | MS_NODEV, NULL) < 0)
			return hu_err_sys(err, "mount %s (already on %s) on %s", image, dev, mp);
		return 0;
	}
	if (ctl < 0)
		return hu_err_sys(err, "open /dev/loop-control");
	if (img < 0)
		return hu_err_sys(err, "open %s", image);
	for (int attempt = 0; attempt < 8; attempt++) {
		int nr = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (nr < 0)
			return hu_err_sys(err, "find a free loop device");
		snprintf(dev, sizeof(dev), "/dev/loop%d", nr);
		_cleanup_close_ int loop = open(dev, O_RDWR | O_CLOEXEC);
		if (loop < 0)
			return hu_err_sys(err, "open %s", dev);
		struct loop_config lc = {.fd = (uint32_t)img, .info = {.lo_flags = LO_FLAGS_AUTOCLEAR}};
		if (ioctl(loop, LOOP_CONFIGURE, &lc) < 0) {
			if (errno == EBUSY)
				continue; /* taken by someone else meanwhile */
			return hu_err_sys(err, "attach %s to %s", image, dev);
		}
		if (mount(dev, mp, "ext4", MS_NOSUID | MS_NODEV, NULL) < 0)
			return hu_err_sys(err, "mount %s (%s) on %s", image, dev, mp); /* closing clears the loop */
		return 0;
	}
	return hu_err_set(err, EBUSY, "no free loop device for %s", image);
}

int hu_volume_open(const struct hu_config *cfg, const struct hu_volume *v, hu_err *err)
{
	char path[PATH_MAX], image[PATH_MAX];
	int fd;

	if (v->size) {
		if (mount_point(cfg, v, path, sizeof(path), err) < 0 ||
		    volume_path(cfg, v, ".img", image, sizeof(image), err) < 0)
			return -1;
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return hu_err_sys(err, "create %s", path);
		if (!is_mount_root(path) && mount_image(image, path, err) < 0)
			return -1;
	} else if (volume_path(cfg, v, "", path, sizeof(path), err) < 0) {
		return -1;
	}
	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return hu_err_sys(err, "open volume %s (%s)", v->name, path);
	return fd;
}

/* `rm -rf --one-file-system` in the background, detached (a shell that
 * exits at once starts it), so nobody has to reap it and the loop does not
 * wait for a big tree. rm never follows the symlinks a sandbox left. */
static int remove_in_background(const char *path, hu_err *err)
{
	char *argv[] = {"/bin/sh", "-c", "rm -rf --one-file-system -- \"$1\" </dev/null >/dev/null 2>&1 &", "sh",
			(char *)path, NULL};
	return run_program(argv, err);
}

/* The volume's files (its directory or image) and their retired name. */
static int live_and_trash(const struct hu_config *cfg, const struct hu_volume *v, char *live, char *trash, size_t n,
			  hu_err *err)
{
	char root[PATH_MAX];
	const char *suffix = v->size ? ".img" : "";

	hu_volume_root(cfg, root, sizeof(root));
	if ((size_t)snprintf(live, n, "%s/%s%s", root, v->id, suffix) >= n ||
	    (size_t)snprintf(trash, n, "%s/" TRASH_PREFIX "%s%s", root, v->id, suffix) >= n)
		return hu_err_set(err, ENAMETOOLONG, "volume path under %s", root);
	return 0;
}

int hu_volume_retire(const struct hu_config *cfg, const struct hu_volume *v, hu_err *err)
{
	char live[PATH_MAX], trash[PATH_MAX], mp[PATH_MAX];

	if (v->size) {
		/* no sandbox mounts it (the caller checked): the host's mount goes */
		if (mount_point(cfg, v, mp, sizeof(mp), err) < 0)
			return -1;
		if (is_mount_root(mp) && umount2(mp, MNT_DETACH) < 0)
			return hu_err_sys(err, "unmount %s", mp);
		if (rmdir(mp) < 0 && errno != ENOENT)
			return hu_err_sys(err, "remove %s", mp);
	}
	if (live_and_trash(cfg, v, live, trash, sizeof(live), err) < 0)
		return -1;
	if (rename(live, trash) < 0)
		return errno == ENOENT ? 0 : hu_err_sys(err, "move %s out of the way", live);
	return 0;
}

int hu_volume_unretire(const struct hu_config *cfg, const struct hu_volume *v, hu_err *err)
{
	char live[PATH_MAX], trash[PATH_MAX];

	if (live_and_trash(cfg, v, live, trash, sizeof(live), err) < 0)
		return -1;
	if (rename(trash, live) < 0 && errno != ENOENT)
		return hu_err_sys(err, "move %s back", trash);
	return 0;
}

int hu_volume_purge(const struct hu_config *cfg, const struct hu_volume *v, hu_err *err)
{
	char live[PATH_MAX], trash[PATH_MAX];

	if (live_and_trash(cfg, v, live, trash, sizeof(live), err) < 0)
		return -1;
	return remove_in_background(trash, err);
}

void hu_volume_sweep(struct hu_daemon *d)
{
	char root[PATH_MAX];
	hu_err err;
	DIR *dir;
	struct dirent *de;

	hu_volume_root(&d->cfg, root, sizeof(root));
	dir = opendir(root);
	if (!dir)
		return;
	while ((de = readdir(dir)) != NULL) {
		struct hu_volume v = {0};
		const char *id = de->d_name + strlen(TRASH_PREFIX);
		size_t len;
		if (strncmp(de->d_name, TRASH_PREFIX, strlen(TRASH_PREFIX)))
			continue;
		len = strcspn(id, ".");
		if (len == 0 || len >= sizeof(v.id))
			continue;
		memcpy(v.id, id, len);
		v.size = id[len] ? 1 : 0; /* ".img": a capped volume (the cap itself does not matter here) */
		int rc = d->store ? hu_store_volume_by_id(d->store, v.id, &v, &err) : -1;
		if (rc == 0) {
			if (hu_volume_unretire(&d->cfg, &v, &err) < 0)
				hu_log(HU_LOG_WARN, NULL, 0, "volume sweep: %s", err.msg);
			else
				hu_log(HU_LOG_INFO, NULL, 0, "volume %s (%s): an unfinished deletion was undone", v.name,
				       v.id);
		} else if (!d->store || err.code != ENOENT) {
			/* the store could not say: keep the files (a later start decides) */
			hu_log(HU_LOG_WARN, NULL, 0, "volume sweep: %s: kept", d->store ? err.msg : "no store");
		} else if (hu_volume_purge(&d->cfg, &v, &err) < 0) {
			hu_log(HU_LOG_WARN, NULL, 0, "volume sweep: %s", err.msg);
		}
	}
	closedir(dir);
}
