/*
 * hutch doctor [--json]: what this host provides for sandboxes.
 *
 * Every check probes for real (a namespace is unshared, a mount is made, a
 * filter is loaded) instead of guessing from version numbers, because distros
 * patch, configure and disable features independently of the kernel version.
 * Anything that changes process or mount state runs in a forked child, so the
 * doctor itself ends exactly as it started; every temporary directory, group
 * and descriptor is removed again.
 *
 * Each check is a small function that fills a struct result: a status, a
 * finding and, for warn/FAIL, what is disabled by the missing piece. FAIL is
 * reserved for what a sandbox cannot start without; the exit status is 1 when
 * any check FAILs, 0 otherwise (2 for a usage error).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "daemon/config.h"
#include "daemon/fd_budget.h"
#include "daemon/host_readings.h"
#include "daemon/sbx_network.h"
#include "runtime/cgroup.h"
#include "runtime/mountapi.h"
#include "runtime/net.h"
#include "runtime/net6.h"
#include "runtime/netlink.h"
#include "runtime/sandbox.h"
#include "util/cleanup.h"
#include "util/err.h"
#include "util/fileutil.h"
#include "util/meminfo.h"

/* Debian 12's headers know Landlock ABI 2 at most; the version query itself
 * is ABI 1, so these are all the doctor needs. */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* struct clone_args up to CLONE_ARGS_SIZE_VER2 (the cgroup field), declared
 * here because <linux/sched.h> redefines what <sched.h> already has. */
struct doctor_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size,
		cgroup;
};

/*
 * The host uid the probes map to root inside their user namespaces. It lies
 * just below the first sandbox uid slot (0x40000000, runtime_internal.h), so a
 * probe never runs as the uid of a live sandbox and could never signal or
 * ptrace one of its processes.
 */
#define PROBE_UID 0x3ffffffeu
/* A probe that hangs (a wedged mount, a stuck fs) is killed after this long
 * rather than hanging the doctor. */
#define PROBE_TIMEOUT_S 10
/* The sandbox size the capacity estimate is made for, and what the host keeps. */
#define SANDBOX_MEM_MIB 512ULL
#define HOST_RESERVE_MIB 1024ULL
#define NOFILE_WANTED 65536ULL

#define TEXT_MAX 768

enum status { ST_OK, ST_WARN, ST_FAIL };

struct result {
	enum status status;
	const char *name;
	char finding[TEXT_MAX];
	char disables[TEXT_MAX]; /* "" when nothing is */
};

/* What several checks share, worked out once before the checks run. */
struct ctx {
	char tmp[PATH_MAX]; /* private scratch dir for mount probes, "" if none */
	char tmp_err[HU_ERR_MSG_MAX];
	struct hu_cgroup_env cg;
	bool cg_ok;
	char cg_err[HU_ERR_MSG_MAX];
	unsigned kmajor, kminor;
	char krelease[65];
	uint64_t swap_kib;
	const char *config_path; /* --config, NULL: what `hutch serve` reads without flags */
};

/* ---------------------------------------------------------------- text */

static void vappendf(char *buf, size_t n, const char *fmt, va_list ap)
{
	size_t used = strnlen(buf, n);
	if (used + 1 < n)
		vsnprintf(buf + used, n - used, fmt, ap);
}

static void __attribute__((format(printf, 3, 4))) appendf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vappendf(buf, n, fmt, ap);
	va_end(ap);
}

/* Add to the finding; parts are joined with "; " so one check can report
 * several facts on its single line. */
static void __attribute__((format(printf, 2, 3))) found(struct result *r, const char *fmt, ...)
{
	va_list ap;
	if (r->finding[0])
		appendf(r->finding, sizeof(r->finding), "; ");
	va_start(ap, fmt);
	vappendf(r->finding, sizeof(r->finding), fmt, ap);
	va_end(ap);
}

/* Lower the verdict to `st` (a check never improves it again) and record what
 * the missing piece disables. */
static void __attribute__((format(printf, 3, 4))) verdict(struct result *r, enum status st, const char *fmt, ...)
{
	va_list ap;
	if (st > r->status)
		r->status = st;
	if (r->disables[0])
		appendf(r->disables, sizeof(r->disables), "; ");
	va_start(ap, fmt);
	vappendf(r->disables, sizeof(r->disables), fmt, ap);
	va_end(ap);
}

/* hu_err for a failed call, worded "<call> returned EINVAL (Invalid
 * argument)": the errno name is what an operator searches for. */
static int __attribute__((format(printf, 2, 3))) probe_sys(hu_err *err, const char *fmt, ...)
{
	int e = errno ? errno : EIO;
	char what[HU_ERR_MSG_MAX];
	const char *name = strerrorname_np(e);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* a negative code stores the errno without hu_err_set appending strerror again */
	return hu_err_set(err, -e, "%s returned %s (%s)", what, name ? name : "?", strerror(e));
}

static void fmt_kib(char *buf, size_t n, uint64_t kib)
{
	if (kib >= 1024ULL * 1024)
		snprintf(buf, n, "%.1f GiB", (double)kib / (1024.0 * 1024.0));
	else
		snprintf(buf, n, "%" PRIu64 " MiB", kib / 1024);
}

static bool path_exists(const char *dir, const char *file)
{
	char p[PATH_MAX];
	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, file) >= sizeof(p))
		return false;
	return access(p, F_OK) == 0;
}

/* Whether a whitespace-separated list (cgroup.controllers, actions_avail)
 * contains `word`. */
static bool has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = list; (p = strstr(p, word)) != NULL; p += wl) {
		bool start = p == list || p[-1] == ' ' || p[-1] == '\n' || p[-1] == '\t';
		char end = p[wl];
		if (start && (end == '\0' || end == ' ' || end == '\n' || end == '\t'))
			return true;
	}
	return false;
}

/* -------------------------------------------------------------- probes */

/*
 * A probe runs in a forked child: it may unshare, mount and load filters, and
 * everything it did ends with the child. On success it may describe what it
 * saw in `info`; on failure it fills err. Both travel back over a pipe.
 */
typedef int probe_fn(void *arg, char *info, size_t n, hu_err *err);

struct probe_msg {
	int rc;
	int code;
	char text[HU_ERR_MSG_MAX];
};

static void child_guard(void)
{
	/* a probe must neither outlive the doctor nor hang it */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(PROBE_TIMEOUT_S);
}

static void child_report(int fd, probe_fn *fn, void *arg)
{
	struct probe_msg m;
	hu_err err;

	memset(&m, 0, sizeof(m));
	hu_err_clear(&err);
	m.rc = fn ? fn(arg, m.text, sizeof(m.text), &err) : 0;
	if (m.rc < 0) {
		m.code = err.code ? err.code : EIO;
		memcpy(m.text, err.msg, sizeof(m.text));
	}
	hu_write_all(fd, &m, sizeof(m));
}

