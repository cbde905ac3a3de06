/* A sandbox's mount list (sbx_mounts.h): built from requests against the
 * store and the host, serialisable as JSON, and turned back into the
 * runtime's mounts from the JSON alone (what a restart does). Host paths
 * are resolved beneath the allowed roots only. Needs root (chown). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/api/mounts_json.h"
#include "daemon/core/config.h"
#include "daemon/sandboxes/sbx_mounts.h"
#include "daemon/store/store.h"
#include "daemon/sandboxes/volumes.h"
#include "util/fileutil.h"

struct fixture {
	char dir[64], roots[128], outside[128];
	struct hu_daemon d;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char p[256];
	hu_err err;

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-sbxm-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->roots, sizeof(f->roots), "%s/roots", f->dir);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->dir);
	snprintf(p, sizeof(p), "%s/ws", f->roots);
	if (hu_mkdir_p(p, 0755, &err) < 0 || mkdir(f->outside, 0755) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/evil", f->roots);
	if (symlink(f->outside, p) < 0)
		return -1;
	snprintf(f->d.cfg.data_dir, sizeof(f->d.cfg.data_dir), "%s/data", f->dir);
	snprintf(f->d.cfg.run_dir, sizeof(f->d.cfg.run_dir), "%s/run", f->dir);
	snprintf(f->d.cfg.host_mount_roots[0], PATH_MAX, "%s", f->roots);
	snprintf(f->d.cfg.host_mount_teams[0], sizeof(f->d.cfg.host_mount_teams[0]), "*"); /* every team's */
	f->d.cfg.n_host_mount_roots = 1;
	if (hu_store_open(f->d.cfg.data_dir, &f->d.store, &err) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	hu_err err;

	hu_store_close(f->d.store);
	hu_rm_rf(f->dir, &err);
	free(f);
	return 0;
}

static void same_dir(int fd, const char *path)
{
	struct stat a, b;
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

static void test_build_serialise_rebuild(void **state)
{
	struct fixture *f = *state;
	struct hu_volume v = {.id = "v00000000000000000001", .team = "t1", .name = "ws", .created_at_ms = 1};
	struct hu_mount_reqs reqs = {0};
	struct hu_sbx s = {.team = "t1"}, again = {.team = "t1"};
	struct hu_sbx_rt_mounts rm;
	char hm[512], p[256];
	hu_err err;

	assert_int_equal(hu_volume_create_disk(&f->d.cfg, &v, &err), 0);
	assert_int_equal(hu_store_volume_add(f->d.store, &v, &err), 0);
	json_t *vm = json_pack("[{s:s, s:s}]", "name", "ws", "path", "/data");
	assert_int_equal(hu_api_decode_volume_mounts(vm, &reqs, &err), 0);
	json_decref(vm);
	snprintf(hm, sizeof(hm), "[{\"hostPath\":\"%s/ws\",\"mountPath\":\"/w\",\"readOnly\":true}]", f->roots);
	assert_int_equal(hu_api_decode_host_mounts(hm, &reqs, &err), 0);
	assert_int_equal(hu_sbx_mounts_build(&f->d, &s, &reqs, &err), 0);
	assert_true(hu_sbx_mounts_volume(&s, v.id));
	assert_false(hu_sbx_mounts_volume(&s, "vother"));

	/* what the store would keep, read back into another sandbox struct */
	char *text = json_dumps(s.mounts, JSON_COMPACT);
	assert_non_null(text);
	again.mounts = json_loads(text, 0, NULL);
	free(text);
	assert_int_equal(hu_sbx_runtime_mounts(&f->d, &again, &rm, &err), 0);
	assert_int_equal(rm.n, 2);
	assert_string_equal(rm.spec[0].target, "/data");
	assert_int_equal(rm.spec[0].read_only, 0);
	assert_int_equal(rm.spec[0].idmap, 1);
	snprintf(p, sizeof(p), "%s/volumes/%s", f->d.cfg.data_dir, v.id);
	same_dir(rm.spec[0].source_fd, p);
	assert_string_equal(rm.spec[1].target, "/w");
	assert_int_equal(rm.spec[1].read_only, 1);
	snprintf(p, sizeof(p), "%s/ws", f->roots);
	same_dir(rm.spec[1].source_fd, p);
	hu_sbx_rt_mounts_close(&rm);

	json_t *view = hu_sbx_volume_mounts_json(&again);
	assert_int_equal(json_array_size(view), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(view, 0), "name")), "ws");
	json_decref(view);

	/* another team cannot use the volume, by name or by id */
	struct hu_sbx other = {.team = "t2"};
	assert_int_equal(hu_sbx_mounts_build(&f->d, &other, &reqs, &err), -1);
	assert_int_equal(err.code, ENOENT);
	struct hu_sbx stolen = {.team = "t2", .mounts = json_incref(again.mounts)};
	assert_int_equal(hu_sbx_runtime_mounts(&f->d, &stolen, &rm, &err), -1);
	assert_int_equal(rm.n, 0);
	json_decref(stolen.mounts);
	json_decref(other.mounts);
	json_decref(s.mounts);
	json_decref(again.mounts);
}

