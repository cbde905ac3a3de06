/*
 * How many sandboxes `hutch serve` would admit here with its configuration
 * (host_capacity.h): running ones at their limits, paused (frozen) ones at
 * what a typical one holds, and for each the limit that binds and what
 * would raise it. A warning below a hundred running: it bounds the host's
 * capacity, not whether it works.
 */
#include <stdio.h>
#include <sys/resource.h>

#include "cli/doctor/doctor.h"
#include "daemon/core/config.h"
#include "daemon/sandboxes/fd_budget.h"
#include "daemon/sandboxes/host_capacity.h"
#include "daemon/sandboxes/host_readings.h"

#define RUNNING_WANTED 100

void doctor_check_capacity(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char *args[] = {"doctor", "--config", (char *)cx->config_path, NULL};
	struct hu_config cfg;
	struct hu_host_readings host;
	struct hu_host_figures h;
	struct hu_admits a;
	struct rlimit rl;
	hu_err err;

	if (hu_config_from_args(&cfg, cx->config_path ? 3 : 1, args, &err) < 0 || hu_host_readings(&host, &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_WARN, "could not be checked");
		return;
	}
	h = (struct hu_host_figures){.mem_total = host.mem_total, .pid_max = host.pid_max, .cpus = host.cpus,
				     .fd_allowed = UINT64_MAX};
	/* hutch serve raises its soft limit to the hard one */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY)
		h.fd_allowed = hu_fd_sandboxes_allowed(HU_FD_BASE_TYPICAL, rl.rlim_max);
	hu_admits_estimate(&cfg, &h, &a);
	doctor_found(r, "about %llu running sandboxes of %llu MiB and %llu pids (bound by %s)",
		     (unsigned long long)a.running, (unsigned long long)(cfg.default_memory_bytes >> 20),
		     (unsigned long long)cfg.default_pids, a.running_raise);
	doctor_found(r, "about %llu paused ones at ~%llu MiB and %d tasks each (bound by %s)",
		     (unsigned long long)a.paused, (unsigned long long)(HU_FROZEN_TYPICAL_MEM >> 20),
		     HU_FROZEN_TYPICAL_PIDS, a.paused_raise);
	if (a.running < RUNNING_WANTED)
		doctor_verdict(r, DOCTOR_WARN, "fewer than %d running sandboxes fit; raise what binds (above)",
			       RUNNING_WANTED);
}