static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int reap(pid_t pid)
{
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* Read a child's probe_msg, reap it and turn the outcome into rc/err. */
static int collect(int fd, pid_t pid, char *info, size_t n, hu_err *err)
{
	struct probe_msg m;
	ssize_t got = read_full(fd, &m, sizeof(m));
	int status = reap(pid);

	if (got != (ssize_t)sizeof(m)) {
		if (WIFSIGNALED(status))
			return hu_err_set(err, 0, "probe process killed by signal %d (%s)", WTERMSIG(status),
					  strsignal(WTERMSIG(status)));
		return hu_err_set(err, 0, "probe process exited with status %d without a report",
				  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	m.text[sizeof(m.text) - 1] = '\0';
	if (m.rc < 0) {
		err->code = m.code;
		memcpy(err->msg, m.text, sizeof(err->msg));
		return -1;
	}
	if (info && n)
		snprintf(info, n, "%s", m.text);
	return 0;
}

static int run_probe(probe_fn *fn, void *arg, char *info, size_t n, hu_err *err)
{
	int p[2];

	if (info && n)
		info[0] = '\0';
	if (pipe2(p, O_CLOEXEC) < 0)
		return hu_err_sys(err, "pipe");
	fflush(NULL); /* nothing buffered may be written twice */
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return hu_err_set(err, e, "fork");
	}
	if (pid == 0) {
		close(p[0]);
		child_guard();
		child_report(p[1], fn, arg);
		/* _exit: no atexit handlers, no stdio flush, no leak check of the
		 * parent's heap copy under ASan */
		_exit(0);
	}
	close(p[1]);
	int rc = collect(p[0], pid, info, n, err);
	close(p[0]);
	return rc;
}

/*
 * A child in a new user namespace (plus `flags`), with "0 PROBE_UID 1" written
 * to its uid_map and gid_map by the parent, exactly as hutch does for a
 * sandbox. userns_start() returns once the maps are written; the caller may
 * then open the namespace files under /proc/<pid>/ns; userns_finish() lets the child become root in
 * its namespace, run fn, and reports the result.
 */
struct userns_child {
	pid_t pid;
	int go;  /* parent -> child: one byte = carry on, EOF = give up */
	int res; /* child -> parent: probe_msg for the unshare, then for fn */
};

static void __attribute__((noreturn)) userns_child_main(int go, int res, int flags, probe_fn *fn, void *arg)
{
	struct probe_msg m;
	char b;

	child_guard();
	memset(&m, 0, sizeof(m));
	if (unshare(CLONE_NEWUSER | flags) < 0) {
		hu_err e;
		m.rc = probe_sys(&e, "unshare(CLONE_NEWUSER%s)", flags & CLONE_NEWNS ? "|CLONE_NEWNS" : "");
		m.code = e.code;
		memcpy(m.text, e.msg, sizeof(m.text));
		hu_write_all(res, &m, sizeof(m));
		_exit(1);
	}
	hu_write_all(res, &m, sizeof(m));
	if (read_full(go, &b, 1) != 1)
		_exit(1);
	/* Until now the child still had its host ids, which are unmapped in
	 * here; becoming ns-root (= PROBE_UID on the host) is what a sandbox
	 * does, and what makes files it creates representable. */
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
		hu_err e;
		m.rc = probe_sys(&e, "setresuid(0) in the new user namespace");
		m.code = e.code;
		memcpy(m.text, e.msg, sizeof(m.text));
		hu_write_all(res, &m, sizeof(m));
		_exit(1);
	}
	child_report(res, fn, arg);
	_exit(0);
}

static void userns_abort(struct userns_child *c)
{
	close(c->go); /* EOF makes the child exit */
	close(c->res);
	reap(c->pid);
}

static int write_map(pid_t pid, const char *file, hu_err *err)
{
	char path[64], map[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	snprintf(map, sizeof(map), "0 %u 1\n", PROBE_UID);
	if (hu_write_str(path, map, err) < 0) {
		hu_err_prefix(err, "map id 0 to host id %u", PROBE_UID);
		return -1;
	}
	return 0;
}

static int userns_start(struct userns_child *c, int flags, probe_fn *fn, void *arg, hu_err *err)
{
	int go[2], res[2];
	struct probe_msg m;

	if (pipe2(go, O_CLOEXEC) < 0)
		return hu_err_sys(err, "pipe");
	if (pipe2(res, O_CLOEXEC) < 0) {
		int e = errno;
		close(go[0]);
		close(go[1]);
		return hu_err_set(err, e, "pipe");
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(go[0]);
		close(go[1]);
		close(res[0]);
		close(res[1]);
		return hu_err_set(err, e, "fork");
	}
	if (pid == 0) {
		close(go[1]);
		close(res[0]);
		userns_child_main(go[0], res[1], flags, fn, arg);
	}
	close(go[0]);
	close(res[1]);
	c->pid = pid;
	c->go = go[1];
	c->res = res[0];
	if (read_full(c->res, &m, sizeof(m)) != (ssize_t)sizeof(m)) {
		userns_abort(c);
		return hu_err_set(err, 0, "user namespace probe process died before unsharing");
	}
	if (m.rc < 0) {
		m.text[sizeof(m.text) - 1] = '\0';
		hu_err_set(err, -m.code, "%s", m.text);
		userns_abort(c);
		return -1;
	}
	if (write_map(pid, "uid_map", err) < 0 || write_map(pid, "gid_map", err) < 0) {
		userns_abort(c);
		return -1;
	}
	return 0;
}

static int userns_finish(struct userns_child *c, char *info, size_t n, hu_err *err)
{
	char b = 1;
	int rc;

	if (hu_write_all(c->go, &b, 1) < 0) {
		rc = hu_err_sys(err, "wake the user namespace probe");
		userns_abort(c);
		return rc;
	}
	close(c->go);
	rc = collect(c->res, c->pid, info, n, err);
	close(c->res);
	return rc;
}

/* Convenience: run fn as root of a fresh, mapped user namespace. */
static int run_in_userns(int flags, probe_fn *fn, void *arg, char *info, size_t n, hu_err *err)
{
	struct userns_child c = {.pid = -1, .go = -1, .res = -1};
	if (info && n)
		info[0] = '\0';
	if (userns_start(&c, flags, fn, arg, err) < 0)
		return -1;
	return userns_finish(&c, info, n, err);
}

/* A new mount namespace must not leak mounts back to the host through shared
 * propagation (systemd makes / shared). */
static int make_mounts_private(hu_err *err)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return probe_sys(err, "mount(/, MS_REC|MS_PRIVATE)");
	return 0;
}

/* ------------------------------------------------------ check: root */

static void check_root(const struct ctx *cx, struct result *r)
{
	char status[4096];
	hu_err err;
	unsigned long long capeff = 0;
	const char *p;

	if (geteuid() != 0) {
		found(r, "running as uid %u, not root", (unsigned)geteuid());
		verdict(r, ST_FAIL, "hutch writes uid/gid maps, mounts and creates cgroups; run it (and this doctor) as root");
		return;
	}
	if (hu_read_file("/proc/self/status", status, sizeof(status), &err) >= 0 &&
	    (p = strstr(status, "\nCapEff:")) != NULL)
		capeff = strtoull(p + 8, NULL, 16);
	/* euid 0 is not enough inside a container that dropped capabilities */
	bool admin = capeff & (1ULL << 21), setuid_ = capeff & (1ULL << 7), setgid_ = capeff & (1ULL << 6);
	found(r, "euid 0; effective capabilities %#llx", capeff);
	if (!admin || !setuid_ || !setgid_) {
		found(r, "missing%s%s%s", admin ? "" : " CAP_SYS_ADMIN", setuid_ ? "" : " CAP_SETUID",
		      setgid_ ? "" : " CAP_SETGID");
		verdict(r, ST_FAIL, "root without these capabilities cannot write id maps or mount; sandboxes cannot start");
	} else {
		found(r, "CAP_SYS_ADMIN, CAP_SETUID and CAP_SETGID held");
	}
}

/* -------------------------------------------------- check: namespaces */

static int probe_userns_root(void *arg, char *info, size_t n, hu_err *err)
{
	if (getuid() != 0 || getgid() != 0)
		return hu_err_set(err, 0, "after writing uid_map the probe is uid %u, not 0", (unsigned)getuid());
	snprintf(info, n, "uid 0 inside maps to host uid %u", PROBE_UID);
	return 0;
}

static void check_userns(const struct ctx *cx, struct result *r)
{
	char buf[64], info[HU_ERR_MSG_MAX];
	hu_err err;
	long max = -1;

	if (hu_read_file("/proc/sys/user/max_user_namespaces", buf, sizeof(buf), &err) >= 0)
		max = strtol(buf, NULL, 10);
	if (max == 0) {
		found(r, "/proc/sys/user/max_user_namespaces is 0");
		verdict(r, ST_FAIL, "every sandbox needs its own user namespace; sandboxes cannot start "
				    "(set user.max_user_namespaces > 0)");
	} else if (max > 0) {
		found(r, "max_user_namespaces %ld", max);
	} else {
		found(r, "cannot read max_user_namespaces (%s)", err.msg);
	}
	if (run_in_userns(0, probe_userns_root, NULL, info, sizeof(info), &err) < 0) {
		found(r, "%s", err.msg);
		verdict(r, ST_FAIL, "sandbox root cannot be mapped to an unprivileged host uid; sandboxes cannot start");
	} else {
		found(r, "unshare(CLONE_NEWUSER) with a written uid_map works (%s)", info);
	}
}

struct ns_kind {
	int flag;
	const char *name;
	const char *why; /* what is lost without it */
};

static const struct ns_kind ns_kinds[] = {
	{CLONE_NEWPID, "pid", "sandbox processes would see and signal host processes"},
	{CLONE_NEWNS, "mount", "a sandbox cannot get its own root file system"},
	{CLONE_NEWIPC, "ipc", "sandboxes would share System V IPC and POSIX queues with the host"},
	{CLONE_NEWUTS, "uts", "a sandbox cannot have its own hostname"},
	{CLONE_NEWNET, "net", "sandboxes would share the host network"},
	{CLONE_NEWCGROUP, "cgroup", "sandboxes would see the host cgroup tree"},
};

static int probe_ns(void *arg, char *info, size_t n, hu_err *err)
{
	const struct ns_kind *k = arg;

	if (unshare(k->flag) < 0)
		return probe_sys(err, "unshare(%s namespace)", k->name);
	if (k->flag == CLONE_NEWNS)
		return make_mounts_private(err);
	if (k->flag == CLONE_NEWPID) {
		/* unshare(CLONE_NEWPID) only affects children: the first one must be pid 1 */
		pid_t pid = fork();
		if (pid < 0)
			return probe_sys(err, "fork into the new pid namespace");
		if (pid == 0)
			_exit(getpid() == 1 ? 0 : 1);
		int st = reap(pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return hu_err_set(err, 0, "first child of the new pid namespace is not pid 1");
	}
	return 0;
}

static void check_namespaces(const struct ctx *cx, struct result *r)
{
	char ok[128] = "";
	hu_err err;

	for (size_t i = 0; i < HU_ARRAY_LEN(ns_kinds); i++) {
		if (run_probe(probe_ns, (void *)&ns_kinds[i], NULL, 0, &err) < 0) {
			found(r, "%s", err.msg);
			verdict(r, ST_FAIL, "%s", ns_kinds[i].why);
		} else {
			appendf(ok, sizeof(ok), "%s%s", ok[0] ? ", " : "", ns_kinds[i].name);
		}
	}
	if (ok[0])
		found(r, "unshare works for: %s", ok);
	if (r->status == ST_FAIL)
		appendf(r->disables, sizeof(r->disables), "; sandboxes cannot start");
}

/* ------------------------------------------------ check: idmapped mounts */

static const char *fs_name(long type)
{
	switch ((unsigned long)type) {
	case 0xef53: return "ext4";
	case 0x58465342: return "xfs";
	case 0x9123683e: return "btrfs";
	case 0x01021994: return "tmpfs";
	case 0x794c7630: return "overlay";
	case 0x2fc12fc1: return "zfs";
	case 0xf2f52010: return "f2fs";
	default: return "other";
	}
}

struct idmap_arg {
	const char *path;
};

static int probe_idmap(void *arg, char *info, size_t n, hu_err *err)
{
	const struct idmap_arg *a = arg;
	struct userns_child c = {.pid = -1, .go = -1, .res = -1};
	char nspath[64];
	struct stat plain, mapped;
	struct statfs sfs;

	if (stat(a->path, &plain) < 0)
		return probe_sys(err, "stat %s", a->path);
	if (userns_start(&c, 0, NULL, NULL, err) < 0)
		return -1;
	snprintf(nspath, sizeof(nspath), "/proc/%d/ns/user", (int)c.pid);
	/* the fd keeps the user namespace alive after its only process exits */
	_cleanup_close_ int userns = open(nspath, O_RDONLY | O_CLOEXEC);
	int open_errno = errno;
	if (userns_finish(&c, NULL, 0, err) < 0)
		return -1;
	if (userns < 0) {
		errno = open_errno;
		return probe_sys(err, "open %s", nspath);
	}
	/* A detached copy of the mount: it is unmounted when the fd closes. */
	_cleanup_close_ int tree = hu_open_tree(AT_FDCWD, a->path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return probe_sys(err, "open_tree(%s, OPEN_TREE_CLONE)", a->path);
	struct hu_mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns};
	if (hu_mount_setattr(tree, "", AT_EMPTY_PATH, &attr) < 0)
		return probe_sys(err, "mount_setattr(MOUNT_ATTR_IDMAP) on %s", a->path);
	if (fstat(tree, &mapped) < 0)
		return probe_sys(err, "stat the idmapped %s", a->path);
	/* the point of the mapping: host uid 0 must show as the sandbox's root */
	if (plain.st_uid == 0 && mapped.st_uid != PROBE_UID)
		return hu_err_set(err, 0, "idmapped %s shows owner %u instead of %u", a->path, (unsigned)mapped.st_uid,
				  PROBE_UID);
	if (fstatfs(tree, &sfs) < 0)
		sfs.f_type = 0;
	snprintf(info, n, "%s (%s): owner %u shows as %u", a->path, fs_name((long)sfs.f_type),
		 (unsigned)plain.st_uid, (unsigned)mapped.st_uid);
	return 0;
}

static void check_idmap(const struct ctx *cx, struct result *r)
{
	struct hu_runtime_config cfg;
	char data[PATH_MAX], info[HU_ERR_MSG_MAX];
	hu_err err;

	/* /usr is bound into every sandbox; the templates live under the data
	 * dir, possibly on another file system, so probe that too (or its
	 * nearest existing parent when hutch has not created it yet). */
	hu_runtime_config_defaults(&cfg);
	snprintf(data, sizeof(data), "%s", cfg.data_dir);
	while (access(data, F_OK) < 0 && strrchr(data, '/') && strcmp(data, "/")) {
		char *slash = strrchr(data, '/');
		if (slash == data)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	const char *paths[] = {"/usr", data};
	for (size_t i = 0; i < HU_ARRAY_LEN(paths); i++) {
		struct idmap_arg a = {paths[i]};
		if (i == 1 && !strcmp(paths[0], paths[1]))
			break;
		if (run_probe(probe_idmap, &a, info, sizeof(info), &err) < 0) {
			/* mount_setattr failures already name the path */
			found(r, "%s%s%s", strstr(err.msg, paths[i]) ? "" : paths[i], strstr(err.msg, paths[i]) ? "" : ": ",
			      err.msg);
			verdict(r, ST_FAIL, "%s", i == 0 ? "/usr would appear owned by nobody inside sandboxes"
						   : "template files would appear owned by nobody");
		} else {
			found(r, "%s", info);
		}
	}
	if (r->status == ST_FAIL)
		appendf(r->disables, sizeof(r->disables), "; sandboxes cannot start");
}

/* ------------------------------------------------------- check: overlay */

/* Layout under one scratch directory; `lower` is on the host file system
 * (like a template), the upper layer on a size-capped tmpfs (like a sandbox's
 * writable layer). */
struct ovl_arg {
	char dir[PATH_MAX];
	bool userxattr;
};

static int mkpath(char *buf, size_t n, const char *dir, const char *sub, hu_err *err)
{
	if ((size_t)snprintf(buf, n, "%s/%s", dir, sub) >= n)
		return hu_err_set(err, ENAMETOOLONG, "%s/%s", dir, sub);
	return 0;
}

static int probe_overlay(void *arg, char *info, size_t n, hu_err *err)
{
	const struct ovl_arg *a = arg;
	char lower[PATH_MAX], upperfs[PATH_MAX], merged[PATH_MAX], upper[PATH_MAX + 8], work[PATH_MAX + 8];
	char opts[4 * PATH_MAX], file[PATH_MAX + 16], buf[32];

	if (mkpath(lower, sizeof(lower), a->dir, "lower", err) < 0 ||
	    mkpath(upperfs, sizeof(upperfs), a->dir, "upperfs", err) < 0 ||
	    mkpath(merged, sizeof(merged), a->dir, "merged", err) < 0)
		return -1;
	if (!a->userxattr && unshare(CLONE_NEWNS) < 0)
		return probe_sys(err, "unshare(CLONE_NEWNS)");
	if (make_mounts_private(err) < 0)
		return -1;
	if (mount("tmpfs", upperfs, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0755") < 0)
		return probe_sys(err, "mount tmpfs on %s", upperfs);
	snprintf(upper, sizeof(upper), "%s/upper", upperfs);
	snprintf(work, sizeof(work), "%s/work", upperfs);
	if (mkdir(upper, 0755) < 0 || mkdir(work, 0755) < 0)
		return probe_sys(err, "mkdir in %s", upperfs);
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s%s", lower, upper, work,
		 a->userxattr ? ",userxattr" : "");
	if (mount("overlay", merged, "overlay", 0, opts) < 0)
		return probe_sys(err, "mount overlay%s", a->userxattr ? " (userxattr) in a user namespace" : "");

	/* read through to the lower layer, then write: the file must land in upper */
	snprintf(file, sizeof(file), "%s/probe", merged);
	{
		_cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return probe_sys(err, "open %s through the overlay", file);
		ssize_t got = read(fd, buf, sizeof(buf) - 1);
		if (got != 6 || memcmp(buf, "hutch\n", 6))
			return hu_err_set(err, 0, "the lower layer's file reads wrong through the overlay");
	}
	snprintf(file, sizeof(file), "%s/written", merged);
	if (hu_write_file(file, "x", 1, O_CREAT | O_EXCL, 0644, err) < 0)
		return -1;
	snprintf(file, sizeof(file), "%s/written", upper);
	if (access(file, F_OK) < 0)
		return probe_sys(err, "a file written through the overlay is not in the upper layer: access %s", file);
	umount2(merged, MNT_DETACH);
	umount2(upperfs, MNT_DETACH);
	snprintf(info, n, "%s", a->userxattr ? "userxattr accepted" : "mounted");
	return 0;
}

/* Lay out lower/ (with a file), upperfs/ and merged/ under cx->tmp/<name>,
 * readable by the probe uid. */
static int ovl_prepare(const struct ctx *cx, const char *name, struct ovl_arg *a, hu_err *err)
{
	char p[PATH_MAX + 16];

	if (!cx->tmp[0])
		return hu_err_set(err, 0, "no scratch directory: %s", cx->tmp_err);
	if (mkpath(a->dir, sizeof(a->dir), cx->tmp, name, err) < 0)
		return -1;
	if (mkdir(a->dir, 0755) < 0)
		return hu_err_sys(err, "mkdir %s", a->dir);
	const char *subs[] = {"lower", "upperfs", "merged"};
	for (size_t i = 0; i < HU_ARRAY_LEN(subs); i++) {
		snprintf(p, sizeof(p), "%s/%s", a->dir, subs[i]);
		if (mkdir(p, 0755) < 0)
			return hu_err_sys(err, "mkdir %s", p);
	}
	snprintf(p, sizeof(p), "%s/lower/probe", a->dir);
	return hu_write_file(p, "hutch\n", 6, O_CREAT | O_TRUNC, 0644, err);
}

static void check_overlay(const struct ctx *cx, struct result *r)
{
	char fs[8192], info[HU_ERR_MSG_MAX];
	hu_err err;
	struct ovl_arg a = {.userxattr = false};

	/* not listed may only mean "module not loaded yet": the mount decides */
	if (hu_read_file("/proc/filesystems", fs, sizeof(fs), &err) >= 0)
		found(r, "%s /proc/filesystems", has_word(fs, "overlay") ? "listed in" : "not (yet) listed in");
	if (ovl_prepare(cx, "ovl-root", &a, &err) < 0 || run_probe(probe_overlay, &a, info, sizeof(info), &err) < 0) {
		found(r, "%s", err.msg);
		verdict(r, ST_FAIL, "sandboxes get no copy-on-write root over their template; sandboxes cannot start");
	} else {
		found(r, "a root mount of lower on disk + upper on tmpfs works, writes land in the upper layer");
	}
}

static void check_overlay_userns(const struct ctx *cx, struct result *r)
{
	char info[HU_ERR_MSG_MAX];
	hu_err err;
	struct ovl_arg a = {.userxattr = true};

	/* A sandbox's setup code mounts its root from inside its own user
	 * namespace, where trusted.* xattrs are out of reach: overlay must keep
	 * its metadata in user.* xattrs (userxattr, kernel >= 5.11). */
	if (ovl_prepare(cx, "ovl-userns", &a, &err) < 0 ||
	    run_in_userns(CLONE_NEWNS, probe_overlay, &a, info, sizeof(info), &err) < 0) {
		found(r, "%s", err.msg);
		verdict(r, ST_FAIL, "a sandbox cannot mount its own root inside its user namespace; "
				    "sandboxes cannot start");
	} else {
		found(r, "mounted inside a user namespace with userxattr (upper on tmpfs), writes land in the upper layer");
	}
}

/* --------------------------------------------------------- check: tmpfs */

static int probe_tmpfs(void *arg, char *info, size_t n, hu_err *err)
{
	const char *dir = arg;
	char file[PATH_MAX + 8];
	struct statfs sfs;
	static char chunk[64 * 1024];
	uint64_t written = 0;

	if (unshare(CLONE_NEWNS) < 0)
		return probe_sys(err, "unshare(CLONE_NEWNS)");
	if (make_mounts_private(err) < 0)
		return -1;
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=64,mode=0700") < 0)
		return probe_sys(err, "mount tmpfs -o size=1m,nr_inodes=64");
	if (statfs(dir, &sfs) < 0)
		return probe_sys(err, "statfs %s", dir);
	uint64_t bytes = (uint64_t)sfs.f_blocks * (uint64_t)sfs.f_bsize;
	if (bytes != 1024 * 1024 || sfs.f_files != 64)
		return hu_err_set(err, 0, "tmpfs reports %" PRIu64 " bytes and %" PRIu64 " inodes instead of 1 MiB and 64",
				  bytes, (uint64_t)sfs.f_files);
	/* the cap must really stop writes, not just be reported */
	snprintf(file, sizeof(file), "%s/fill", dir);
	_cleanup_close_ int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return probe_sys(err, "create %s", file);
	memset(chunk, 'x', sizeof(chunk));
	for (int i = 0; i < 64; i++) {
		ssize_t w = write(fd, chunk, sizeof(chunk));
		if (w < 0 && errno == ENOSPC)
			break;
		if (w < 0)
			return probe_sys(err, "write %s", file);
		written += (uint64_t)w;
	}
	if (written > bytes)
		return hu_err_set(err, 0, "wrote %" PRIu64 " bytes to a 1 MiB tmpfs without ENOSPC", written);
	close(hu_take_fd(&fd));
	umount2(dir, MNT_DETACH);
	snprintf(info, n, "size=1m,nr_inodes=64 honoured: writes stop with ENOSPC after %" PRIu64 " KiB", written / 1024);
	return 0;
}

static void check_tmpfs(const struct ctx *cx, struct result *r)
{
	char dir[PATH_MAX + 8], info[HU_ERR_MSG_MAX];
	hu_err err;

	if (!cx->tmp[0]) {
		found(r, "no scratch directory: %s", cx->tmp_err);
		verdict(r, ST_FAIL, "could not be checked");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/tmpfs", cx->tmp);
	if (mkdir(dir, 0700) < 0) {
		hu_err_sys(&err, "mkdir %s", dir);
		found(r, "%s", err.msg);
		verdict(r, ST_FAIL, "could not be checked");
		return;
	}
	if (run_probe(probe_tmpfs, dir, info, sizeof(info), &err) < 0) {
		found(r, "%s", err.msg);
		verdict(r, ST_FAIL, "a sandbox's writable layer cannot be size-capped; sandboxes cannot start");
	} else {
		found(r, "%s", info);
	}
}

/* ------------------------------------------------------- check: cgroups */

/* A throw-away group in the cgroup2 hierarchy: the root group never has the
 * per-group files (cgroup.freeze, cgroup.kill, memory.swap.max) to look at. */
static int cg2_probe_create(const struct ctx *cx, char *path, size_t n, hu_err *err)
{
	if ((size_t)snprintf(path, n, "%s/hutch-doctor-%d", cx->cg.v2_root, (int)getpid()) >= n)
		return hu_err_set(err, ENAMETOOLONG, "cgroup path");
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return probe_sys(err, "mkdir %s", path);
	return 0;
}

static void cg2_probe_remove(const char *path)
{
	/* a just-reaped process may keep the group busy for a moment */
	for (int i = 0; i < 100; i++) {
		if (rmdir(path) == 0 || errno != EBUSY)
			return;
		usleep(10 * 1000);
	}
}

static bool cg_fail_early(const struct ctx *cx, struct result *r)
{
	if (cx->cg_ok)
		return false;
	found(r, "no usable cgroup setup (%s)", cx->cg_err);
	verdict(r, ST_WARN, "could not be checked");
	return true;
}

static void check_cgroups(const struct ctx *cx, struct result *r)
{
	const struct hu_cgroup_env *cg = &cx->cg;
	char ctrl[1024] = "";
	hu_err err;

	if (!cx->cg_ok) {
		found(r, "%s", cx->cg_err);
		verdict(r, ST_FAIL, "no memory, pids or cpu limits can be set; sandboxes cannot start");
		return;
	}
	found(r, "mode %s", hu_cgroup_mode_name(cg->mode));
	if (cg->v2_root[0])
		found(r, "cgroup2 at %s%s", cg->v2_root, cg->mode == HU_CGROUP_HYBRID ? " (no controllers)" : "");
	if (cg->mode == HU_CGROUP_V2) {
		char p[300];
		snprintf(p, sizeof(p), "%s/cgroup.controllers", cg->v2_root);
		if (hu_read_file(p, ctrl, sizeof(ctrl), &err) < 0)
			ctrl[0] = '\0';
	}
	struct {
		const char *name;
		const char *v1;
		enum status miss;
		const char *why;
	} want[] = {
		{"memory", cg->v1_memory, ST_FAIL, "memory limits cannot be enforced"},
		{"pids", cg->v1_pids, ST_FAIL, "fork bombs cannot be contained"},
		{"cpu", cg->v1_cpu, ST_FAIL, "cpu limits cannot be enforced"},
		{"freezer", cg->v1_freezer, ST_WARN, "sandboxes cannot be paused"},
	};
	char have[128] = "";
	for (size_t i = 0; i < HU_ARRAY_LEN(want); i++) {
		bool ok;
		if (cg->mode == HU_CGROUP_V2) {
			/* v2 has no freezer controller: cgroup.freeze is core (next check) */
			if (!strcmp(want[i].name, "freezer"))
				continue;
			ok = has_word(ctrl, want[i].name);
		} else {
			ok = want[i].v1[0] != '\0';
		}
		if (ok) {
			appendf(have, sizeof(have), "%s%s", have[0] ? ", " : "", want[i].name);
		} else {
			found(r, "%s controller missing", want[i].name);
			verdict(r, want[i].miss, "%s", want[i].why);
		}
	}
	if (have[0])
		found(r, "controllers: %s", have);
	if (r->status == ST_FAIL)
		appendf(r->disables, sizeof(r->disables), "; sandboxes cannot start");
}

static void check_cg_swap(const struct ctx *cx, struct result *r)
{
	const struct hu_cgroup_env *cg = &cx->cg;
	char grp[HU_ERR_MSG_MAX];
	hu_err err;
	int have = -1; /* -1 unknown */

	if (cg_fail_early(cx, r))
		return;
	if (cg->mode != HU_CGROUP_V2) {
		if (cg->v1_memory[0]) {
			have = path_exists(cg->v1_memory, "memory.memsw.limit_in_bytes");
			found(r, "v1 memory.memsw.* %s", have ? "present" : "absent (swapaccount off?)");
		}
	} else if (cg2_probe_create(cx, grp, sizeof(grp), &err) < 0) {
		found(r, "%s", err.msg);
	} else {
		/* the file only appears when memory is enabled for the root's children */
		if (path_exists(grp, "memory.max")) {
			have = path_exists(grp, "memory.swap.max");
			found(r, "v2 memory.swap.max %s", have ? "present" : "absent");
		} else {
			found(r, "memory is not enabled in %s/cgroup.subtree_control, swap control unknown", cg->v2_root);
		}
		cg2_probe_remove(grp);
	}
	if (cx->swap_kib == 0) {
		found(r, "the host has no swap, so sandboxes cannot swap anyway");
	} else if (have != 1) {
		verdict(r, ST_WARN, "sandboxes can use swap beyond their memory limit (hutch limits swap to 0 extra)");
	}
}

static int clone_into_cgroup(const char *grp, hu_err *err)
{
	int hold[2];
	char procs[PATH_MAX], buf[4096], want[32];

	_cleanup_close_ int cgfd = open(grp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgfd < 0)
		return probe_sys(err, "open %s", grp);
	if (pipe2(hold, O_CLOEXEC) < 0)
		return probe_sys(err, "pipe");
	struct doctor_clone_args ca = {.flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t)cgfd};
	fflush(NULL);
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		/* Raw syscalls only: this child was not made by fork(), so libc and
		 * the sanitizer runtime do not know about it. It waits for EOF, so
		 * the parent can see it in the group, then exits. */
		char b;
		syscall(SYS_close, hold[1]);
		syscall(SYS_read, hold[0], &b, 1);
		syscall(SYS_exit_group, 0);
	}
	int e = errno;
	close(hold[0]);
	if (pid < 0) {
		close(hold[1]);
		errno = e;
		return probe_sys(err, "clone3(CLONE_INTO_CGROUP)");
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", grp);
	snprintf(want, sizeof(want), "%ld", pid);
	ssize_t got = hu_read_file(procs, buf, sizeof(buf), err);
	close(hold[1]);
	reap((pid_t)pid);
	if (got < 0)
		return -1;
	if (!has_word(buf, want))
		return hu_err_set(err, 0, "clone3(CLONE_INTO_CGROUP) succeeded but the child is not in %s", grp);
	return 0;
}

static void check_cg2_features(const struct ctx *cx, struct result *r)
{
	const struct hu_cgroup_env *cg = &cx->cg;
	char grp[HU_ERR_MSG_MAX];
	hu_err err;

	if (cg_fail_early(cx, r))
		return;
	if (!cg->v2_root[0]) {
		found(r, "no cgroup2 hierarchy (pure v1)");
		verdict(r, ST_WARN, "freeze falls back to the v1 freezer, kill to signalling each process, and "
				    "processes are moved into their group after they start");
		return;
	}
	if (cg2_probe_create(cx, grp, sizeof(grp), &err) < 0) {
		found(r, "%s", err.msg);
		verdict(r, ST_WARN, "could not be checked");
		return;
	}
	bool freeze = path_exists(grp, "cgroup.freeze"), kill = path_exists(grp, "cgroup.kill");
	found(r, "cgroup.freeze %s, cgroup.kill %s", freeze ? "present" : "absent (kernel < 5.2)",
	      kill ? "present" : "absent (kernel < 5.14)");
	if (!freeze)
		verdict(r, ST_WARN, "%s",
			cg->v1_freezer[0] ? "pausing uses the slower v1 freezer" : "sandboxes cannot be paused");
	if (!kill)
		verdict(r, ST_WARN, "killing a sandbox signals its processes one by one (racy against forks)");
	/* clone3 (5.3) + CLONE_INTO_CGROUP (5.7): the child starts inside its
	 * group, so no instant of it runs unlimited */
	bool new_enough = cx->kmajor > 5 || (cx->kmajor == 5 && cx->kminor >= 7);
	if (clone_into_cgroup(grp, &err) < 0) {
		found(r, "%s (kernel %u.%u%s)", err.msg, cx->kmajor, cx->kminor, new_enough ? "" : " < 5.7");
		verdict(r, ST_WARN, "processes are moved into their group after they start, briefly unlimited");
	} else {
		found(r, "clone3(CLONE_INTO_CGROUP) places a child in its group (kernel %u.%u)", cx->kmajor, cx->kminor);
	}
	cg2_probe_remove(grp);
}

static void check_psi(const struct ctx *cx, struct result *r)
{
	char buf[512];
	hu_err err;

	/* the file exists even with psi=0, but reading it then fails */
	if (hu_read_file("/proc/pressure/memory", buf, sizeof(buf), &err) < 0) {
		found(r, "%s", err.msg);
		verdict(r, ST_WARN, "no memory pressure figures for the host or sandboxes (boot with psi=1)");
		return;
	}
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	found(r, "/proc/pressure/memory readable (%s)", buf);
}

/* ------------------------------------------------------- check: seccomp */

static int probe_seccomp(void *arg, char *info, size_t n, hu_err *err)
{
	/* ERRNO action: the filtered call must fail with our errno */
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return hu_err_set(err, 0, "seccomp_init failed");
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EXDEV), SCMP_SYS(getppid), 0);
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0) {
		errno = -rc;
		return probe_sys(err, "seccomp_load of an ERRNO filter");
	}
	errno = 0;
	if (syscall(SYS_getppid) != -1 || errno != EXDEV)
		return hu_err_set(err, 0, "a filtered getppid() was not answered with the filter's errno");

	/* KILL_PROCESS action, in a grandchild that must die of SIGSYS */
	pid_t pid = fork();
	if (pid < 0)
		return probe_sys(err, "fork");
	if (pid == 0) {
		scmp_filter_ctx k = seccomp_init(SCMP_ACT_ALLOW);
		if (!k || seccomp_rule_add(k, SCMP_ACT_KILL_PROCESS, SCMP_SYS(getpid), 0) < 0 || seccomp_load(k) < 0)
			_exit(2);
		syscall(SYS_getpid);
		_exit(3);
	}
	int st = reap(pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
		return hu_err_set(err, 0, "a KILL_PROCESS filter did not kill its process (status %#x)", st);
	snprintf(info, n, "ERRNO and KILL_PROCESS filters act as loaded");
	return 0;
}

static void check_seccomp(const struct ctx *cx, struct result *r)
{
	char avail[256], info[HU_ERR_MSG_MAX];
	hu_err err;

	int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
	if (mode < 0) {
		probe_sys(&err, "prctl(PR_GET_SECCOMP)");
		found(r, "%s", err.msg);
		verdict(r, ST_FAIL, "no syscall filter for sandbox processes; sandboxes cannot start");
		return;
	}
	found(r, "PR_GET_SECCOMP %d%s", mode, mode == 2 ? " (the doctor already runs under a filter; filters stack)" : "");
	if (hu_read_file("/proc/sys/kernel/seccomp/actions_avail", avail, sizeof(avail), &err) < 0) {
		found(r, "%s", err.msg);
		verdict(r, ST_FAIL, "the kernel cannot say which filter actions it has; sandboxes cannot start");
	} else {
		bool kp = has_word(avail, "kill_process"), en = has_word(avail, "errno");
		found(r, "actions kill_process %s, errno %s", kp ? "yes" : "NO", en ? "yes" : "NO");
		if (!kp || !en)
			verdict(r, ST_FAIL, "the sandbox filter needs both actions; sandboxes cannot start");
	}
	const struct scmp_version *v = seccomp_version();
	found(r, "libseccomp %u.%u.%u (API level %u)", v->major, v->minor, v->micro, seccomp_api_get());
	if (r->status != ST_FAIL) {
		if (run_probe(probe_seccomp, NULL, info, sizeof(info), &err) < 0) {
			found(r, "%s", err.msg);
			verdict(r, ST_FAIL, "the sandbox filter would not protect anything; sandboxes cannot start");
		} else {
			found(r, "%s", info);
		}
	}
}

/* ------------------------------------------------------ check: Landlock */

static void check_landlock(const struct ctx *cx, struct result *r)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi >= 2) {
		found(r, "ABI version %ld: every sandbox is confined to its own tree", abi);
		return;
	}
	if (abi == 1) {
		found(r, "ABI version 1 cannot allow renames between directories");
		verdict(r, ST_WARN, "sandboxes run without their Landlock layer (ABI 2 or newer is needed)");
		return;
	}
	hu_err err;
	int e = errno;
	probe_sys(&err, "landlock_create_ruleset(VERSION)");
	found(r, "%s%s", err.msg,
	      e == ENOSYS ? ": kernel built without Landlock"
	      : e == EOPNOTSUPP ? ": Landlock is not enabled (add it to lsm= on the kernel command line)"
				: "");
	verdict(r, ST_WARN, "sandboxes run without their Landlock layer (confinement of every sandbox process to "
			    "the sandbox's own tree; ABI 2 or newer is needed)");
}

