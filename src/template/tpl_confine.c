/*
 * The template builder's confinement (template.h). A build unpacks archives
 * that API clients upload, with libarchive and the decompressors, as host
 * root (it must give files the owners 0 and 1000). A bug in any of those
 * must not hand the host to an uploaded file, so before it reads a byte the
 * builder gives up everything it does not need:
 *
 * - the network: an empty network namespace of its own;
 * - privileges: no_new_privs, and of root's capabilities only those that
 *   writing a tree of files with chosen owners and modes takes;
 * - the file system: Landlock, all rights beneath the templates directory
 *   (the upload is inside it) and read/execute beneath /usr (libraries and
 *   character-set modules), nothing elsewhere; no signals or abstract
 *   sockets outside itself (ABI 6);
 * - the kernel surface: the sandboxes' seccomp filter (no mounts, no
 *   namespaces, no ptrace, no bpf, no module loading).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "runtime/caps.h"
#include "runtime/landlock.h"
#include "runtime/seccomp.h"
#include "template/template.h"
#include "util/cleanup.h"

#define BIT(c) (1ULL << (c))

int hu_tpl_confine_builder(const char *templates_dir, hu_err *err)
{
	const uint64_t keep = BIT(CAP_CHOWN) | BIT(CAP_DAC_OVERRIDE) | BIT(CAP_DAC_READ_SEARCH) | BIT(CAP_FOWNER);

	_cleanup_close_ int dir = open(templates_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int usr = open("/usr", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0 || usr < 0)
		return hu_err_sys(err, "open %s", dir < 0 ? templates_dir : "/usr");
	if (unshare(CLONE_NEWNET) < 0)
		return hu_err_sys(err, "unshare the network");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return hu_err_sys(err, "no_new_privs");
	if (hu_caps_drop_to(keep, err) < 0)
		return -1;
	const struct hu_landlock_rule rules[] = {
		{.dirfd = dir, .read_only = false},
		{.dirfd = usr, .read_only = true},
	};
	if (hu_landlock_confine(rules, sizeof(rules) / sizeof(rules[0]), err) < 0)
		return -1;
	return hu_seccomp_load(err);
}
