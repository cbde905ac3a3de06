/*
 * Capped volumes: a volume with a size cap is an ext4 image on a loop device,
 * so it needs /dev/loop-control and mkfs.ext4. Uncapped volumes need neither,
 * so a missing piece is a warning.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

#include "cli/doctor/doctor.h"
#include "cli/doctor/probe.h"

void doctor_check_volumes(const struct doctor_ctx *cx, struct doctor_result *r)
{
	hu_err err;

	int fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	/* worded now: the access() calls below overwrite errno */
	if (fd < 0)
		doctor_probe_sys(&err, "open(/dev/loop-control)");
	bool mkfs = access("/usr/sbin/mkfs.ext4", X_OK) == 0 || access("/sbin/mkfs.ext4", X_OK) == 0;

	if (fd >= 0) {
		doctor_found(r, "/dev/loop-control usable");
		close(fd);
	} else {
		doctor_found(r, "%s", err.msg);
	}
	doctor_found(r, mkfs ? "mkfs.ext4 present" : "mkfs.ext4 missing (e2fsprogs)");
	if (fd < 0 || !mkfs)
		doctor_verdict(r, DOCTOR_WARN, "volumes with a size cap cannot be created (uncapped volumes work)");
}