/* -------------------------------------------------------- check: memory */

static uint64_t meminfo_kib(const char *buf, const char *key, bool *ok)
{
	const char *p = strstr(buf, key);
	*ok = p != NULL;
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static void check_memory(const struct ctx *cx, struct result *r)
{
	char buf[8192], t[32], a[32], s[32];
	hu_err err;
	bool ok_total, ok_avail, ok_swap;

	if (hu_read_file("/proc/meminfo", buf, sizeof(buf), &err) < 0) {
		found(r, "%s", err.msg);
		verdict(r, ST_WARN, "could not be checked");
		return;
	}
	uint64_t total = meminfo_kib(buf, "MemTotal:", &ok_total);
	uint64_t avail = meminfo_kib(buf, "MemAvailable:", &ok_avail);
	uint64_t swap = meminfo_kib(buf, "SwapTotal:", &ok_swap);
	if (!ok_avail)
		avail = meminfo_kib(buf, "MemFree:", &ok_avail);
	fmt_kib(t, sizeof(t), total);
	fmt_kib(a, sizeof(a), avail);
	fmt_kib(s, sizeof(s), swap);
	found(r, "MemTotal %s, MemAvailable %s", t, a);
	if (swap == 0)
		found(r, "no swap (memory limits are hard: a sandbox at its limit is OOM-killed, never swapped)");
	else
		found(r, "swap %s", s);
	uint64_t reserve = HOST_RESERVE_MIB * 1024, each = SANDBOX_MEM_MIB * 1024;
	uint64_t fit = avail > reserve ? (avail - reserve) / each : 0;
	char keep[32];
	fmt_kib(keep, sizeof(keep), reserve);
	found(r, "room for about %" PRIu64 " sandboxes of %llu MiB (MemAvailable less %s kept for the host)", fit,
	      SANDBOX_MEM_MIB, keep);
	if (fit == 0)
		verdict(r, ST_WARN, "not even one default-sized sandbox fits; smaller limits or more memory are needed");
}

/* -------------------------------------------------- check: resource floor */

#define FLOOR_SANDBOXES 32
#define UID_SLOTS 16384 /* idrange: 2^30 + slot * 65536 below 2^32 */

static uint64_t mem_available_kib(void)
{
	uint64_t total, avail;
	hu_err err;

	return hu_meminfo(&total, &avail, &err) == 0 ? avail / 1024 : 0;
}

/* Measured, not assumed (design.md: verify the floor yourself): start
 * FLOOR_SANDBOXES real sandboxes in a scratch run dir, see what the host
 * gives up for them, and derive how many idle ones fit. */
static void check_floor(const struct ctx *cx, struct result *r)
{
	struct hu_runtime_config rc;
	struct hu_runtime *rt = NULL;
	struct hu_sandbox *sb[FLOOR_SANDBOXES] = {NULL};
	uint64_t charged = 0, before, after;
	int made = 0;
	hu_err err;

	if (!cx->tmp[0] || !cx->cg_ok || geteuid() != 0) {
		verdict(r, ST_WARN, "not measured (needs root, cgroups and a scratch directory)");
		return;
	}
	hu_runtime_config_defaults(&rc);
	snprintf(rc.data_dir, sizeof(rc.data_dir), "%s/floor-data", cx->tmp);
	snprintf(rc.run_dir, sizeof(rc.run_dir), "%s/floor-run", cx->tmp);
	snprintf(rc.cgroup_parent, sizeof(rc.cgroup_parent), "hutch-doctor-%d", (int)getpid());
	if (hu_runtime_open(&rc, &rt, &err) < 0 || hu_template_ensure_base(rt, &err) < 0) {
		found(r, "%s", err.msg);
		verdict(r, ST_FAIL, "no sandbox can be created here");
		hu_runtime_close(rt);
		return;
	}
	before = mem_available_kib();
	for (; made < FLOOR_SANDBOXES; made++) {
		struct hu_sandbox_spec spec;
		hu_sandbox_spec_defaults(&spec);
		snprintf(spec.id, sizeof(spec.id), "doctor-floor-%d", made);
		if (hu_sandbox_create(rt, &spec, &sb[made], &err) < 0)
			break;
	}
	usleep(200 * 1000); /* let the inits settle */
	after = mem_available_kib();
	for (int i = 0; i < made; i++) {
		struct hu_cgroup_stats st;
		uint64_t disk;
		hu_err e;
		if (hu_sandbox_stats(sb[i], &st, &disk, &e) == 0)
			charged += st.memory_bytes;
	}
	for (int i = 0; i < made; i++)
		hu_sandbox_destroy(sb[i], &err);
	hu_runtime_close(rt);
	/* the parent group the runtime keeps for concurrent creators */
	const struct hu_cgroup_env *env = &cx->cg;
	const char *roots[] = {env->v2_root, env->v1_memory, env->v1_pids, env->v1_cpu, env->v1_cpuacct, env->v1_freezer};
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		char grp[PATH_MAX + 80];
		if (roots[i][0] && snprintf(grp, sizeof(grp), "%s/%s", roots[i], rc.cgroup_parent) < (int)sizeof(grp))
			rmdir(grp);
	}
	if (made < FLOOR_SANDBOXES) {
		found(r, "sandbox %d of %d: %s", made + 1, FLOOR_SANDBOXES, err.msg);
		verdict(r, ST_FAIL, "sandboxes cannot be created here");
		return;
	}
	uint64_t host_kib = before > after ? (before - after) / FLOOR_SANDBOXES : 0;
	uint64_t cg_kib = charged / 1024 / FLOOR_SANDBOXES;
	uint64_t each = host_kib > cg_kib ? host_kib : cg_kib;
	found(r, "an idle sandbox (hutch-init only) costs the host about %.2f MiB (MemAvailable over %d sandboxes; "
		 "noisy on a busy host), %.2f MiB of it charged to its memory cgroup", host_kib / 1024.0, FLOOR_SANDBOXES,
	      cg_kib / 1024.0);
	if (each < 256)
		each = 256; /* below the noise: count at least the kernel's per-sandbox objects */
	uint64_t reserve = HOST_RESERVE_MIB * 1024;
	/* the daemon's own reading, so that doctor counts what admission counts */
	struct hu_host_readings host;
	uint64_t pid_max = hu_host_readings(&host, &err) == 0 ? host.pid_max : 0;
	if (pid_max > 4096) {
		uint64_t by_pids = (pid_max - 4096) / 512;
		found(r, "kernel.pid_max %" PRIu64 ": admission control allows %" PRIu64 " sandboxes of 512 pids%s", pid_max,
		      by_pids, by_pids < 1000 ? " (raise kernel.pid_max for more)" : "");
		if (by_pids < 100)
			verdict(r, ST_WARN, "kernel.pid_max limits this host to %" PRIu64 " default sandboxes", by_pids);
	}
	if (after > reserve) {
		uint64_t fit = (after - reserve) / each;
		found(r, "about %" PRIu64 " idle sandboxes fit in MemAvailable less %llu MiB for the host%s; what their "
			 "processes use comes on top", fit < UID_SLOTS ? fit : UID_SLOTS, HOST_RESERVE_MIB,
		      fit < UID_SLOTS ? "" : " (capped by the 16384 uid ranges)");
	}
}

