/*
 * The host's limits on how many sandboxes it holds: memory (how many
 * default-sized sandboxes fit in MemAvailable) and file descriptors (how many
 * admission control lets `hutch serve` start under the hard RLIMIT_NOFILE).
 * Both are warnings: they bound a host's capacity, not whether it works.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

#include "cli/doctor/doctor.h"
#include "cli/doctor/probe.h"
#include "daemon/sandboxes/fd_budget.h"
#include "util/fileutil.h"

/* The sandbox size the capacity estimate is made for. */
#define SANDBOX_MEM_MIB 512ULL
#define NOFILE_WANTED 65536ULL

static void fmt_kib(char *buf, size_t n, uint64_t kib)
{
	if (kib >= 1024ULL * 1024)
		snprintf(buf, n, "%.1f GiB", (double)kib / (1024.0 * 1024.0));
	else
		snprintf(buf, n, "%" PRIu64 " MiB", kib / 1024);
}

void doctor_check_memory(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char buf[8192], t[32], a[32], s[32];
	hu_err err;
	bool ok_total, ok_avail, ok_swap;

	if (hu_read_file("/proc/meminfo", buf, sizeof(buf), &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_WARN, "could not be checked");
		return;
	}
	uint64_t total = doctor_meminfo_kib(buf, "MemTotal:", &ok_total);
	uint64_t avail = doctor_meminfo_kib(buf, "MemAvailable:", &ok_avail);
	uint64_t swap = doctor_meminfo_kib(buf, "SwapTotal:", &ok_swap);
	if (!ok_avail)
		avail = doctor_meminfo_kib(buf, "MemFree:", &ok_avail);
	fmt_kib(t, sizeof(t), total);
	fmt_kib(a, sizeof(a), avail);
	fmt_kib(s, sizeof(s), swap);
	doctor_found(r, "MemTotal %s, MemAvailable %s", t, a);
	if (swap == 0)
		doctor_found(r,
			     "no swap (memory limits are hard: a sandbox at its limit is OOM-killed, never swapped)");
	else
		doctor_found(r, "swap %s", s);
	uint64_t reserve = DOCTOR_HOST_RESERVE_MIB * 1024, each = SANDBOX_MEM_MIB * 1024;
	uint64_t fit = avail > reserve ? (avail - reserve) / each : 0;
	char keep[32];
	fmt_kib(keep, sizeof(keep), reserve);
	doctor_found(r, "room for about %" PRIu64 " sandboxes of %llu MiB (MemAvailable less %s kept for the host)",
		     fit, SANDBOX_MEM_MIB, keep);
	if (fit == 0)
		doctor_verdict(r, DOCTOR_WARN,
			       "not even one default-sized sandbox fits; smaller limits or more memory are needed");
}

static void fmt_rlim(char *buf, size_t n, rlim_t v)
{
	if (v == RLIM_INFINITY)
		snprintf(buf, n, "unlimited");
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
}

void doctor_check_nofile(const struct doctor_ctx *cx, struct doctor_result *r)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		hu_err err;
		doctor_probe_sys(&err, "getrlimit(RLIMIT_NOFILE)");
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_WARN, "could not be checked");
		return;
	}
	char soft[32], hard[32];
	fmt_rlim(soft, sizeof(soft), rl.rlim_cur);
	fmt_rlim(hard, sizeof(hard), rl.rlim_max);
	doctor_found(r, "RLIMIT_NOFILE soft %s, hard %s", soft, hard);
	/* hutch serve raises its soft limit to the hard one; admission then
	 * refuses creates beyond this (fd_budget.h) */
	if (rl.rlim_max != RLIM_INFINITY)
		doctor_found(r, "hutch serve would admit about %llu sandboxes by descriptors (2 each, plus a reserve)",
			     (unsigned long long)hu_fd_sandboxes_allowed(HU_FD_BASE_TYPICAL, rl.rlim_max));
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < NOFILE_WANTED)
		doctor_verdict(r, DOCTOR_WARN,
			"admission refuses creates beyond that count "
			"(raise the hard limit to %llu: LimitNOFILE= or limits.conf)",
			NOFILE_WANTED);
}
