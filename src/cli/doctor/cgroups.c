/*
 * Cgroups: the memory, pids and cpu controllers that limit every sandbox (a
 * FAIL without them), and what makes the limits tight: swap accounting,
 * cgroup2's freeze and kill files, clone3(CLONE_INTO_CGROUP) so no process
 * runs outside its group for an instant, and pressure stall information.
 * Group files are looked at in a throw-away group, which is removed again.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli/doctor/doctor.h"
#include "cli/doctor/probe.h"
#include "runtime/cgroup.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* struct clone_args up to CLONE_ARGS_SIZE_VER2 (the cgroup field), declared
 * here because <linux/sched.h> redefines what <sched.h> already has. */
struct doctor_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size,
		cgroup;
};
static bool path_exists(const char *dir, const char *file)
{
	char p[PATH_MAX];
	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, file) >= sizeof(p))
		return false;
	return access(p, F_OK) == 0;
}

/* A throw-away group in the cgroup2 hierarchy: the root group never has the
 * per-group files (cgroup.freeze, cgroup.kill, memory.swap.max) to look at. */
static int cg2_probe_create(const struct doctor_ctx *cx, char *path, size_t n, hu_err *err)
{
	if ((size_t)snprintf(path, n, "%s/hutch-doctor-%d", cx->cg.v2_root, (int)getpid()) >= n)
		return hu_err_set(err, ENAMETOOLONG, "cgroup path");
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return doctor_probe_sys(err, "mkdir %s", path);
	return 0;
}

static void cg2_probe_remove(const char *path)
{
	/* a just-reaped process may keep the group busy for a moment */
	for (int i = 0; i < 100; i++) {
		if (rmdir(path) == 0 || errno != EBUSY)
			return;
		usleep(10 * 1000);
	}
}

static bool cg_fail_early(const struct doctor_ctx *cx, struct doctor_result *r)
{
	if (cx->cg_ok)
		return false;
	doctor_found(r, "no usable cgroup setup (%s)", cx->cg_err);
	doctor_verdict(r, DOCTOR_WARN, "could not be checked");
	return true;
}

/* Whether the controller `name` is there: listed in cgroup2's
 * cgroup.controllers (ctrl), or its v1 hierarchy mounted (v1 not ""). */
static bool cg_has_controller(const struct hu_cgroup_env *cg, const char *ctrl, const char *name, const char *v1)
{
	if (cg->mode == HU_CGROUP_V2)
		return doctor_has_word(ctrl, name);
	return v1[0] != '\0';
}

/* Each controller a sandbox's limits need: listed when present, a verdict
 * naming what is lost when missing. */
static void cg_report_controllers(const struct hu_cgroup_env *cg, const char *ctrl, struct doctor_result *r)
{
	const struct {
		const char *name;
		const char *v1;
		enum doctor_status miss;
		const char *why;
	} want[] = {
		{"memory", cg->v1_memory, DOCTOR_FAIL, "memory limits cannot be enforced"},
		{"pids", cg->v1_pids, DOCTOR_FAIL, "fork bombs cannot be contained"},
		{"cpu", cg->v1_cpu, DOCTOR_FAIL, "cpu limits cannot be enforced"},
		{"freezer", cg->v1_freezer, DOCTOR_WARN, "sandboxes cannot be paused"},
	};
	char have[128] = "";

	for (size_t i = 0; i < HU_ARRAY_LEN(want); i++) {
		/* v2 has no freezer controller: cgroup.freeze is core (next check) */
		if (cg->mode == HU_CGROUP_V2 && !strcmp(want[i].name, "freezer"))
			continue;
		if (cg_has_controller(cg, ctrl, want[i].name, want[i].v1)) {
			doctor_appendf(have, sizeof(have), "%s%s", have[0] ? ", " : "", want[i].name);
		} else {
			doctor_found(r, "%s controller missing", want[i].name);
			doctor_verdict(r, want[i].miss, "%s", want[i].why);
		}
	}
	if (have[0])
		doctor_found(r, "controllers: %s", have);
}