/* -------------------------------------------------- check: descriptors */

static void check_nofile(const struct ctx *cx, struct result *r)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		hu_err err;
		probe_sys(&err, "getrlimit(RLIMIT_NOFILE)");
		found(r, "%s", err.msg);
		verdict(r, ST_WARN, "could not be checked");
		return;
	}
	char soft[32], hard[32];
	snprintf(soft, sizeof(soft), rl.rlim_cur == RLIM_INFINITY ? "unlimited" : "%llu", (unsigned long long)rl.rlim_cur);
	snprintf(hard, sizeof(hard), rl.rlim_max == RLIM_INFINITY ? "unlimited" : "%llu", (unsigned long long)rl.rlim_max);
	found(r, "RLIMIT_NOFILE soft %s, hard %s", soft, hard);
	/* hutch serve raises its soft limit to the hard one; admission then
	 * refuses creates beyond this (fd_budget.h) */
	if (rl.rlim_max != RLIM_INFINITY)
		found(r, "hutch serve would admit about %llu sandboxes by descriptors (2 each, plus a reserve)",
		      (unsigned long long)hu_fd_sandboxes_allowed(HU_FD_BASE_TYPICAL, rl.rlim_max));
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < NOFILE_WANTED)
		verdict(r, ST_WARN,
			"admission refuses creates beyond that count "
			"(raise the hard limit to %llu: LimitNOFILE= or limits.conf)",
			NOFILE_WANTED);
}

