/*
 * Idmapped mounts: /usr and the templates are bound into every sandbox through
 * a mount that maps host root to the sandbox's root uid, so the files show the
 * right owner inside without being copied or chowned. The probe makes such a
 * mount of /usr and of the data directory's file system and looks at an owner
 * through it.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cli/doctor/doctor.h"
#include "cli/doctor/probe.h"
#include "runtime/mountapi.h"
#include "runtime/sandbox.h"
#include "util/cleanup.h"

static const char *fs_name(long type)
{
	switch ((unsigned long)type) {
	case 0xef53: return "ext4";
	case 0x58465342: return "xfs";
	case 0x9123683e: return "btrfs";
	case 0x01021994: return "tmpfs";
	case 0x794c7630: return "overlay";
	case 0x2fc12fc1: return "zfs";
	case 0xf2f52010: return "f2fs";
	default: return "other";
	}
}

struct idmap_arg {
	const char *path;
};

/* A descriptor of a user namespace mapped as a sandbox's is (root inside =
 * DOCTOR_PROBE_UID), or -1. */
static int mapped_userns_fd(hu_err *err)
{
	struct doctor_userns_child c = {.pid = -1, .go = -1, .res = -1};
	char nspath[64];

	if (doctor_userns_start(&c, 0, NULL, NULL, err) < 0)
		return -1;
	snprintf(nspath, sizeof(nspath), "/proc/%d/ns/user", (int)c.pid);
	/* the fd keeps the user namespace alive after its only process exits */
	_cleanup_close_ int userns = open(nspath, O_RDONLY | O_CLOEXEC);
	int open_errno = errno;
	if (doctor_userns_finish(&c, NULL, 0, err) < 0)
		return -1;
	if (userns < 0) {
		errno = open_errno;
		return doctor_probe_sys(err, "open %s", nspath);
	}
	return hu_take_fd(&userns);
}

static int probe_idmap(void *arg, char *info, size_t n, hu_err *err)
{
	const struct idmap_arg *a = arg;
	struct stat plain, mapped;
	struct statfs sfs;

	if (stat(a->path, &plain) < 0)
		return doctor_probe_sys(err, "stat %s", a->path);
	_cleanup_close_ int userns = mapped_userns_fd(err);
	if (userns < 0)
		return -1;
	/* A detached copy of the mount: it is unmounted when the fd closes. */
	_cleanup_close_ int tree = hu_open_tree(AT_FDCWD, a->path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return doctor_probe_sys(err, "open_tree(%s, OPEN_TREE_CLONE)", a->path);
	struct hu_mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns};
	if (hu_mount_setattr(tree, "", AT_EMPTY_PATH, &attr) < 0)
		return doctor_probe_sys(err, "mount_setattr(MOUNT_ATTR_IDMAP) on %s", a->path);
	if (fstat(tree, &mapped) < 0)
		return doctor_probe_sys(err, "stat the idmapped %s", a->path);
	/* the point of the mapping: host uid 0 must show as the sandbox's root */
	if (plain.st_uid == 0 && mapped.st_uid != DOCTOR_PROBE_UID)
		return hu_err_set(err, 0, "idmapped %s shows owner %u instead of %u", a->path, (unsigned)mapped.st_uid,
				  DOCTOR_PROBE_UID);
	if (fstatfs(tree, &sfs) < 0)
		sfs.f_type = 0;
	snprintf(info, n, "%s (%s): owner %u shows as %u", a->path, fs_name((long)sfs.f_type),
		 (unsigned)plain.st_uid, (unsigned)mapped.st_uid);
	return 0;
}

/* Cut path back to its nearest existing ancestor ("/" at the least). */
static void nearest_existing(char *path)
{
	while (access(path, F_OK) < 0 && strcmp(path, "/")) {
		char *slash = strrchr(path, '/');
		if (!slash)
			return;
		if (slash == path)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
}

/* Probe an idmapped mount of path; a failure FAILs with `why`. */
static void idmap_probe_path(struct doctor_result *r, const char *path, const char *why)
{
	char info[HU_ERR_MSG_MAX];
	struct idmap_arg a = {path};
	hu_err err;

	if (doctor_run_probe(probe_idmap, &a, info, sizeof(info), &err) == 0) {
		doctor_found(r, "%s", info);
		return;
	}
	/* mount_setattr failures already name the path */
	if (strstr(err.msg, path))
		doctor_found(r, "%s", err.msg);
	else
		doctor_found(r, "%s: %s", path, err.msg);
	doctor_verdict(r, DOCTOR_FAIL, "%s", why);
}

void doctor_check_idmap(const struct doctor_ctx *cx, struct doctor_result *r)
{
	struct hu_runtime_config cfg;
	char data[PATH_MAX];

	/* /usr is bound into every sandbox; the templates live under the data
	 * dir, possibly on another file system, so probe that too (or its
	 * nearest existing parent when hutch has not created it yet). */
	hu_runtime_config_defaults(&cfg);
	snprintf(data, sizeof(data), "%s", cfg.data_dir);
	nearest_existing(data);
	idmap_probe_path(r, "/usr", "/usr would appear owned by nobody inside sandboxes");
	if (strcmp(data, "/usr"))
		idmap_probe_path(r, data, "template files would appear owned by nobody");
	if (r->status == DOCTOR_FAIL)
		doctor_appendf(r->disables, sizeof(r->disables), "; sandboxes cannot start");
}
