/*
 * The layer store: the backend choice (pure), and the real thing on this
 * host (root, a loop device and mkfs.btrfs; skipped otherwise): the image
 * is made and mounted once, a layer's cap stops writes with EDQUOT, destroy
 * leaves no subvolume and no quota group, the last close unmounts, and a
 * data dir on a btrfs with quota groups is used directly. Everything lives
 * in a private temporary directory that teardown unmounts and removes.
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/btrfs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/btrfs.h"
#include "runtime/layers.h"
#include "util/fileutil.h"

#define OWNER 0x40010000u /* a slot's uid base, never a live sandbox's here */

/* ---- the choice ------------------------------------------------------------ */

static void facts(struct hu_layers_facts *f, int btrfs, int quota, const char *fs, const char *want)
{
	memset(f, 0, sizeof(*f));
	f->on_btrfs = btrfs;
	f->btrfs_quota = quota;
	snprintf(f->fs_name, sizeof(f->fs_name), "%s", fs);
	snprintf(f->want, sizeof(f->want), "%s", want);
}

static void test_choose_ext4_gets_the_image(void **state)
{
	struct hu_layers_facts f;
	enum hu_layers_kind k = 0;
	char why[256];
	hu_err err = {0};
	(void)state;
	facts(&f, 0, 0, "ext4", "auto");
	assert_int_equal(hu_layers_choose(&f, &k, why, sizeof(why), &err), 0);
	assert_int_equal(k, HU_LAYERS_IMAGE);
	assert_non_null(strstr(why, "ext4"));
	facts(&f, 0, 0, "xfs", "");
	assert_int_equal(hu_layers_choose(&f, &k, why, sizeof(why), &err), 0);
	assert_int_equal(k, HU_LAYERS_IMAGE);
}

static void test_choose_btrfs_with_quota_is_used_directly(void **state)
{
	struct hu_layers_facts f;
	enum hu_layers_kind k = 0;
	char why[256];
	hu_err err = {0};
	(void)state;
	facts(&f, 1, 1, "btrfs", "auto");
	assert_int_equal(hu_layers_choose(&f, &k, why, sizeof(why), &err), 0);
	assert_int_equal(k, HU_LAYERS_DATA_DIR);
	facts(&f, 1, 1, "btrfs", "data-dir");
	assert_int_equal(hu_layers_choose(&f, &k, why, sizeof(why), &err), 0);
	assert_int_equal(k, HU_LAYERS_DATA_DIR);
	/* asked for the image: the image, even where the data dir would do */
	facts(&f, 1, 1, "btrfs", "image");
	assert_int_equal(hu_layers_choose(&f, &k, why, sizeof(why), &err), 0);
	assert_int_equal(k, HU_LAYERS_IMAGE);
}

static void test_choose_btrfs_without_quota_says_how(void **state)
{
	struct hu_layers_facts f;
	enum hu_layers_kind k = 0;
	char why[256];
	hu_err err = {0};
	(void)state;
	facts(&f, 1, 0, "btrfs", "auto");
	assert_int_equal(hu_layers_choose(&f, &k, why, sizeof(why), &err), 0);
	assert_int_equal(k, HU_LAYERS_IMAGE);
	assert_non_null(strstr(why, "quota enable"));
}

static void test_choose_refuses_what_cannot_be(void **state)
{
	struct hu_layers_facts f;
	enum hu_layers_kind k = 0;
	char why[256];
	hu_err err = {0};
	(void)state;
	facts(&f, 0, 0, "ext4", "data-dir");
	assert_int_equal(hu_layers_choose(&f, &k, why, sizeof(why), &err), -1);
	assert_int_equal(err.code, EINVAL);
	assert_non_null(strstr(err.msg, "ext4"));
	facts(&f, 1, 0, "btrfs", "data-dir");
	assert_int_equal(hu_layers_choose(&f, &k, why, sizeof(why), &err), -1);
	facts(&f, 0, 0, "ext4", "tmpfs");
	assert_int_equal(hu_layers_choose(&f, &k, why, sizeof(why), &err), -1);
	assert_non_null(strstr(err.msg, "HUTCH_LAYERS=tmpfs"));
}

/* ---- live ------------------------------------------------------------------ */

struct live {
	char dir[64];
	struct hu_runtime_config cfg;
	struct hu_layers ly, ly2, inner;
	int open1, open2, open_inner;
};

