/*
 * Namespaces: every sandbox is root of its own user namespace, mapped to an
 * unprivileged host uid, and gets its own pid, mount, ipc, uts, net and
 * cgroup namespaces. Each is unshared for real in a probe; a missing one is a
 * FAIL because the isolation it gives cannot be had otherwise.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/doctor/doctor.h"
#include "cli/doctor/probe.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

static int probe_userns_root(void *arg, char *info, size_t n, hu_err *err)
{
	if (getuid() != 0 || getgid() != 0)
		return hu_err_set(err, 0, "after writing uid_map the probe is uid %u, not 0", (unsigned)getuid());
	snprintf(info, n, "uid 0 inside maps to host uid %u", DOCTOR_PROBE_UID);
	return 0;
}

void doctor_check_userns(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char buf[64], info[HU_ERR_MSG_MAX];
	hu_err err;
	long max = -1;

	if (hu_read_file("/proc/sys/user/max_user_namespaces", buf, sizeof(buf), &err) >= 0)
		max = strtol(buf, NULL, 10);
	if (max == 0) {
		doctor_found(r, "/proc/sys/user/max_user_namespaces is 0");
		doctor_verdict(r, DOCTOR_FAIL, "every sandbox needs its own user namespace; sandboxes cannot start "
					       "(set user.max_user_namespaces > 0)");
	} else if (max > 0) {
		doctor_found(r, "max_user_namespaces %ld", max);
	} else {
		doctor_found(r, "cannot read max_user_namespaces (%s)", err.msg);
	}
	if (doctor_run_in_userns(0, probe_userns_root, NULL, info, sizeof(info), &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL,
			       "sandbox root cannot be mapped to an unprivileged host uid; sandboxes cannot start");
	} else {
		doctor_found(r, "unshare(CLONE_NEWUSER) with a written uid_map works (%s)", info);
	}
}

struct ns_kind {
	int flag;
	const char *name;
	const char *why; /* what is lost without it */
};

static const struct ns_kind ns_kinds[] = {
	{CLONE_NEWPID, "pid", "sandbox processes would see and signal host processes"},
	{CLONE_NEWNS, "mount", "a sandbox cannot get its own root file system"},
	{CLONE_NEWIPC, "ipc", "sandboxes would share System V IPC and POSIX queues with the host"},
	{CLONE_NEWUTS, "uts", "a sandbox cannot have its own hostname"},
	{CLONE_NEWNET, "net", "sandboxes would share the host network"},
	{CLONE_NEWCGROUP, "cgroup", "sandboxes would see the host cgroup tree"},
};

static int probe_ns(void *arg, char *info, size_t n, hu_err *err)
{
	const struct ns_kind *k = arg;

	if (unshare(k->flag) < 0)
		return doctor_probe_sys(err, "unshare(%s namespace)", k->name);
	if (k->flag == CLONE_NEWNS)
		return doctor_make_mounts_private(err);
	if (k->flag == CLONE_NEWPID) {
		/* unshare(CLONE_NEWPID) only affects children: the first one must be pid 1 */
		pid_t pid = fork();
		if (pid < 0)
			return doctor_probe_sys(err, "fork into the new pid namespace");
		if (pid == 0)
			_exit(getpid() == 1 ? 0 : 1);
		int st = doctor_reap(pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return hu_err_set(err, 0, "first child of the new pid namespace is not pid 1");
	}
	return 0;
}

void doctor_check_namespaces(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char ok[128] = "";
	hu_err err;

	for (size_t i = 0; i < HU_ARRAY_LEN(ns_kinds); i++) {
		if (doctor_run_probe(probe_ns, (void *)&ns_kinds[i], NULL, 0, &err) < 0) {
			doctor_found(r, "%s", err.msg);
			doctor_verdict(r, DOCTOR_FAIL, "%s", ns_kinds[i].why);
		} else {
			doctor_appendf(ok, sizeof(ok), "%s%s", ok[0] ? ", " : "", ns_kinds[i].name);
		}
	}
	if (ok[0])
		doctor_found(r, "unshare works for: %s", ok);
	if (r->status == DOCTOR_FAIL)
		doctor_appendf(r->disables, sizeof(r->disables), "; sandboxes cannot start");
}