void doctor_check_cgroups(const struct doctor_ctx *cx, struct doctor_result *r)
{
	const struct hu_cgroup_env *cg = &cx->cg;
	char ctrl[1024] = "";
	hu_err err;

	if (!cx->cg_ok) {
		doctor_found(r, "%s", cx->cg_err);
		doctor_verdict(r, DOCTOR_FAIL, "no memory, pids or cpu limits can be set; sandboxes cannot start");
		return;
	}
	doctor_found(r, "mode %s", hu_cgroup_mode_name(cg->mode));
	if (cg->v2_root[0])
		doctor_found(r, "cgroup2 at %s%s", cg->v2_root,
			     cg->mode == HU_CGROUP_HYBRID ? " (no controllers)" : "");
	if (cg->mode == HU_CGROUP_V2) {
		char p[300];
		snprintf(p, sizeof(p), "%s/cgroup.controllers", cg->v2_root);
		if (hu_read_file(p, ctrl, sizeof(ctrl), &err) < 0)
			ctrl[0] = '\0';
	}
	cg_report_controllers(cg, ctrl, r);
	if (r->status == DOCTOR_FAIL)
		doctor_appendf(r->disables, sizeof(r->disables), "; sandboxes cannot start");
}

void doctor_check_cg_swap(const struct doctor_ctx *cx, struct doctor_result *r)
{
	const struct hu_cgroup_env *cg = &cx->cg;
	char grp[HU_ERR_MSG_MAX];
	hu_err err;
	int have = -1; /* -1 unknown */

	if (cg_fail_early(cx, r))
		return;
	if (cg->mode != HU_CGROUP_V2) {
		if (cg->v1_memory[0]) {
			have = path_exists(cg->v1_memory, "memory.memsw.limit_in_bytes");
			doctor_found(r, "v1 memory.memsw.* %s", have ? "present" : "absent (swapaccount off?)");
		}
	} else if (cg2_probe_create(cx, grp, sizeof(grp), &err) < 0) {
		doctor_found(r, "%s", err.msg);
	} else {
		/* the file only appears when memory is enabled for the root's children */
		if (path_exists(grp, "memory.max")) {
			have = path_exists(grp, "memory.swap.max");
			doctor_found(r, "v2 memory.swap.max %s", have ? "present" : "absent");
		} else {
			doctor_found(r, "memory is not enabled in %s/cgroup.subtree_control, swap control unknown",
				     cg->v2_root);
		}
		cg2_probe_remove(grp);
	}
	if (cx->swap_kib == 0) {
		doctor_found(r, "the host has no swap, so sandboxes cannot swap anyway");
	} else if (have != 1) {
		doctor_verdict(r, DOCTOR_WARN,
			       "sandboxes can use swap beyond their memory limit (hutch limits swap to 0 extra)");
	}
}

static int clone_into_cgroup(const char *grp, hu_err *err)
{
	int hold[2];
	char procs[PATH_MAX], buf[4096], want[32];

	_cleanup_close_ int cgfd = open(grp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgfd < 0)
		return doctor_probe_sys(err, "open %s", grp);
	if (pipe2(hold, O_CLOEXEC) < 0)
		return doctor_probe_sys(err, "pipe");
	struct doctor_clone_args ca = {.flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t)cgfd};
	fflush(NULL);
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		/* Raw syscalls only: this child was not made by fork(), so libc and
		 * the sanitizer runtime do not know about it. It waits for EOF, so
		 * the parent can see it in the group, then exits. */
		char b;
		syscall(SYS_close, hold[1]);
		syscall(SYS_read, hold[0], &b, 1);
		syscall(SYS_exit_group, 0);
	}
	int e = errno;
	close(hold[0]);
	if (pid < 0) {
		close(hold[1]);
		errno = e;
		return doctor_probe_sys(err, "clone3(CLONE_INTO_CGROUP)");
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", grp);
	snprintf(want, sizeof(want), "%ld", pid);
	ssize_t got = hu_read_file(procs, buf, sizeof(buf), err);
	close(hold[1]);
	doctor_reap((pid_t)pid);
	if (got < 0)
		return -1;
	if (!doctor_has_word(buf, want))
		return hu_err_set(err, 0, "clone3(CLONE_INTO_CGROUP) succeeded but the child is not in %s", grp);
	return 0;
}

