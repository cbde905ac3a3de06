/*
 * hutch doctor: where the sandboxes' writable layers live. A layer is a
 * btrfs subvolume capped by a quota group, on the data dir's own btrfs or on
 * one image per host (docs/operations.md, "Storage"); a host that can make
 * neither starts no sandbox.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/doctor/doctor.h"
#include "daemon/core/config.h"
#include "runtime/sandbox.h"

/* Which backend holds the layers, and why: decided as hu_runtime_open
 * decides it for the configured data dir (or the nearest directory that
 * exists, for a data dir not made yet). Makes nothing. */
void doctor_check_storage(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char *args[] = {"doctor", "--config", (char *)cx->config_path, NULL};
	struct hu_config cfg;
	struct hu_runtime_config rc;
	struct hu_storage_info info;
	char data_dir[sizeof(rc.data_dir)];
	hu_err err;

	hu_runtime_config_defaults(&rc);
	if (hu_config_from_args(&cfg, cx->config_path ? 3 : 1, args, &err) == 0)
		snprintf(rc.data_dir, sizeof(rc.data_dir), "%s", cfg.data_dir);
	snprintf(data_dir, sizeof(data_dir), "%s", rc.data_dir);
	doctor_nearest_existing(rc.data_dir);
	if (hu_storage_probe(&rc, &info, &err) < 0) {
		doctor_found(r, "%s", err.msg);
		doctor_verdict(r, DOCTOR_FAIL, "sandboxes cannot start");
		return;
	}
	doctor_found(r, "%s on btrfs, a subvolume and quota group per sandbox: %s", info.backend, info.reason);
	if (info.ready) {
		doctor_found(r, "%s is up (%s quotas)", info.root, info.quota);
		return;
	}
	/* probed on the nearest directory that exists; the image goes into the
	 * data dir itself once that is made */
	if (strcmp(data_dir, rc.data_dir))
		snprintf(info.image, sizeof(info.image), "%s/layers.img", data_dir);
	bool mkfs = access("/usr/sbin/mkfs.btrfs", X_OK) == 0 || access("/sbin/mkfs.btrfs", X_OK) == 0;
	bool loop = access("/dev/loop-control", R_OK | W_OK) == 0;
	doctor_found(r, "%s is %s at the first start: mkfs.btrfs %s, /dev/loop-control %s", info.image,
		     access(info.image, F_OK) == 0 ? "mounted" : "made", mkfs ? "present" : "missing (btrfs-progs)",
		     loop ? "usable" : "unusable");
	if (!mkfs || !loop)
		doctor_verdict(r, DOCTOR_FAIL, "the layers image cannot be made; sandboxes cannot start");
}