static int have_tools(void)
{
	return geteuid() == 0 && access("/dev/loop-control", R_OK | W_OK) == 0 &&
	       (access("/usr/sbin/mkfs.btrfs", X_OK) == 0 || access("/sbin/mkfs.btrfs", X_OK) == 0 ||
		access("/usr/bin/mkfs.btrfs", X_OK) == 0);
}

static int setup(void **state)
{
	struct live *l = calloc(1, sizeof(*l));
	hu_err err;
	if (!l)
		return -1;
	snprintf(l->dir, sizeof(l->dir), "/tmp/hutch-layers-XXXXXX");
	if (!mkdtemp(l->dir))
		return -1;
	hu_runtime_config_defaults(&l->cfg);
	snprintf(l->cfg.data_dir, sizeof(l->cfg.data_dir), "%s/data", l->dir);
	snprintf(l->cfg.layers, sizeof(l->cfg.layers), "auto");
	snprintf(l->cfg.layers_size, sizeof(l->cfg.layers_size), "2G");
	if (hu_mkdir_p(l->cfg.data_dir, 0700, &err) < 0)
		return -1;
	*state = l;
	return 0;
}

static int teardown(void **state)
{
	struct live *l = *state;
	char root[PATH_MAX + 16];
	hu_err err;
	if (l->open_inner)
		hu_layers_close(&l->inner);
	if (l->open2)
		hu_layers_close(&l->ly2);
	if (l->open1)
		hu_layers_close(&l->ly);
	/* whatever a failed test left mounted */
	snprintf(root, sizeof(root), "%s/layers", l->cfg.data_dir);
	umount2(root, MNT_DETACH);
	hu_rm_rf(l->dir, &err);
	free(l);
	return 0;
}

static int mounted_at(const char *path)
{
	char buf[65536], needle[PATH_MAX + 4];
	hu_err err;
	if (hu_read_file("/proc/self/mountinfo", buf, sizeof(buf), &err) < 0)
		return -1;
	snprintf(needle, sizeof(needle), " %s ", path);
	return strstr(buf, needle) != NULL;
}

/* A process other than this one whose mount namespace still has a mount
 * at `root` (a copy made while the image was mounted: any program that
 * unshares its mounts then, such as another test's sandbox, keeps the loop
 * device alive until it exits), or 0. */
static pid_t mount_holder(const char *root)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	char path[PATH_MAX], needle[PATH_MAX + 4];
	static char buf[1 << 20];
	pid_t holder = 0;
	hu_err err;

	snprintf(needle, sizeof(needle), " %s ", root);
	while (d && !holder && (de = readdir(d)) != NULL) {
		pid_t pid = (pid_t)atoi(de->d_name);
		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
		if (hu_read_file(path, buf, sizeof(buf), &err) > 0 && strstr(buf, needle))
			holder = pid;
	}
	if (d)
		closedir(d);
	return holder;
}

/* Is any loop device still backed by `image`? */
static int loop_backs(const char *image)
{
	DIR *d = opendir("/sys/block");
	struct dirent *de;
	char path[PATH_MAX], buf[PATH_MAX];
	hu_err err;
	int found = 0;
	while (d && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "loop", 4))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file", de->d_name);
		if (hu_read_file(path, buf, sizeof(buf), &err) > 0 && !strncmp(buf, image, strlen(image)))
			found = 1;
	}
	if (d)
		closedir(d);
	return found;
}

/* Write `bytes` into <layer>/rw/upper/fill as the sandbox's root stores
 * its files there (host root: rw/ holds the ids the sandbox sees), in a
 * child; returns the errno that stopped it (0: all written). The cap is
 * the subvolume's, whoever writes. */