/* cgroup.freeze (5.2) and cgroup.kill (5.14), looked for in grp. */
static void cg2_report_freeze_kill(const struct hu_cgroup_env *cg, const char *grp, struct doctor_result *r)
{
	bool freeze = path_exists(grp, "cgroup.freeze"), kill = path_exists(grp, "cgroup.kill");
	doctor_found(r, "cgroup.freeze %s, cgroup.kill %s", freeze ? "present" : "absent (kernel < 5.2)",
		     kill ? "present" : "absent (kernel < 5.14)");
	if (!freeze)
		doctor_verdict(r, DOCTOR_WARN, "%s",
			cg->v1_freezer[0] ? "pausing uses the slower v1 freezer" : "sandboxes cannot be paused");
	if (!kill)
		doctor_verdict(r, DOCTOR_WARN,
			       "killing a sandbox signals its processes one by one (racy against forks)");
}

/* clone3 (5.3) + CLONE_INTO_CGROUP (5.7): the child starts inside its
 * group, so no instant of it runs unlimited. Tried with grp. */
static void cg2_report_clone(const struct doctor_ctx *cx, const char *grp, struct doctor_result *r)
{
	hu_err err;

	bool new_enough = cx->kmajor > 5 || (cx->kmajor == 5 && cx->kminor >= 7);
	if (clone_into_cgroup(grp, &err) < 0) {
		doctor_found(r, "%s (kernel %u.%u%s)", err.msg, cx->kmajor, cx->kminor, new_enough ? "" : " < 5.7");
		doctor_verdict(r, DOCTOR_WARN,
			       "processes are moved into their group after they start, briefly unlimited");
	} else {
		doctor_found(r, "clone3(CLONE_INTO_CGROUP) places a child in its group (kernel %u.%u)", cx->kmajor,
			     cx->kminor);
	}
}

void doctor_check_cg2_features(const struct doctor_ctx *cx, struct doctor_result *r)
{
	const struct hu_cgroup_env *cg = &cx->cg;
	char grp[HU_ERR_MSG_MAX];
	hu_err err;

	if (cg_fail_early(cx, r))
		return;
	if (!cg->v2_root[0]) {
		doctor_found(r, "no cgroup2 hierarchy (pure v1)");
		doctor_verdict(r, DOCTOR_WARN,
			       "freeze falls back to the v1 freezer, kill to signalling each process, and "
			       "processes are moved into their group after they start");
		return;
	}
	if (cg2_probe_create(cx, grp, sizeof(grp), &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_WARN, "could not be checked");
		return;
	}
	cg2_report_freeze_kill(cg, grp, r);
	cg2_report_clone(cx, grp, r);
	cg2_probe_remove(grp);
}

void doctor_check_psi(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char buf[512];
	hu_err err;

	/* the file exists even with psi=0, but reading it then fails */
	if (hu_read_file("/proc/pressure/memory", buf, sizeof(buf), &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_WARN,
			       "no memory pressure figures for the host or sandboxes (boot with psi=1)");
		return;
	}
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	doctor_found(r, "/proc/pressure/memory readable (%s)", buf);
}

/* Block I/O: which weight and cap knobs a sandbox's group gets here
 * (runtime/cgroup_io.c looks, in a throw-away group). */
void doctor_check_block_io(const struct doctor_ctx *cx, struct doctor_result *r)
{
	struct hu_cgroup_io_support io;
	hu_err err;

	if (cg_fail_early(cx, r))
		return;
	if (hu_cgroup_io_probe(&cx->cg, &io, &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_WARN, "could not be checked");
		return;
	}
	if (!io.controller) {
		doctor_found(r, "no io controller in cgroup2 and no v1 blkio hierarchy");
		doctor_verdict(r, DOCTOR_WARN, "no I/O weight or caps: one sandbox can take a disk's whole bandwidth");
		return;
	}
	if (io.unknown) {
		doctor_found(r, "%s offered, not yet enabled for children (the first sandbox enables it)", io.controller);
		return;
	}
	doctor_found(r, "%s: weight %s, caps %s (a weight counts only on disks scheduled by bfq, or with io.cost)",
		     io.controller, io.weight ? io.weight : "none", io.caps ? "present" : "none");
	if (!io.weight)
		doctor_verdict(r, DOCTOR_WARN, "no I/O weight: sandboxes and the host share disks unweighted");
	if (!io.caps)
		doctor_verdict(r, DOCTOR_WARN, "io.bps and io.iops cannot be enforced");
}
