/*
 * What several checks share, worked out once before they run: a private
 * scratch directory for mount probes, the cgroup setup, the kernel release
 * and the host's swap. doctor_ctx_fini() removes the scratch directory again.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/doctor/doctor.h"
#include "runtime/cgroup.h"
#include "util/fileutil.h"

/* The scratch directory; without one cx->tmp is "" and cx->tmp_err says why. */
static void make_scratch_dir(struct doctor_ctx *cx)
{
	static const char template[] = "/tmp/hutch-doctor-XXXXXX";
	hu_err err;

	snprintf(cx->tmp, sizeof(cx->tmp), "%s", template);
	/* 0755 so the probe uid inside a user namespace can reach the layers */
	if (mkdtemp(cx->tmp) && chmod(cx->tmp, 0755) == 0)
		return;
	hu_err_sys(&err, "mkdtemp %s", template);
	snprintf(cx->tmp_err, sizeof(cx->tmp_err), "%s", err.msg);
	/* the name was filled in: mkdtemp made it and chmod failed */
	if (strcmp(cx->tmp, template))
		rmdir(cx->tmp);
	cx->tmp[0] = '\0';
}

void doctor_ctx_init(struct doctor_ctx *cx)
{
	hu_err err;
	struct utsname u;
	char buf[8192];
	bool ok;

	memset(cx, 0, sizeof(*cx));
	make_scratch_dir(cx);
	hu_err_clear(&err);
	cx->cg_ok = hu_cgroup_detect(&cx->cg, &err) == 0;
	if (!cx->cg_ok)
		snprintf(cx->cg_err, sizeof(cx->cg_err), "%s", err.msg);
	if (uname(&u) == 0) {
		snprintf(cx->krelease, sizeof(cx->krelease), "%s", u.release);
		if (sscanf(u.release, "%u.%u", &cx->kmajor, &cx->kminor) != 2)
			cx->kmajor = cx->kminor = 0;
	}
	if (hu_read_file("/proc/meminfo", buf, sizeof(buf), &err) >= 0)
		cx->swap_kib = doctor_meminfo_kib(buf, "SwapTotal:", &ok);
}

void doctor_ctx_fini(struct doctor_ctx *cx)
{
	hu_err err;
	/* every probe mount lived in a child's mount namespace, so this only
	 * removes plain directories on the host */
	if (cx->tmp[0] && hu_rm_rf(cx->tmp, &err) < 0)
		cli_error("doctor: cannot remove scratch directory: %s", err.msg);
}

void doctor_nearest_existing(char *path)
{
	while (access(path, F_OK) < 0 && strrchr(path, '/') > path)
		*strrchr(path, '/') = '\0';
}