static int fill_upper(const char *layer, uint64_t bytes)
{
	pid_t pid = fork();
	if (pid == 0) {
		static char chunk[1 << 20];
		char path[PATH_MAX + 16];
		memset(chunk, 'x', sizeof(chunk));
		snprintf(path, sizeof(path), "%s/" HU_LAYER_RW "/upper", layer);
		int dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0)
			_exit(200);
		int fd = openat(dir, "fill", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			_exit(201);
		for (uint64_t done = 0; done < bytes; done += sizeof(chunk))
			if (write(fd, chunk, sizeof(chunk)) < 0)
				_exit(errno);
		if (fsync(fd) < 0)
			_exit(errno);
		_exit(0);
	}
	int status;
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_image_layer_cap_and_cleanup(void **state)
{
	struct live *l = *state;
	char layer[PATH_MAX], qg[256];
	uint64_t used = 0, subvol = 0;
	uint32_t owner = 0;
	struct stat st;
	hu_err err = {0};

	if (!have_tools())
		skip();
	assert_int_equal(hu_layers_open(&l->ly, &l->cfg, &err), 0);
	l->open1 = 1;
	assert_int_equal(l->ly.kind, HU_LAYERS_IMAGE);
	assert_true(l->ly.quota[0] != '\0');
	assert_int_equal(stat(l->ly.image, &st), 0);
	assert_true(st.st_blocks * 512 < st.st_size); /* sparse */
	assert_int_equal(mounted_at(l->ly.root), 1);

	assert_int_equal(hu_layer_create(&l->ly, "cap-test", 8u << 20, OWNER, 0, &err), 0);
	assert_int_equal(hu_layer_owner(&l->ly, "cap-test", &owner, &err), 0);
	assert_int_equal(owner, OWNER);
	assert_int_equal(hu_layer_ephemeral(&l->ly, "cap-test"), 0);
	assert_int_equal(hu_layer_path(&l->ly, "cap-test", layer, sizeof(layer), &err), 0);
	/* the cap stops the owner's writes with EDQUOT, well before 64 MiB */
	assert_int_equal(fill_upper(layer, 64u << 20), EDQUOT);
	int fd = open(layer, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(syncfs(fd), 0);
	assert_int_equal(hu_btrfs_subvol_id(fd, &subvol, &err), 0);
	close(fd);
	assert_int_equal(hu_layer_usage(&l->ly, "cap-test", &used, &err), 0);
	assert_true(used > (6u << 20) && used <= (8u << 20));
	/* a second layer is not charged for the first one's files */
	assert_int_equal(hu_layer_create(&l->ly, "other", 8u << 20, OWNER, 1, &err), 0);
	assert_int_equal(hu_layer_path(&l->ly, "other", layer, sizeof(layer), &err), 0);
	assert_int_equal(fill_upper(layer, 4u << 20), 0);
	assert_int_equal(hu_layer_ephemeral(&l->ly, "other"), 1);

	/* destroy: no directory, and the quota group goes once the kernel's
	 * cleaner has freed the extents: at its next pass (within the 30 s
	 * commit interval), woken at once here by a btrfs sync */
	assert_int_equal(hu_layer_destroy(&l->ly, "cap-test", &err), 0);
	assert_int_equal(hu_layer_destroy(&l->ly, "cap-test", &err), 0); /* missing is fine */
	assert_int_equal(hu_layer_owner(&l->ly, "cap-test", &owner, &err), -1);
	assert_int_equal(err.code, ENOENT);
	snprintf(qg, sizeof(qg), "/sys/fs/btrfs/%s/qgroups/0_%llu", l->ly.fsid, (unsigned long long)subvol);
	int gone = 0;
	for (int i = 0; i < 100 && !gone; i++) {
		fd = open(l->ly.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ioctl(fd, BTRFS_IOC_SYNC, NULL);
		close(fd);
		gone = access(qg, F_OK) < 0;
		if (!gone)
			usleep(50 * 1000);
	}
	assert_true(gone);

	/* a second runtime shares the mount; closing with a layer left keeps it */
	assert_int_equal(hu_layers_open(&l->ly2, &l->cfg, &err), 0);
	l->open2 = 1;
	hu_layers_close(&l->ly2);
	l->open2 = 0;
	hu_layers_close(&l->ly);
	l->open1 = 0;
	assert_int_equal(mounted_at(l->ly.root), 1);
	/* reopened, the layer's files are where they were */
	assert_int_equal(hu_layers_open(&l->ly, &l->cfg, &err), 0);
	l->open1 = 1;
	assert_int_equal(hu_layer_owner(&l->ly, "other", &owner, &err), 0);
	assert_int_equal(hu_layer_destroy(&l->ly, "other", &err), 0);
	/* the last close with no layer left unmounts, and the loop device goes */
	hu_layers_close(&l->ly);
	l->open1 = 0;
	assert_int_equal(mounted_at(l->ly.root), 0);
	/* The loop device is set to clear itself: the kernel lets it go when
	 * the last user of the file system does, which may be another
	 * process's copy of the mount (any namespace made while it was mounted)
	 * or a file system still finishing its unmount on a busy host. Our
	 * part, the unmount, is asserted above; a loop device that outlives
	 * it is reported, with its holder when one is found. */
	for (int i = 0; i < 250 && loop_backs(l->ly.image); i++)
		usleep(20 * 1000);
	if (loop_backs(l->ly.image)) {
		pid_t holder = mount_holder(l->ly.root);
		fprintf(stderr, "note: the loop device of %s outlives its unmount by 5 s (holder: %s%d)\n", l->ly.image,
			holder ? "pid " : "none found, ", (int)holder);
	}
	assert_int_equal(stat(l->ly.image, &st), 0); /* the image itself stays */
}

static void test_data_dir_on_btrfs_with_quota_is_used(void **state)
{
	struct live *l = *state;
	struct hu_runtime_config inner;
	struct hu_storage_info info;
	struct stat st;
	hu_err err = {0};

	if (!have_tools())
		skip();
	/* hutch's own image is a btrfs with quota groups: a data dir inside it
	 * is one the runtime uses directly */
	assert_int_equal(hu_layers_open(&l->ly, &l->cfg, &err), 0);
	l->open1 = 1;
	inner = l->cfg;
	snprintf(inner.data_dir, sizeof(inner.data_dir), "%s/layers/inner-data", l->cfg.data_dir);
	assert_int_equal(mkdir(inner.data_dir, 0700), 0);
	assert_int_equal(hu_storage_probe(&inner, &info, &err), 0);
	assert_string_equal(info.backend, "data-dir");
	assert_int_equal(hu_layers_open(&l->inner, &inner, &err), 0);
	l->open_inner = 1;
	assert_int_equal(l->inner.kind, HU_LAYERS_DATA_DIR);
	assert_string_equal(l->inner.image, "");
	assert_int_equal(hu_layer_create(&l->inner, "direct", 4u << 20, OWNER, 0, &err), 0);
	char layer[PATH_MAX];
	assert_int_equal(hu_layer_path(&l->inner, "direct", layer, sizeof(layer), &err), 0);
	assert_int_equal(fill_upper(layer, 32u << 20), EDQUOT);
	assert_int_equal(hu_layer_destroy(&l->inner, "direct", &err), 0);
	assert_int_equal(stat(layer, &st), -1);
	hu_layers_close(&l->inner);
	l->open_inner = 0;
	/* no image of its own was made or mounted */
	char img[PATH_MAX + 16];
	snprintf(img, sizeof(img), "%s/layers.img", inner.data_dir);
	assert_int_equal(stat(img, &st), -1);
	hu_rm_rf(inner.data_dir, &err);
}

/* uid/gid and mode of <layer>/<rel> */
static void owner_of(const char *layer, const char *rel, uid_t *uid, mode_t *mode)
{
	char path[PATH_MAX + 64];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", layer, rel);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_uid, st.st_gid);
	*uid = st.st_uid;
	*mode = st.st_mode & 07777;
}

static void put_file(const char *layer, const char *rel, uid_t uid, mode_t mode)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", layer, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, uid, uid), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* A read-only snapshot of layer `id` as .snapshots/<name>, as
 * hu_sandbox_snapshot makes it. */
static void snapshot_layer(const struct hu_layers *ly, const char *id, const char *name)
{
	hu_err err = {0};
	mkdirat(ly->root_fd, ".snapshots", 0700);
	int dir = openat(ly->root_fd, ".snapshots", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int src = openat(ly->root_fd, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dir >= 0 && src >= 0);
	assert_int_equal(hu_btrfs_snapshot(src, dir, name, 1, &err), 0);
	close(src);
	close(dir);
}

#define OWNER2 (OWNER + 0x10000u) /* the next slot */

/* A layer made from a snapshot: the files in rw/ keep their owners and
 * modes (set-user-ID included: no walk touches them), only the top and its
 * mount points move to the new slot. A snapshot of a layer of an older
 * hutch (upper/ at its top, the files at the source's host uids) still has
 * its files moved to the new slot's range. */
static void test_layer_from_snapshot_keeps_files(void **state)
{
	struct live *l = *state;
	char a[PATH_MAX], b[PATH_MAX], path[PATH_MAX + 64];
	uid_t uid;
	mode_t mode;
	hu_err err = {0};

	if (!have_tools())
		skip();
	assert_int_equal(hu_layers_open(&l->ly, &l->cfg, &err), 0);
	l->open1 = 1;
	assert_int_equal(hu_layer_create(&l->ly, "src", 64u << 20, OWNER, 0, &err), 0);
	assert_int_equal(hu_layer_path(&l->ly, "src", a, sizeof(a), &err), 0);
	int fd = open(a, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(hu_layer_idmapped(fd), 1);
	close(fd);
	owner_of(a, HU_LAYER_RW "/upper", &uid, &mode);
	assert_int_equal(uid, 0);
	assert_int_equal(mode, 0755);
	owner_of(a, HU_LAYER_RW, &uid, &mode);
	assert_int_equal(uid, 0);
	assert_int_equal(mode, 0700);
	put_file(a, HU_LAYER_RW "/upper/user-file", 1000, 0640);
	put_file(a, HU_LAYER_RW "/upper/suid", 0, 04755);
	snapshot_layer(&l->ly, "src", "snap-new");

	assert_int_equal(hu_layer_from_snapshot(&l->ly, "snap-new", "dst", 64u << 20, OWNER2, &err), 0);
	assert_int_equal(hu_layer_path(&l->ly, "dst", b, sizeof(b), &err), 0);
	const char *slot_dirs[] = {"", "rootfs", "lower", "bootid"};
	for (size_t i = 0; i < sizeof(slot_dirs) / sizeof(slot_dirs[0]); i++) {
		owner_of(b, slot_dirs[i], &uid, &mode);
		assert_int_equal(uid, OWNER2);
	}
	owner_of(b, HU_LAYER_RW "/upper/user-file", &uid, &mode);
	assert_int_equal(uid, 1000);
	assert_int_equal(mode, 0640);
	owner_of(b, HU_LAYER_RW "/upper/suid", &uid, &mode);
	assert_int_equal(uid, 0);
	assert_int_equal(mode, 04755);
	/* the source is untouched */
	owner_of(a, "", &uid, &mode);
	assert_int_equal(uid, OWNER);

	/* a layer as an older hutch made it */
	int root = l->ly.root_fd;
	assert_int_equal(hu_btrfs_subvol_create(root, "old", &err), 0);
	assert_int_equal(hu_layer_path(&l->ly, "old", a, sizeof(a), &err), 0);
	const char *old_dirs[] = {"rootfs", "lower", "upper", "work", "bootid"};
	for (size_t i = 0; i < sizeof(old_dirs) / sizeof(old_dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", a, old_dirs[i]);
		assert_int_equal(mkdir(path, 0755), 0);
		assert_int_equal(chown(path, OWNER, OWNER), 0);
	}
	put_file(a, "upper/user-file", OWNER + 1000, 0640);
	put_file(a, "upper/suid", OWNER, 04755);
	assert_int_equal(chown(a, OWNER, OWNER), 0);
	fd = open(a, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(hu_layer_idmapped(fd), 0);
	close(fd);
	snapshot_layer(&l->ly, "old", "snap-old");
	assert_int_equal(hu_layer_from_snapshot(&l->ly, "snap-old", "dst-old", 64u << 20, OWNER2, &err), 0);
	assert_int_equal(hu_layer_path(&l->ly, "dst-old", b, sizeof(b), &err), 0);
	owner_of(b, "", &uid, &mode);
	assert_int_equal(uid, OWNER2);
	owner_of(b, "upper/user-file", &uid, &mode);
	assert_int_equal(uid, OWNER2 + 1000);
	owner_of(b, "upper/suid", &uid, &mode);
	assert_int_equal(uid, OWNER2);
	assert_int_equal(mode, 04755);

	const char *ids[] = {"src", "dst", "old", "dst-old"};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		assert_int_equal(hu_layer_destroy(&l->ly, ids[i], &err), 0);
	int snaps = openat(root, ".snapshots", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(snaps >= 0);
	assert_int_equal(hu_btrfs_subvol_delete(snaps, "snap-new", &err), 0);
	assert_int_equal(hu_btrfs_subvol_delete(snaps, "snap-old", &err), 0);
	close(snaps);
}

static void test_probe_makes_nothing(void **state)
{
	struct live *l = *state;
	struct hu_storage_info info;
	struct stat st;
	char img[PATH_MAX + 16];
	hu_err err = {0};

	assert_int_equal(hu_storage_probe(&l->cfg, &info, &err), 0);
	assert_true(info.reason[0] != '\0');
	snprintf(img, sizeof(img), "%s/layers.img", l->cfg.data_dir);
	if (!strcmp(info.backend, "image")) {
		assert_int_equal(info.ready, 0);
		assert_string_equal(info.image, img);
	}
	assert_int_equal(stat(img, &st), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_choose_ext4_gets_the_image),
		cmocka_unit_test(test_choose_btrfs_with_quota_is_used_directly),
		cmocka_unit_test(test_choose_btrfs_without_quota_says_how),
		cmocka_unit_test(test_choose_refuses_what_cannot_be),
		cmocka_unit_test_setup_teardown(test_probe_makes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_image_layer_cap_and_cleanup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_data_dir_on_btrfs_with_quota_is_used, setup, teardown),
		cmocka_unit_test_setup_teardown(test_layer_from_snapshot_keeps_files, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
