/*
 * A sandbox brought back from its layer alone, as after a host reboot: a
 * real sandbox writes files (their page cache charged to it, and dropped by
 * the memory release), then everything a reboot loses goes (its
 * processes, its run dir, its uid slot, its cgroup, the layers' mount), and
 * hu_sandbox_revive + hu_sandbox_restart boot a fresh init over the same
 * files. Needs root, cgroups, a loop device and mkfs.btrfs (skipped
 * otherwise); everything lives in a private temporary directory and a
 * cgroup parent of its own, removed at the end. Also: a layer of the layout
 * before rw/ (files at host uids) still boots as it is.
 */
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/initproto.h"
#include "runtime/initclient.h"
#include "runtime/sandbox.h"
#include "unit/testutil.h"
#include "util/fileutil.h"

#define ID "revive-test"

struct fx {
	char dir[64];
	struct hu_runtime_config cfg;
	struct hu_runtime *rt;
	struct hu_sandbox *sb;
};

static int usable(void)
{
	return geteuid() == 0 && access("/dev/loop-control", R_OK | W_OK) == 0 &&
	       (access("/usr/sbin/mkfs.btrfs", X_OK) == 0 || access("/sbin/mkfs.btrfs", X_OK) == 0);
}

/* Run argv in the sandbox as root; its exit code (-1: no EXIT). */
static int sandbox_run(struct hu_sandbox *sb, const char *const *argv, size_t argc)
{
	struct hu_spawn_req req = {.argv = argv, .argc = argc, .user = "root"};
	struct hu_buf buf = {0};
	hu_err err;
	int fd = -1, code = -1;

	if (hu_init_connect(hu_sandbox_socket(sb), &fd, &err) < 0 || hu_init_set_timeout(fd, 10000, &err) < 0 ||
	    hu_init_build_spawn(&buf, 1, &req, &err) < 0 || hu_init_send(fd, &buf, &err) < 0) {
		print_error("spawn: %s\n", err.msg);
		goto out;
	}
	for (;;) {
		struct hu_frame_hdr hdr;
		struct hu_init_event ev;
		uint8_t *payload = NULL;
		if (hu_init_recv(fd, &hdr, &payload, &err) < 0)
			break;
		int done = hdr.type != HU_MSG_ERROR && hu_init_parse_event(&hdr, payload, &ev, &err) == 0 &&
			   ev.type == HU_MSG_EXIT && ev.id == 1;
		if (done)
			code = ev.signum ? 128 + (int)ev.signum : ev.exit_code;
		free(payload);
		if (done || hdr.type == HU_MSG_ERROR)
			break;
	}
out:
	hu_buf_free(&buf);
	if (fd >= 0)
		close(fd);
	return code;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-revive-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	hu_runtime_config_defaults(&f->cfg);
	snprintf(f->cfg.data_dir, sizeof(f->cfg.data_dir), "%s/data", f->dir);
	snprintf(f->cfg.run_dir, sizeof(f->cfg.run_dir), "%s/run", f->dir);
	snprintf(f->cfg.init_path, sizeof(f->cfg.init_path), "%s", hu_test_init_path());
	snprintf(f->cfg.cgroup_parent, sizeof(f->cfg.cgroup_parent), "hutch-test-revive-%d", (int)getpid());
	snprintf(f->cfg.layers, sizeof(f->cfg.layers), "auto");
	snprintf(f->cfg.layers_size, sizeof(f->cfg.layers_size), "2G");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char p[PATH_MAX];
	hu_err err;

	if (f->sb)
		hu_sandbox_destroy(f->sb, &err);
	hu_runtime_close(f->rt);
	snprintf(p, sizeof(p), "%s/layers", f->cfg.data_dir);
	umount2(p, MNT_DETACH);
	hu_rm_rf(f->dir, &err);
	/* the cgroup parent in every hierarchy (empty by now) */
	glob_t g;
	snprintf(p, sizeof(p), "/sys/fs/cgroup/{*/,}%s", f->cfg.cgroup_parent);
	if (glob(p, GLOB_BRACE | GLOB_ONLYDIR, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			rmdir(g.gl_pathv[i]);
		globfree(&g);
	}
	free(f);
	return 0;
}

static int count_layer(const char *id, void *arg)
{
	if (!strcmp(id, ID))
		(*(int *)arg)++;
	return 0;
}

static void test_revive_after_a_reboot(void **state)
{
	struct fx *f = *state;
	struct hu_sandbox_spec spec;
	struct hu_sandbox *again = NULL;
	char p[PATH_MAX + 32];
	int seen = 0;
	hu_err err = {0};

	if (!usable())
		skip();
	if (hu_runtime_open(&f->cfg, &f->rt, &err) < 0 || hu_template_ensure_base(f->rt, &err) < 0) {
		print_message("runtime unavailable here: %s\n", err.msg);
		skip();
	}
	hu_sandbox_spec_defaults(&spec);
	snprintf(spec.id, sizeof(spec.id), ID);
	spec.disk_bytes = 64u << 20;
	assert_int_equal(hu_sandbox_create(f->rt, &spec, &f->sb, &err), 0);
	const char *write[] = {"sh", "-c", "echo kept >/root/f && mkdir -p /home/user/w && echo w >/home/user/w/g"};
	assert_int_equal(sandbox_run(f->sb, write, 3), 0);
	uint32_t base = hu_sandbox_uid_base(f->sb);

	/* the layer's page cache is charged to the sandbox like any file's,
	 * and a release leaves none of it in RAM */
	const char *fill[] = {"dd", "if=/dev/zero", "of=/root/cache", "bs=1M", "count=40"};
	assert_int_equal(sandbox_run(f->sb, fill, 5), 0);
	struct hu_cgroup_stats st;
	uint64_t disk = 0;
	assert_int_equal(hu_sandbox_stats(f->sb, &st, &disk, &err), 0);
	assert_true(st.memory_bytes > (30u << 20));

	/* the reboot: processes, run dir (slots, sockets, pid files), cgroup and
	 * the layers' mount all go; the data dir stays */
	assert_int_equal(hu_sandbox_stop(f->sb, &err), 0);
	assert_int_equal(hu_sandbox_stats(f->sb, &st, &disk, &err), 0);
	assert_true(st.memory_bytes < (4u << 20));
	assert_true(disk > (40u << 20) - (1u << 20)); /* written back: the files are on disk */
	hu_sandbox_close(f->sb);
	f->sb = NULL;
	struct hu_cgroup *cg;
	assert_int_equal(hu_cgroup_open(hu_runtime_cgroup_env(f->rt), ID, &cg, &err), 0);
	assert_int_equal(hu_cgroup_destroy(cg, &err), 0);
	hu_runtime_close(f->rt);
	f->rt = NULL;
	snprintf(p, sizeof(p), "%s/layers", f->cfg.data_dir);
	assert_int_equal(umount2(p, MNT_DETACH), 0);
	assert_int_equal(hu_rm_rf(f->cfg.run_dir, &err), 0);

	/* the next boot: the layer is listed, revived and restarted */
	assert_int_equal(hu_runtime_open(&f->cfg, &f->rt, &err), 0);
	assert_int_equal(hu_runtime_layers(f->rt, count_layer, &seen, &err), 0);
	assert_int_equal(seen, 1);
	/* its uid slot taken by another sandbox: EBUSY, nothing made */
	uint32_t slot = (base - 0x40000000u) / 65536u;
	snprintf(p, sizeof(p), "%s/slots/%u", f->cfg.run_dir, slot);
	assert_int_equal(hu_write_file(p, "someone-else", 12, O_CREAT | O_EXCL, 0600, &err), 0);
	assert_int_equal(hu_sandbox_revive(f->rt, &spec, &f->sb, &err), -1);
	assert_int_equal(err.code, EBUSY);
	assert_null(f->sb);
	snprintf(p, sizeof(p), "%s/sandboxes/" ID, f->cfg.run_dir);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/slots/%u", f->cfg.run_dir, slot);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(hu_sandbox_revive(f->rt, &spec, &f->sb, &err), 0);
	assert_int_equal(hu_sandbox_uid_base(f->sb), base); /* the uids its files carry */
	assert_int_equal(hu_sandbox_revive(f->rt, &spec, &again, &err), -1);
	assert_int_equal(err.code, EEXIST);
	assert_int_equal(hu_sandbox_restart(f->sb, &spec, &err), 0);
	const char *check[] = {"sh", "-c", "test \"$(cat /root/f)\" = kept && test \"$(cat /home/user/w/g)\" = w"};
	assert_int_equal(sandbox_run(f->sb, check, 3), 0);
	const char *fail[] = {"sh", "-c", "test -e /nonexistent"};
	assert_int_equal(sandbox_run(f->sb, fail, 3), 1); /* the check can fail */

	/* destroy removes the files; a revive then finds nothing */
	assert_int_equal(hu_sandbox_destroy(f->sb, &err), 0);
	f->sb = NULL;
	seen = 0;
	assert_int_equal(hu_runtime_layers(f->rt, count_layer, &seen, &err), 0);
	assert_int_equal(seen, 0);
	assert_int_equal(hu_sandbox_revive(f->rt, &spec, &again, &err), -1);
	assert_int_equal(err.code, ENOENT);
	snprintf(p, sizeof(p), "%s/sandboxes/" ID, f->cfg.run_dir);
	assert_int_equal(access(p, F_OK), -1); /* a failed revive leaves nothing */
}

/* Files of the old layout carry the sandbox's host uids: give every id
 * below the range's size this base (nftw has no argument). */
static uint32_t old_base;

static int to_host_ids(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)type;
	(void)ftw;
	uid_t u = st->st_uid < 65536u ? old_base + st->st_uid : st->st_uid;
	gid_t g = st->st_gid < 65536u ? old_base + st->st_gid : st->st_gid;
	if (lchown(path, u, g) < 0)
		return 1;
	/* chown clears set-user-ID and set-group-ID */
	if ((st->st_mode & (S_ISUID | S_ISGID)) && !S_ISLNK(st->st_mode) && chmod(path, st->st_mode & 07777) < 0)
		return 1;
	return 0;
}