/* ------------------------------------------------ check: capped volumes */

/* A capped volume is an ext4 image on a loop device (src/daemon/volumes.c):
 * it needs /dev/loop-control and mkfs.ext4. Uncapped volumes need neither. */
static void check_volumes(const struct ctx *cx, struct result *r)
{
	int fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	bool mkfs = access("/usr/sbin/mkfs.ext4", X_OK) == 0 || access("/sbin/mkfs.ext4", X_OK) == 0;

	if (fd >= 0) {
		found(r, "/dev/loop-control usable");
		close(fd);
	} else {
		hu_err err;
		probe_sys(&err, "open(/dev/loop-control)");
		found(r, "%s", err.msg);
	}
	found(r, mkfs ? "mkfs.ext4 present" : "mkfs.ext4 missing (e2fsprogs)");
	if (fd < 0 || !mkfs)
		verdict(r, ST_WARN, "volumes with a size cap cannot be created (uncapped volumes work)");
}

/* ------------------------------------------------ check: writable layers */

/* Which backend holds the sandboxes' writable layers, and why: decided as
 * hu_runtime_open decides it for the configured data dir (or the nearest
 * directory that exists, for a data dir not made yet). Makes nothing. */
static void check_storage(const struct ctx *cx, struct result *r)
{
	char *args[] = {"doctor", "--config", (char *)cx->config_path, NULL};
	struct hu_config cfg;
	struct hu_runtime_config rc;
	struct hu_storage_info info;
	hu_err err;

	hu_runtime_config_defaults(&rc);
	if (hu_config_from_args(&cfg, cx->config_path ? 3 : 1, args, &err) == 0)
		snprintf(rc.data_dir, sizeof(rc.data_dir), "%s", cfg.data_dir);
	while (access(rc.data_dir, F_OK) < 0 && strrchr(rc.data_dir, '/') > rc.data_dir)
		*strrchr(rc.data_dir, '/') = '\0';
	if (hu_storage_probe(&rc, &info, &err) < 0) {
		found(r, "%s", err.msg);
		verdict(r, ST_FAIL, "sandboxes cannot start");
		return;
	}
	found(r, "%s on btrfs, a subvolume and quota group per sandbox: %s", info.backend, info.reason);
	if (info.ready) {
		found(r, "%s is up (%s quotas)", info.root, info.quota);
		return;
	}
	bool mkfs = access("/usr/sbin/mkfs.btrfs", X_OK) == 0 || access("/sbin/mkfs.btrfs", X_OK) == 0;
	bool loop = access("/dev/loop-control", R_OK | W_OK) == 0;
	found(r, "%s is %s at the first start: mkfs.btrfs %s, /dev/loop-control %s", info.image,
	      access(info.image, F_OK) == 0 ? "mounted" : "made", mkfs ? "present" : "missing (btrfs-progs)",
	      loop ? "usable" : "unusable");
	if (!mkfs || !loop)
		verdict(r, ST_FAIL, "the layers image cannot be made; sandboxes cannot start");
}

