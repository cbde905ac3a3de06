/*
 * The template builder's confinement (template.h). A build unpacks archives
 * that API clients upload, with libarchive and the decompressors, as host
 * root (it must give files the owners 0 and 1000). A bug in any of those
 * must not hand the host to an uploaded file, so before it reads a byte the
 * builder (hutch-build, started by the daemon through runtime/helper.h in
 * fresh PID, network and IPC namespaces, with only its own descriptors)
 * gives up everything it does not need:
 *
 * - the network: an empty network namespace of its own (again, for callers
 *   that did not start it in one), and no socket of any family at all, so a
 *   path socket of the host (which Landlock does not cover) cannot be
 *   reached either;
 * - privileges: no_new_privs, and of root's capabilities only those that
 *   writing a tree of files with chosen owners and modes takes;
 * - the file system: Landlock, all rights beneath its own build root and
 *   read/execute beneath /usr (libraries and character-set modules),
 *   nothing elsewhere; no signals or abstract sockets outside itself
 *   (ABI 6);
 * - the kernel surface: the sandboxes' seccomp filter (no mounts, no
 *   namespaces, no ptrace, no bpf, no module loading).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "runtime/caps.h"
#include "runtime/landlock.h"
#include "runtime/seccomp.h"
#include "template/template.h"
#include "util/cleanup.h"

#define BIT(c) (1ULL << (c))

/* socket() and socketpair() fail with EPERM: a build needs neither. */
static int deny_sockets(hu_err *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc;

	if (!ctx)
		return hu_err_set(err, ENOMEM, "seccomp_init");
	rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 0);
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 0);
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0)
		return hu_err_set(err, -rc, "seccomp: deny sockets");
	return 0;
}

int hu_tpl_confine_builder(int root_fd, hu_err *err)
{
	const uint64_t keep = BIT(CAP_CHOWN) | BIT(CAP_DAC_OVERRIDE) | BIT(CAP_DAC_READ_SEARCH) | BIT(CAP_FOWNER);

	_cleanup_close_ int usr = open("/usr", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (usr < 0)
		return hu_err_sys(err, "open /usr");
	if (unshare(CLONE_NEWNET) < 0)
		return hu_err_sys(err, "unshare the network");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return hu_err_sys(err, "no_new_privs");
	if (hu_caps_drop_to(keep, err) < 0)
		return -1;
	const struct hu_landlock_rule rules[] = {
		{.dirfd = root_fd, .read_only = false},
		{.dirfd = usr, .read_only = true},
	};
	if (hu_landlock_confine(rules, sizeof(rules) / sizeof(rules[0]), err) < 0)
		return -1;
	if (deny_sockets(err) < 0)
		return -1;
	return hu_seccomp_load(err);
}