static void test_host_paths(void **state)
{
	struct fixture *f = *state;
	char p[256];
	hu_err err;
	int fd;

	snprintf(p, sizeof(p), "%s", f->roots);
	fd = hu_host_mount_open(&f->d.cfg, "t1", p, &err);
	assert_true(fd >= 0); /* the root itself */
	close(fd);
	static const char *const bad[] = {"/evil", "/evil/x", "/missing", "/../outside", "/ws/../../outside", "x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", i == 5 ? "" : f->roots, bad[i]);
		assert_int_equal(hu_host_mount_open(&f->d.cfg, "t1", p, &err), -1);
		assert_int_equal(err.code, EINVAL);
	}
	/* a sibling whose name starts like the root is not beneath it */
	snprintf(p, sizeof(p), "%s-x", f->roots);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(hu_host_mount_open(&f->d.cfg, "t1", p, &err), -1);
	assert_non_null(strstr(err.msg, "not under"));
	assert_int_equal(hu_host_mount_open(&f->d.cfg, "t1", f->outside, &err), -1);
	f->d.cfg.n_host_mount_roots = 0;
	snprintf(p, sizeof(p), "%s/ws", f->roots);
	assert_int_equal(hu_host_mount_open(&f->d.cfg, "t1", p, &err), -1);
	assert_non_null(strstr(err.msg, "disabled"));
}

/* Roots with owners: "t1:<a>" is t1's only; a bare "<per>" gives each team
 * its subdirectory. Symlinks are never followed, wherever they point: a
 * tenant that plants one in its own tree (before a create, or between a
 * create and a resume) reaches nothing through it. */
static void test_team_scoping(void **state)
{
	struct fixture *f = *state;
	char a[200], per[200], p[320], q[320];
	hu_err err;
	int fd;

	snprintf(a, sizeof(a), "%s/a", f->dir);
	snprintf(per, sizeof(per), "%s/per", f->dir);
	static const char *const dirs[] = {"/t1/ws", "/t2/ws"};
	assert_int_equal(mkdir(a, 0755), 0);
	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s%s", per, dirs[i]);
		assert_int_equal(hu_mkdir_p(p, 0755, &err), 0);
	}
	snprintf(p, sizeof(p), "%s/t2/rel", per);
	assert_int_equal(symlink("../t1/ws", p), 0);
	snprintf(p, sizeof(p), "%s/t2/abs", per);
	snprintf(q, sizeof(q), "%s/t1/ws", per);
	assert_int_equal(symlink(q, p), 0);
	snprintf(p, sizeof(p), "%s/t3", per);
	assert_int_equal(symlink("t1", p), 0); /* a team directory that is a link */
	snprintf(p, sizeof(p), "t1:%s, %s", a, per);
	assert_int_equal(hu_config_set(&f->d.cfg, "host_mount_roots", p, &err), 0);
	assert_string_equal(f->d.cfg.host_mount_teams[0], "t1");
	assert_string_equal(f->d.cfg.host_mount_teams[1], "");

	/* t1's root: t1 yes, t2 no */
	fd = hu_host_mount_open(&f->d.cfg, "t1", a, &err);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(hu_host_mount_open(&f->d.cfg, "t2", a, &err), -1);
	assert_int_equal(err.code, EPERM);
	/* the per-team root: each team its own subdirectory */
	snprintf(p, sizeof(p), "%s/t1/ws", per);
	fd = hu_host_mount_open(&f->d.cfg, "t1", p, &err);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(hu_host_mount_open(&f->d.cfg, "t2", p, &err), -1);
	assert_int_equal(err.code, EPERM);
	assert_int_equal(hu_host_mount_open(&f->d.cfg, "t2", per, &err), -1); /* not the root itself */
	snprintf(p, sizeof(p), "%s/t2/ws", per);
	fd = hu_host_mount_open(&f->d.cfg, "t2", p, &err);
	assert_true(fd >= 0);
	close(fd);
	/* planted links into t1's tree, relative or absolute: refused */
	snprintf(p, sizeof(p), "%s/t2/rel", per);
	assert_int_equal(hu_host_mount_open(&f->d.cfg, "t2", p, &err), -1);
	assert_int_equal(err.code, EINVAL);
	assert_non_null(strstr(err.msg, "symlinks are not followed"));
	snprintf(p, sizeof(p), "%s/t2/abs", per);
	assert_int_equal(hu_host_mount_open(&f->d.cfg, "t2", p, &err), -1);
	snprintf(p, sizeof(p), "%s/t3/ws", per);
	assert_int_equal(hu_host_mount_open(&f->d.cfg, "t3", p, &err), -1);
	/* '..' cannot walk from one team's directory into another's */
	snprintf(p, sizeof(p), "%s/t2/../t1/ws", per);
	assert_int_equal(hu_host_mount_open(&f->d.cfg, "t2", p, &err), -1);

	/* a mount checked at create is checked again at every resume: the
	 * tenant replaces its directory with a link to t1's after the create */
	struct hu_mount_reqs reqs;
	char hm[400];
	struct hu_sbx s = {.team = "t2"};
	struct hu_sbx_rt_mounts rm;
	snprintf(hm, sizeof(hm), "[{\"hostPath\":\"%s/t2/ws\",\"mountPath\":\"/w\"}]", per);
	assert_int_equal(hu_api_decode_host_mounts(hm, &reqs, &err), 0);
	assert_int_equal(hu_sbx_mounts_build(&f->d, &s, &reqs, &err), 0);
	snprintf(p, sizeof(p), "%s/t2/ws", per);
	assert_int_equal(rmdir(p), 0);
	snprintf(q, sizeof(q), "%s/t1/ws", per);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(hu_sbx_runtime_mounts(&f->d, &s, &rm, &err), -1);
	assert_int_equal(rm.n, 0);
	json_decref(s.mounts);
	/* the fixture removes f->dir (links are removed, never followed) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_build_serialise_rebuild, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_team_scoping, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
