/*
 * Confinement of sandbox processes beyond namespaces: the seccomp filter
 * (both actions it uses must work, tried in a probe) and Landlock, which
 * confines every sandbox process to the sandbox's own tree (ABI 2 or newer;
 * without it sandboxes run without that layer, a warning).
 */
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/doctor/doctor.h"
#include "cli/doctor/probe.h"
#include "runtime/coredump.h"
#include "util/fileutil.h"

/* Debian 12's headers know Landlock ABI 2 at most; the version query itself
 * is ABI 1, so these are all the doctor needs. */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif

/* ERRNO action, in the probe itself: the filtered call must fail with our
 * errno. */
static int seccomp_try_errno(hu_err *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return hu_err_set(err, 0, "seccomp_init failed");
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EXDEV), SCMP_SYS(getppid), 0);
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0) {
		errno = -rc;
		return doctor_probe_sys(err, "seccomp_load of an ERRNO filter");
	}
	errno = 0;
	if (syscall(SYS_getppid) != -1 || errno != EXDEV)
		return hu_err_set(err, 0, "a filtered getppid() was not answered with the filter's errno");
	return 0;
}

/* KILL_PROCESS action, in a grandchild that must die of SIGSYS. */
static int seccomp_try_kill(hu_err *err)
{
	pid_t pid = fork();
	if (pid < 0)
		return doctor_probe_sys(err, "fork");
	if (pid == 0) {
		scmp_filter_ctx k = seccomp_init(SCMP_ACT_ALLOW);
		if (!k || seccomp_rule_add(k, SCMP_ACT_KILL_PROCESS, SCMP_SYS(getpid), 0) < 0 || seccomp_load(k) < 0)
			_exit(2);
		syscall(SYS_getpid);
		_exit(3);
	}
	int st = doctor_reap(pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
		return hu_err_set(err, 0, "a KILL_PROCESS filter did not kill its process (status %#x)", st);
	return 0;
}

static int probe_seccomp(void *arg, char *info, size_t n, hu_err *err)
{
	if (seccomp_try_errno(err) < 0 || seccomp_try_kill(err) < 0)
		return -1;
	snprintf(info, n, "ERRNO and KILL_PROCESS filters act as loaded");
	return 0;
}

/* Both actions the sandbox filter uses must be on the kernel's list. */
static void seccomp_report_actions(struct doctor_result *r)
{
	char avail[256];
	hu_err err;

	if (hu_read_file("/proc/sys/kernel/seccomp/actions_avail", avail, sizeof(avail), &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL,
			       "the kernel cannot say which filter actions it has; sandboxes cannot start");
		return;
	}
	bool kp = doctor_has_word(avail, "kill_process"), en = doctor_has_word(avail, "errno");
	doctor_found(r, "actions kill_process %s, errno %s", kp ? "yes" : "NO", en ? "yes" : "NO");
	if (!kp || !en)
		doctor_verdict(r, DOCTOR_FAIL, "the sandbox filter needs both actions; sandboxes cannot start");
}

void doctor_check_seccomp(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char info[HU_ERR_MSG_MAX];
	hu_err err;

	int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
	if (mode < 0) {
		doctor_probe_sys(&err, "prctl(PR_GET_SECCOMP)");
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL, "no syscall filter for sandbox processes; sandboxes cannot start");
		return;
	}
	doctor_found(r, "PR_GET_SECCOMP %d%s", mode,
		     mode == 2 ? " (the doctor already runs under a filter; filters stack)" : "");
	seccomp_report_actions(r);
	const struct scmp_version *v = seccomp_version();
	doctor_found(r, "libseccomp %u.%u.%u (API level %u)", v->major, v->minor, v->micro, seccomp_api_get());
	/* a filter is tried only where the kernel says it can work */
	if (r->status == DOCTOR_FAIL)
		return;
	if (doctor_run_probe(probe_seccomp, NULL, info, sizeof(info), &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL, "the sandbox filter would not protect anything; sandboxes cannot start");
	} else {
		doctor_found(r, "%s", info);
	}
}

/* Why landlock_create_ruleset failed, in an operator's terms ("" when the
 * errno says nothing more). */
static const char *landlock_hint(int e)
{
	if (e == ENOSYS)
		return ": kernel built without Landlock";
	if (e == EOPNOTSUPP)
		return ": Landlock is not enabled (add it to lsm= on the kernel command line)";
	return "";
}

void doctor_check_landlock(const struct doctor_ctx *cx, struct doctor_result *r)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi >= 2) {
		doctor_found(r, "ABI version %ld: every sandbox is confined to its own tree", abi);
		return;
	}
	if (abi == 1) {
		doctor_found(r, "ABI version 1 cannot allow renames between directories");
		doctor_verdict(r, DOCTOR_WARN, "sandboxes run without their Landlock layer (ABI 2 or newer is needed)");
		return;
	}
	hu_err err;
	int e = errno;
	doctor_probe_sys(&err, "landlock_create_ruleset(VERSION)");
	doctor_found(r, "%s%s", err.msg, landlock_hint(e));
	doctor_verdict(r, DOCTOR_WARN,
		       "sandboxes run without their Landlock layer (confinement of every sandbox process to "
		       "the sandbox's own tree; ABI 2 or newer is needed)");
}

/* Sandboxes run with RLIMIT_CORE 1, which stops file and pipe core dumps
 * (the kernel starts a pipe helper, as host root, for any other limit, 0
 * included). A socket pattern ("@path", Linux 6.16+) ignores the limit, and
 * the runtime refuses to start sandboxes under one (runtime/coredump.h). */
void doctor_check_core_pattern(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char pat[256];
	hu_err err;

	if (hu_core_pattern_read(pat, sizeof(pat), &err) < 0) {
		doctor_found(r, "%s", err.msg);
		return;
	}
	if (hu_core_pattern_safe(pat, &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL, "no sandbox starts until kernel.core_pattern is a pipe or a file pattern");
	} else if (pat[0] == '|') {
		doctor_found(r,
			     "kernel.core_pattern pipes to %s; sandboxes run with RLIMIT_CORE 1, for which the kernel starts no "
			     "helper",
			     pat + 1);
	} else {
		doctor_found(r, "kernel.core_pattern %s writes files; sandboxes run with RLIMIT_CORE 1 and write none", pat);
	}
}