/* A layer as hutch made it before rw/ (upper/ and work/ at the layer's top,
 * the files at the sandbox's host uids) still boots as it is, and what the
 * sandbox writes there keeps that layout. */
static void test_layer_of_the_old_layout_boots(void **state)
{
	struct fx *f = *state;
	struct hu_sandbox_spec spec;
	char layer[PATH_MAX], from[PATH_MAX + 32], to[PATH_MAX + 32];
	struct stat st;
	hu_err err = {0};

	if (!usable())
		skip();
	if (hu_runtime_open(&f->cfg, &f->rt, &err) < 0 || hu_template_ensure_base(f->rt, &err) < 0) {
		print_message("runtime unavailable here: %s\n", err.msg);
		skip();
	}
	hu_sandbox_spec_defaults(&spec);
	snprintf(spec.id, sizeof(spec.id), ID);
	spec.disk_bytes = 64u << 20;
	assert_int_equal(hu_sandbox_create(f->rt, &spec, &f->sb, &err), 0);
	const char *write[] = {"sh", "-c", "echo kept >/root/f && echo u >/home/user/g && chown 1000:1000 /home/user/g"};
	assert_int_equal(sandbox_run(f->sb, write, 3), 0);
	assert_int_equal(hu_sandbox_stop(f->sb, &err), 0);

	/* rewrite the layer into the old layout */
	old_base = hu_sandbox_uid_base(f->sb);
	snprintf(layer, sizeof(layer), "%s/layers/" ID, f->cfg.data_dir);
	snprintf(from, sizeof(from), "%s/rw/upper/home/user/g", layer);
	assert_int_equal(stat(from, &st), 0);
	assert_int_equal(st.st_uid, 1000); /* the new layout: the sandbox's own ids */
	const char *moved[] = {"upper", "work"};
	for (size_t i = 0; i < 2; i++) {
		snprintf(from, sizeof(from), "%s/rw/%s", layer, moved[i]);
		snprintf(to, sizeof(to), "%s/%s", layer, moved[i]);
		assert_int_equal(rename(from, to), 0);
		assert_int_equal(nftw(to, to_host_ids, 16, FTW_PHYS | FTW_MOUNT), 0);
	}
	snprintf(from, sizeof(from), "%s/rw", layer);
	assert_int_equal(rmdir(from), 0);

	assert_int_equal(hu_sandbox_restart(f->sb, &spec, &err), 0);
	const char *check[] = {"sh", "-c",
			       "test \"$(cat /root/f)\" = kept && test \"$(stat -c %u /home/user/g)\" = 1000 && "
			       "test \"$(stat -c %u /root)\" = 0 && echo new >/home/user/h && chown 1000 /home/user/h"};
	assert_int_equal(sandbox_run(f->sb, check, 3), 0);
	snprintf(to, sizeof(to), "%s/upper/home/user/h", layer);
	assert_int_equal(stat(to, &st), 0);
	assert_int_equal(st.st_uid, old_base + 1000); /* written the old way */
	snprintf(from, sizeof(from), "%s/rw", layer);
	assert_int_equal(access(from, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_revive_after_a_reboot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_layer_of_the_old_layout_boots, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
