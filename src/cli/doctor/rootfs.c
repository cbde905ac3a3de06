/*
 * A sandbox's root file system: an overlay of its template (read-only, on
 * disk) and a writable layer on a size-capped tmpfs, mounted by the sandbox
 * itself from inside its user namespace. The probes build exactly that in a
 * scratch directory: the overlay from the host and with userxattr from a user
 * namespace, and a tmpfs whose cap must really stop writes.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cli/doctor/doctor.h"
#include "cli/doctor/probe.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

/* Layout under one scratch directory; `lower` is on the host file system
 * (like a template), the upper layer on a size-capped tmpfs (like a sandbox's
 * writable layer). */
struct ovl_arg {
	char dir[PATH_MAX];
	bool userxattr;
};

static int mkpath(char *buf, size_t n, const char *dir, const char *sub, hu_err *err)
{
	if ((size_t)snprintf(buf, n, "%s/%s", dir, sub) >= n)
		return hu_err_set(err, ENAMETOOLONG, "%s/%s", dir, sub);
	return 0;
}

/* Where the probe's overlay lives under its ovl_arg's dir. */
struct ovl_paths {
	char lower[PATH_MAX], upperfs[PATH_MAX], merged[PATH_MAX];
	char upper[PATH_MAX + 8], work[PATH_MAX + 8]; /* on the tmpfs at upperfs */
};

static int ovl_paths(const struct ovl_arg *a, struct ovl_paths *p, hu_err *err)
{
	if (mkpath(p->lower, sizeof(p->lower), a->dir, "lower", err) < 0 ||
	    mkpath(p->upperfs, sizeof(p->upperfs), a->dir, "upperfs", err) < 0 ||
	    mkpath(p->merged, sizeof(p->merged), a->dir, "merged", err) < 0)
		return -1;
	snprintf(p->upper, sizeof(p->upper), "%s/upper", p->upperfs);
	snprintf(p->work, sizeof(p->work), "%s/work", p->upperfs);
	return 0;
}

/* In a private mount namespace: the tmpfs for the upper layer, then the
 * overlay of lower and upper at merged. */