/* -------------------------------------------------------- check: kernel */

static void check_kernel(const struct ctx *cx, struct result *r)
{
	found(r, "Linux %s", cx->krelease);
	long fd = syscall(SYS_pidfd_open, (long)getpid(), 0L);
	if (fd < 0) {
		hu_err err;
		probe_sys(&err, "pidfd_open");
		found(r, "%s", err.msg);
		verdict(r, ST_FAIL, "the daemon cannot watch sandbox init processes race-free; sandboxes cannot start");
		return;
	}
	close((int)fd);
	found(r, "pidfd_open works");
}

/* ---------------------------------------------------------- check: IPv6 */

/* The host's IPv6 way out: the configured uplinks, else the interface of
 * the IPv6 default route ("" when there is none). */
static void ipv6_way_out(const struct hu_net_config *net, struct result *r, char ifname[IF_NAMESIZE])
{
	struct hu_nl nl;
	hu_err err;
	int index;

	ifname[0] = '\0';
	if (net->n_uplinks) {
		snprintf(ifname, IF_NAMESIZE, "%s", net->uplinks[0]);
		found(r, "network_uplink %s%s", net->uplinks[0], net->n_uplinks > 1 ? " (and more)" : "");
		return;
	}
	if (hu_nl_open(&nl, &err) < 0) {
		found(r, "routes: %s", err.msg);
		return;
	}
	if (hu_nl_default_oif6(&nl, &index, &err) == 0 && if_indextoname((unsigned)index, ifname))
		found(r, "IPv6 default route via %s", ifname);
	else
		found(r, "no IPv6 default route");
	hu_nl_close(&nl);
}

