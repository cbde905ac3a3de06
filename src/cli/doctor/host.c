/*
 * The host basics: the doctor runs as root with the capabilities that write id
 * maps and mount, and the kernel has pidfd_open, which the daemon uses to
 * watch every sandbox's init without racing against pid reuse. Without either
 * no sandbox starts.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli/doctor/doctor.h"
#include "cli/doctor/probe.h"
#include "util/fileutil.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* The effective capability set, from /proc/self/status (0 when unreadable). */
static unsigned long long read_capeff(void)
{
	char status[4096];
	hu_err err;

	if (hu_read_file("/proc/self/status", status, sizeof(status), &err) < 0)
		return 0;
	const char *p = strstr(status, "\nCapEff:");
	return p ? strtoull(p + 8, NULL, 16) : 0;
}

void doctor_check_root(const struct doctor_ctx *cx, struct doctor_result *r)
{
	if (geteuid() != 0) {
		doctor_found(r, "running as uid %u, not root", (unsigned)geteuid());
		doctor_verdict(r, DOCTOR_FAIL,
			       "hutch writes uid/gid maps, mounts and creates cgroups; "
			       "run it (and this doctor) as root");
		return;
	}
	/* euid 0 is not enough inside a container that dropped capabilities */
	unsigned long long capeff = read_capeff();
	bool admin = capeff & (1ULL << 21), setuid_ = capeff & (1ULL << 7), setgid_ = capeff & (1ULL << 6);
	doctor_found(r, "euid 0; effective capabilities %#llx", capeff);
	if (!admin || !setuid_ || !setgid_) {
		doctor_found(r, "missing%s%s%s", admin ? "" : " CAP_SYS_ADMIN", setuid_ ? "" : " CAP_SETUID",
			     setgid_ ? "" : " CAP_SETGID");
		doctor_verdict(r, DOCTOR_FAIL,
			       "root without these capabilities cannot write id maps or mount; sandboxes cannot start");
	} else {
		doctor_found(r, "CAP_SYS_ADMIN, CAP_SETUID and CAP_SETGID held");
	}
}

void doctor_check_kernel(const struct doctor_ctx *cx, struct doctor_result *r)
{
	doctor_found(r, "Linux %s", cx->krelease);
	long fd = syscall(SYS_pidfd_open, (long)getpid(), 0L);
	if (fd < 0) {
		hu_err err;
		doctor_probe_sys(&err, "pidfd_open");
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL,
			       "the daemon cannot watch sandbox init processes race-free; sandboxes cannot start");
		return;
	}
	close((int)fd);
	doctor_found(r, "pidfd_open works");
}
