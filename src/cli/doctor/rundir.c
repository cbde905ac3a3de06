/*
 * hutch doctor: what the run dir is on. Every create and destroy makes and
 * removes small files there (a uid slot, hutch-init's pid and control
 * socket); on a disk file system that churn costs far more than on tmpfs
 * (ext4's inode allocator showed up at 19% of the daemon's CPU in bursts;
 * creates about 3x slower: docs/benchmarks.md). The run dir is volatile by
 * design, so tmpfs loses nothing. A warning, never a failure: sandboxes run
 * either way.
 */
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cli/doctor/doctor.h"
#include "daemon/core/config.h"
#include "runtime/sandbox.h"
#include "util/fstype.h"

void doctor_check_run_dir(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char *args[] = {"doctor", "--config", (char *)cx->config_path, NULL};
	struct hu_config cfg;
	struct hu_runtime_config rc;
	struct statfs sfs;
	char dir[PATH_MAX];
	hu_err err;

	hu_runtime_config_defaults(&rc);
	snprintf(dir, sizeof(dir), "%s", rc.run_dir);
	if (hu_config_from_args(&cfg, cx->config_path ? 3 : 1, args, &err) == 0)
		snprintf(dir, sizeof(dir), "%s", cfg.run_dir);
	/* a run dir not made yet is made on the nearest directory that exists */
	char probe[PATH_MAX];
	snprintf(probe, sizeof(probe), "%s", dir);
	doctor_nearest_existing(probe);
	if (statfs(probe, &sfs) < 0) {
		hu_err_sys(&err, "statfs %s", probe);
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_WARN, "could not be checked");
		return;
	}
	const char *fs = hu_fs_type_name((unsigned long)sfs.f_type);
	doctor_found(r, "%s is on %s%s%s", dir, fs, strcmp(probe, dir) ? " (made in " : "",
		     strcmp(probe, dir) ? probe : "");
	if (strcmp(probe, dir))
		doctor_found(r, "not made yet)");
	if (sfs.f_type != TMPFS_MAGIC)
		doctor_verdict(r, DOCTOR_WARN,
			       "creates and destroys are slower: mount a tmpfs on %s (it holds only what a boot "
			       "loses anyway; docs/operations.md \"Data dir and run dir\")",
			       dir);
}
