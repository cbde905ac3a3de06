/*
 * hutch-build, the template builder the daemon starts for POST /templates
 * (runtime/helper.h starts it; src/template/builder/main.c is it). It is
 * given three descriptors and nothing else:
 *
 *   3  a pipe: it writes one struct hu_tpl_verdict and exits
 *   4  the uploaded archive (read only)
 *   5  the empty rootfs directory of the build (everything it may write)
 *
 * The daemon made the build directory around that rootfs and writes the
 * template's description and renames it into place itself, after the
 * builder has gone: the builder never sees the templates directory.
 */
#ifndef HUTCH_TEMPLATE_BUILDER_H
#define HUTCH_TEMPLATE_BUILDER_H

#include <stdint.h>

#include "template/template.h"
#include "util/err.h"

#define HU_BUILDER_VERDICT_FD 3
#define HU_BUILDER_ARCHIVE_FD 4
#define HU_BUILDER_ROOT_FD 5

/* argv[1]: what to do. "tar" unpacks fd 4 into fd 5 and fixes the tree up
 * (hu_tpl_fixup). Test builds (HU_TEST_HOOKS) also know "probe": after
 * confinement it tries what a compromised builder would (argv[2..]: the
 * daemon's TCP port, its database file, a sandbox's init socket, a path
 * outside the root to create, the daemon's pid) and reports in msg. */
struct hu_tpl_verdict {
	int32_t code; /* 0 = built, else a positive errno */
	uint32_t pad;
	uint64_t bytes, files;
	char msg[HU_ERR_MSG_MAX];
};

/* Limits of the builder's own cgroup. */
#define HU_BUILDER_MEMORY_BYTES (1024ULL << 20)
#define HU_BUILDER_PIDS 16
#define HU_BUILDER_CPU_MILLIS 1000

#endif