/* Whether sandboxes get IPv6, decided as `hutch serve` decides it at start
 * (net6.c: a pool, an IPv6 way out, a way to forward) from the
 * configuration it would read. Reads routes and /proc/sys; never writes. */
static void check_ipv6(const struct ctx *cx, struct result *r)
{
	char *args[] = {"doctor", "--config", (char *)cx->config_path, NULL};
	struct hu_config cfg;
	struct hu_runtime_config rc;
	struct hu_net_config net;
	char ifname[IF_NAMESIZE], pool[HU_CIDR6_TEXT];
	hu_err err;

	if (access("/proc/sys/net/ipv6", F_OK) < 0) {
		found(r, "IPv6 is disabled on this host (no /proc/sys/net/ipv6)");
		found(r, "sandboxes get no IPv6");
		return;
	}
	if (hu_config_from_args(&cfg, cx->config_path ? 3 : 1, args, &err) < 0) {
		found(r, "configuration: %s", err.msg);
		verdict(r, ST_WARN, "could not be checked (the daemon would not start with this configuration)");
		return;
	}
	hu_runtime_config_defaults(&rc);
	hu_daemon_net_config(&cfg, &rc);
	if (hu_net_config_parse(&net, rc.net_mode, rc.net_name, rc.net_pool, rc.net_dns, rc.net_uplinks, rc.net_allow,
				rc.net_deny, &err) < 0 ||
	    hu_net_pool6_parse(&net, rc.net_pool6, &err) < 0) {
		found(r, "network configuration: %s", err.msg);
		verdict(r, ST_WARN, "could not be checked (the daemon would not start with this configuration)");
		return;
	}
	ipv6_way_out(&net, r, ifname);
	/* lo stands in when there is no way out: force_forwarding is per
	 * interface, and every interface has it on a kernel that has it */
	const char *fwd = hu_net6_forwarding(ifname[0] ? ifname : "lo");
	found(r, "%s", fwd ? fwd : "net.ipv6.conf.all.forwarding off and no per-interface force_forwarding (Linux < 6.17)");
	if (net.has_pool6) {
		hu_cidr6_format(&net.pool6, pool, sizeof(pool));
		found(r, "network_pool6 %s", pool);
	} else {
		found(r, "network_pool6 none");
	}
	if (net.mode != HU_NET_NAT) {
		found(r, "network none: sandboxes have no network, so no IPv6");
		return;
	}
	if (!net.has_pool6) {
		found(r, "sandboxes get no IPv6 (turned off by network_pool6)");
		return;
	}
	if (hu_net6_plan(&net, &err) < 0) {
		found(r, "%s", err.msg);
		verdict(r, ST_WARN, "could not be checked");
		return;
	}
	if (net.v6) {
		found(r, "sandboxes with internet access get IPv6");
		return;
	}
	found(r, "sandboxes get no IPv6");
	verdict(r, ST_WARN, "sandboxes get IPv4 only: %s", net.v6_off);
}