static int ovl_mount(const struct ovl_arg *a, const struct ovl_paths *p, hu_err *err)
{
	char opts[4 * PATH_MAX];

	if (!a->userxattr && unshare(CLONE_NEWNS) < 0)
		return doctor_probe_sys(err, "unshare(CLONE_NEWNS)");
	if (doctor_make_mounts_private(err) < 0)
		return -1;
	if (mount("tmpfs", p->upperfs, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0755") < 0)
		return doctor_probe_sys(err, "mount tmpfs on %s", p->upperfs);
	if (mkdir(p->upper, 0755) < 0 || mkdir(p->work, 0755) < 0)
		return doctor_probe_sys(err, "mkdir in %s", p->upperfs);
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s%s", p->lower, p->upper, p->work,
		 a->userxattr ? ",userxattr" : "");
	if (mount("overlay", p->merged, "overlay", 0, opts) < 0)
		return doctor_probe_sys(err, "mount overlay%s", a->userxattr ? " (userxattr) in a user namespace" : "");
	return 0;
}

/* Read through to the lower layer, then write: the file must land in upper. */
static int ovl_verify(const struct ovl_paths *p, hu_err *err)
{
	char file[PATH_MAX + 16], buf[32];

	snprintf(file, sizeof(file), "%s/probe", p->merged);
	_cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return doctor_probe_sys(err, "open %s through the overlay", file);
	ssize_t got = read(fd, buf, sizeof(buf) - 1);
	if (got != 6 || memcmp(buf, "hutch\n", 6))
		return hu_err_set(err, 0, "the lower layer's file reads wrong through the overlay");
	snprintf(file, sizeof(file), "%s/written", p->merged);
	if (hu_write_file(file, "x", 1, O_CREAT | O_EXCL, 0644, err) < 0)
		return -1;
	snprintf(file, sizeof(file), "%s/written", p->upper);
	if (access(file, F_OK) < 0)
		return doctor_probe_sys(err, "a file written through the overlay is not in the upper layer: access %s",
					file);
	return 0;
}

static int probe_overlay(void *arg, char *info, size_t n, hu_err *err)
{
	const struct ovl_arg *a = arg;
	struct ovl_paths p;

	if (ovl_paths(a, &p, err) < 0 || ovl_mount(a, &p, err) < 0 || ovl_verify(&p, err) < 0)
		return -1;
	umount2(p.merged, MNT_DETACH);
	umount2(p.upperfs, MNT_DETACH);
	snprintf(info, n, "%s", a->userxattr ? "userxattr accepted" : "mounted");
	return 0;
}

/* Lay out lower/ (with a file), upperfs/ and merged/ under cx->tmp/<name>,
 * readable by the probe uid. */
static int ovl_prepare(const struct doctor_ctx *cx, const char *name, struct ovl_arg *a, hu_err *err)
{
	char p[PATH_MAX + 16];

	if (!cx->tmp[0])
		return hu_err_set(err, 0, "no scratch directory: %s", cx->tmp_err);
	if (mkpath(a->dir, sizeof(a->dir), cx->tmp, name, err) < 0)
		return -1;
	if (mkdir(a->dir, 0755) < 0)
		return hu_err_sys(err, "mkdir %s", a->dir);
	const char *subs[] = {"lower", "upperfs", "merged"};
	for (size_t i = 0; i < HU_ARRAY_LEN(subs); i++) {
		snprintf(p, sizeof(p), "%s/%s", a->dir, subs[i]);
		if (mkdir(p, 0755) < 0)
			return hu_err_sys(err, "mkdir %s", p);
	}
	snprintf(p, sizeof(p), "%s/lower/probe", a->dir);
	return hu_write_file(p, "hutch\n", 6, O_CREAT | O_TRUNC, 0644, err);
}

void doctor_check_overlay(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char fs[8192], info[HU_ERR_MSG_MAX];
	hu_err err;
	struct ovl_arg a = {.userxattr = false};

	/* not listed may only mean "module not loaded yet": the mount decides */
	if (hu_read_file("/proc/filesystems", fs, sizeof(fs), &err) >= 0)
		doctor_found(r, "%s /proc/filesystems",
			     doctor_has_word(fs, "overlay") ? "listed in" : "not (yet) listed in");
	if (ovl_prepare(cx, "ovl-root", &a, &err) < 0 ||
	    doctor_run_probe(probe_overlay, &a, info, sizeof(info), &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL,
			       "sandboxes get no copy-on-write root over their template; sandboxes cannot start");
	} else {
		doctor_found(r, "a root mount of lower on disk + upper on tmpfs works, writes land in the upper layer");
	}
}

void doctor_check_overlay_userns(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char info[HU_ERR_MSG_MAX];
	hu_err err;
	struct ovl_arg a = {.userxattr = true};

	/* A sandbox's setup code mounts its root from inside its own user
	 * namespace, where trusted.* xattrs are out of reach: overlay must keep
	 * its metadata in user.* xattrs (userxattr, kernel >= 5.11). */
	if (ovl_prepare(cx, "ovl-userns", &a, &err) < 0 ||
	    doctor_run_in_userns(CLONE_NEWNS, probe_overlay, &a, info, sizeof(info), &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL, "a sandbox cannot mount its own root inside its user namespace; "
					       "sandboxes cannot start");
	} else {
		doctor_found(r,
			     "mounted inside a user namespace with userxattr (upper on tmpfs), writes land in the "
			     "upper layer");
	}
}

/* In a private mount namespace: a tmpfs of 1 MiB and 64 inodes at dir, which
 * must report exactly that; *bytes is its reported size. */
static int tmpfs_mount_capped(const char *dir, uint64_t *bytes, hu_err *err)
{
	struct statfs sfs;

	if (unshare(CLONE_NEWNS) < 0)
		return doctor_probe_sys(err, "unshare(CLONE_NEWNS)");
	if (doctor_make_mounts_private(err) < 0)
		return -1;
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=64,mode=0700") < 0)
		return doctor_probe_sys(err, "mount tmpfs -o size=1m,nr_inodes=64");
	if (statfs(dir, &sfs) < 0)
		return doctor_probe_sys(err, "statfs %s", dir);
	*bytes = (uint64_t)sfs.f_blocks * (uint64_t)sfs.f_bsize;
	if (*bytes != 1024 * 1024 || sfs.f_files != 64)
		return hu_err_set(err, 0,
				  "tmpfs reports %" PRIu64 " bytes and %" PRIu64 " inodes instead of 1 MiB and 64",
				  *bytes, (uint64_t)sfs.f_files);
	return 0;
}

/* Write up to 4 MiB to file until ENOSPC stops it; *written is how much went in. */
static int tmpfs_fill(const char *file, uint64_t *written, hu_err *err)
{
	static char chunk[64 * 1024];

	_cleanup_close_ int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return doctor_probe_sys(err, "create %s", file);
	memset(chunk, 'x', sizeof(chunk));
	for (int i = 0; i < 64; i++) {
		ssize_t w = write(fd, chunk, sizeof(chunk));
		if (w < 0 && errno == ENOSPC)
			break;
		if (w < 0)
			return doctor_probe_sys(err, "write %s", file);
		*written += (uint64_t)w;
	}
	return 0;
}

static int probe_tmpfs(void *arg, char *info, size_t n, hu_err *err)
{
	const char *dir = arg;
	char file[PATH_MAX + 8];
	uint64_t bytes = 0, written = 0;

	if (tmpfs_mount_capped(dir, &bytes, err) < 0)
		return -1;
	/* the cap must really stop writes, not just be reported */
	snprintf(file, sizeof(file), "%s/fill", dir);
	if (tmpfs_fill(file, &written, err) < 0)
		return -1;
	if (written > bytes)
		return hu_err_set(err, 0, "wrote %" PRIu64 " bytes to a 1 MiB tmpfs without ENOSPC", written);
	umount2(dir, MNT_DETACH);
	snprintf(info, n, "size=1m,nr_inodes=64 honoured: writes stop with ENOSPC after %" PRIu64 " KiB",
		 written / 1024);
	return 0;
}

void doctor_check_tmpfs(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char dir[PATH_MAX + 8], info[HU_ERR_MSG_MAX];
	hu_err err;

	if (!cx->tmp[0]) {
		doctor_found(r, "no scratch directory: %s", cx->tmp_err);
		doctor_verdict(r, DOCTOR_FAIL, "could not be checked");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/tmpfs", cx->tmp);
	if (mkdir(dir, 0700) < 0) {
		hu_err_sys(&err, "mkdir %s", dir);
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL, "could not be checked");
		return;
	}
	if (doctor_run_probe(probe_tmpfs, dir, info, sizeof(info), &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL,
			       "a sandbox's writable layer cannot be size-capped; sandboxes cannot start");
	} else {
		doctor_found(r, "%s", info);
	}
}
