/*
 * The resource floor: what an idle sandbox costs this host, measured by
 * starting real sandboxes in a scratch data and run directory, and how many
 * the host holds by memory, by kernel.pid_max and by uid ranges.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/doctor/doctor.h"
#include "daemon/sandboxes/host_readings.h"
#include "runtime/cgroup.h"
#include "runtime/sandbox.h"
#include "util/cleanup.h"
#include "util/meminfo.h"

#define FLOOR_SANDBOXES 32
#define UID_SLOTS 16384 /* idrange: 2^30 + slot * 65536 below 2^32 */

static uint64_t mem_available_kib(void)
{
	uint64_t total, avail;
	hu_err err;

	return hu_meminfo(&total, &avail, &err) == 0 ? avail / 1024 : 0;
}

/* What starting FLOOR_SANDBOXES idle sandboxes cost. */
struct floor_sample {
	int made;               /* sandboxes created: FLOOR_SANDBOXES unless one failed */
	uint64_t before, after; /* MemAvailable in KiB before and after the creates */
	uint64_t charged;       /* bytes charged to their memory cgroups */
	hu_err err;             /* why sandbox made + 1 could not be created */
};

/* A runtime of the doctor's own: data and run dirs in the scratch dir, and
 * a cgroup parent named after the doctor's pid. */
static void floor_runtime_config(const struct doctor_ctx *cx, struct hu_runtime_config *rc)
{
	hu_runtime_config_defaults(rc);
	snprintf(rc->data_dir, sizeof(rc->data_dir), "%s/floor-data", cx->tmp);
	snprintf(rc->run_dir, sizeof(rc->run_dir), "%s/floor-run", cx->tmp);
	snprintf(rc->cgroup_parent, sizeof(rc->cgroup_parent), "hutch-doctor-%d", (int)getpid());
}

/* Create the sandboxes, read what they cost once their inits settle, and
 * destroy them again. */
static void floor_sample(struct hu_runtime *rt, struct floor_sample *s)
{
	struct hu_sandbox *sb[FLOOR_SANDBOXES] = {NULL};
	hu_err scratch;

	s->before = mem_available_kib();
	for (; s->made < FLOOR_SANDBOXES; s->made++) {
		struct hu_sandbox_spec spec;
		hu_sandbox_spec_defaults(&spec);
		snprintf(spec.id, sizeof(spec.id), "doctor-floor-%d", s->made);
		if (hu_sandbox_create(rt, &spec, &sb[s->made], &s->err) < 0)
			break;
	}
	usleep(200 * 1000); /* let the inits settle */
	s->after = mem_available_kib();
	for (int i = 0; i < s->made; i++) {
		struct hu_cgroup_stats st;
		uint64_t disk;
		if (hu_sandbox_stats(sb[i], &st, &disk, &scratch) == 0)
			s->charged += st.memory_bytes;
	}
	/* a failed destroy must not replace the create error the report names */
	for (int i = 0; i < s->made; i++)
		hu_sandbox_destroy(sb[i], &scratch);
}

/* The parent group the runtime keeps for concurrent creators, in every
 * hierarchy it may have made one in. */
static void floor_remove_parent_groups(const struct hu_cgroup_env *env, const char *parent)
{
	const char *roots[] = {env->v2_root, env->v1_memory,   env->v1_pids,
			       env->v1_cpu,  env->v1_cpuacct, env->v1_freezer, env->v1_blkio};

	for (size_t i = 0; i < HU_ARRAY_LEN(roots); i++) {
		char grp[PATH_MAX + 80];
		if (!roots[i][0])
			continue;
		if (snprintf(grp, sizeof(grp), "%s/%s", roots[i], parent) < (int)sizeof(grp))
			rmdir(grp);
	}
}

/* How many sandboxes admission control allows by kernel.pid_max, from the
 * daemon's own reading, so that doctor counts what admission counts. */
static void floor_report_pids(struct doctor_result *r)
{
	struct hu_host_readings host;
	hu_err err;

	uint64_t pid_max = hu_host_readings(&host, &err) == 0 ? host.pid_max : 0;
	if (pid_max <= 4096)
		return;
	uint64_t by_pids = (pid_max - 4096) / 512;
	doctor_found(r, "kernel.pid_max %" PRIu64 ": admission control allows %" PRIu64 " sandboxes of 512 pids%s",
		     pid_max, by_pids, by_pids < 1000 ? " (raise kernel.pid_max for more)" : "");
	if (by_pids < 100)
		doctor_verdict(r, DOCTOR_WARN, "kernel.pid_max limits this host to %" PRIu64 " default sandboxes",
			       by_pids);
}

/* How many idle sandboxes fit in what MemAvailable is left, each costing
 * `each` KiB. */
static void floor_report_fit(struct doctor_result *r, uint64_t after, uint64_t each)
{
	uint64_t reserve = DOCTOR_HOST_RESERVE_MIB * 1024;

	if (after <= reserve)
		return;
	uint64_t fit = (after - reserve) / each;
	doctor_found(r,
		     "about %" PRIu64 " idle sandboxes fit in MemAvailable less %llu MiB for the host%s; "
		     "what their processes use comes on top",
		     fit < UID_SLOTS ? fit : UID_SLOTS, DOCTOR_HOST_RESERVE_MIB,
		     fit < UID_SLOTS ? "" : " (capped by the 16384 uid ranges)");
}

/* Measured, not assumed: start FLOOR_SANDBOXES real sandboxes in a scratch
 * run dir, see what the host gives up for them, and derive how many idle
 * ones fit. */
void doctor_check_floor(const struct doctor_ctx *cx, struct doctor_result *r)
{
	struct hu_runtime_config rc;
	struct hu_runtime *rt = NULL;
	struct floor_sample s = {.made = 0, .charged = 0};
	hu_err err;

	if (!cx->tmp[0] || !cx->cg_ok || geteuid() != 0) {
		doctor_verdict(r, DOCTOR_WARN, "not measured (needs root, cgroups and a scratch directory)");
		return;
	}
	floor_runtime_config(cx, &rc);
	if (hu_runtime_open(&rc, &rt, &err) < 0 || hu_template_ensure_base(rt, &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL, "no sandbox can be created here");
		hu_runtime_close(rt);
		return;
	}
	hu_err_clear(&s.err);
	floor_sample(rt, &s);
	hu_runtime_close(rt);
	floor_remove_parent_groups(&cx->cg, rc.cgroup_parent);
	if (s.made < FLOOR_SANDBOXES) {
		doctor_found(r, "sandbox %d of %d: %s", s.made + 1, FLOOR_SANDBOXES, s.err.msg);
		doctor_verdict(r, DOCTOR_FAIL, "sandboxes cannot be created here");
		return;
	}
	uint64_t host_kib = s.before > s.after ? (s.before - s.after) / FLOOR_SANDBOXES : 0;
	uint64_t cg_kib = s.charged / 1024 / FLOOR_SANDBOXES;
	uint64_t each = host_kib > cg_kib ? host_kib : cg_kib;
	doctor_found(r,
		     "an idle sandbox (hutch-init only) costs the host about %.2f MiB (MemAvailable over %d "
		     "sandboxes; noisy on a busy host), %.2f MiB of it charged to its memory cgroup",
		     host_kib / 1024.0, FLOOR_SANDBOXES, cg_kib / 1024.0);
	if (each < 256)
		each = 256; /* below the noise: count at least the kernel's per-sandbox objects */
	floor_report_pids(r);
	floor_report_fit(r, s.after, each);
}