/* -------------------------------------------------------------- table */

typedef void check_fn(const struct ctx *cx, struct result *r);

static const struct {
	const char *name;
	check_fn *fn;
} checks[] = {
	{"running as root", check_root},
	{"user namespaces", check_userns},
	{"namespaces", check_namespaces},
	{"idmapped mounts", check_idmap},
	{"overlayfs", check_overlay},
	{"overlay in user namespace", check_overlay_userns},
	{"tmpfs size limit", check_tmpfs},
	{"cgroups", check_cgroups},
	{"cgroup swap accounting", check_cg_swap},
	{"cgroup2 freeze/kill/clone3", check_cg2_features},
	{"pressure stall info", check_psi},
	{"seccomp", check_seccomp},
	{"Landlock", check_landlock},
	{"memory", check_memory},
	{"resource floor", check_floor},
	{"file descriptors", check_nofile},
	{"capped volumes", check_volumes},
	{"writable layers", check_storage},
	{"IPv6", check_ipv6},
	{"kernel", check_kernel},
};

static void ctx_init(struct ctx *cx)
{
	hu_err err;
	struct utsname u;
	char buf[8192];
	bool ok;

	memset(cx, 0, sizeof(*cx));
	/* 0755 so the probe uid inside a user namespace can reach the layers */
	snprintf(cx->tmp, sizeof(cx->tmp), "/tmp/hutch-doctor-XXXXXX");
	if (!mkdtemp(cx->tmp) || chmod(cx->tmp, 0755) < 0) {
		hu_err_sys(&err, "mkdtemp /tmp/hutch-doctor-XXXXXX");
		snprintf(cx->tmp_err, sizeof(cx->tmp_err), "%s", err.msg);
		if (cx->tmp[0] && strcmp(cx->tmp, "/tmp/hutch-doctor-XXXXXX"))
			rmdir(cx->tmp);
		cx->tmp[0] = '\0';
	}
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
		cx->swap_kib = meminfo_kib(buf, "SwapTotal:", &ok);
}

static void ctx_fini(struct ctx *cx)
{
	hu_err err;
	/* every probe mount lived in a child's mount namespace, so this only
	 * removes plain directories on the host */
	if (cx->tmp[0] && hu_rm_rf(cx->tmp, &err) < 0)
		cli_error("doctor: cannot remove scratch directory: %s", err.msg);
}

/* --------------------------------------------------------------- output */

static const char *status_word(enum status s, bool json)
{
	switch (s) {
	case ST_OK: return "ok";
	case ST_WARN: return "warn";
	default: return json ? "fail" : "FAIL";
	}
}

/* Length of the valid UTF-8 sequence at p, 0 if invalid: JSON must be UTF-8,
 * and findings quote kernel and file-system text the doctor does not control. */
static size_t utf8_seq(const unsigned char *p)
{
	size_t len;
	uint32_t cp;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

static void json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	while (*p) {
		if (*p == '"' || *p == '\\') {
			putchar('\\');
			putchar(*p++);
		} else if (*p < 0x20 || *p == 0x7f) {
			printf("\\u%04x", *p++);
		} else if (*p < 0x80) {
			putchar(*p++);
		} else {
			size_t len = utf8_seq(p);
			if (len == 0) {
				fputs("\\ufffd", stdout);
				p++;
			} else {
				fwrite(p, 1, len, stdout);
				p += len;
			}
		}
	}
	putchar('"');
}

static void print_text(const struct result *res, size_t n, const int count[3])
{
	for (size_t i = 0; i < n; i++) {
		const struct result *r = &res[i];
		printf("%-4s %s: %s", status_word(r->status, false), r->name, r->finding);
		if (r->status != ST_OK && r->disables[0])
			printf(" \u2014 %s", r->disables);
		putchar('\n');
	}
	printf("\n%d ok, %d warn, %d FAIL: %s\n", count[ST_OK], count[ST_WARN], count[ST_FAIL],
	       count[ST_FAIL] ? "sandboxes cannot run on this host until every FAIL is fixed"
			      : "this host can run hutch sandboxes");
}

static void print_json(const struct result *res, size_t n, const int count[3])
{
	printf("{\n  \"ok\": %s,\n  \"summary\": {\"ok\": %d, \"warn\": %d, \"fail\": %d},\n  \"checks\": [",
	       count[ST_FAIL] ? "false" : "true", count[ST_OK], count[ST_WARN], count[ST_FAIL]);
	for (size_t i = 0; i < n; i++) {
		const struct result *r = &res[i];
		printf("%s\n    {\"name\": ", i ? "," : "");
		json_str(r->name);
		printf(", \"status\": \"%s\", \"finding\": ", status_word(r->status, true));
		json_str(r->finding);
		fputs(", \"disables\": ", stdout);
		if (r->status != ST_OK && r->disables[0])
			json_str(r->disables);
		else
			fputs("null", stdout);
		putchar('}');
	}
	printf("\n  ]\n}\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: hutch doctor [--json] [--config FILE]\n\n"
		   "Check what this host provides for sandboxes (run as root). Each line is\n"
		   "ok, warn or FAIL; FAIL means sandboxes cannot start. Exit status 0 when\n"
		   "nothing FAILs, 1 otherwise.\n\n"
		   "  --json          print the results as one JSON object\n"
		   "  --config FILE   the configuration `hutch serve` uses (for the IPv6 check;\n"
		   "                  default: what `hutch serve` reads without flags)\n");
}

int cmd_doctor(int argc, char **argv)
{
	bool json = false;
	const char *config_path = NULL;
	struct ctx cx;
	int count[3] = {0, 0, 0};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--config") && i + 1 < argc) {
			config_path = argv[++i];
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			cli_error("doctor: unknown %s '%s' (usage: hutch doctor [--json] [--config FILE])",
				  argv[i][0] == '-' ? "option" : "argument", argv[i]);
			return 2;
		}
	}

	struct result *res = calloc(HU_ARRAY_LEN(checks), sizeof(*res));
	if (!res) {
		cli_error("doctor: out of memory");
		return 1;
	}
	ctx_init(&cx);
	cx.config_path = config_path;
	for (size_t i = 0; i < HU_ARRAY_LEN(checks); i++) {
		res[i].status = ST_OK;
		res[i].name = checks[i].name;
		checks[i].fn(&cx, &res[i]);
		count[res[i].status]++;
	}
	ctx_fini(&cx);
	if (json)
		print_json(res, HU_ARRAY_LEN(checks), count);
	else
		print_text(res, HU_ARRAY_LEN(checks), count);
	free(res);
	fflush(stdout);
	return count[ST_FAIL] ? 1 : 0;
}
