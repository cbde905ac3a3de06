/*
 * hutch-init's setup stage, the first thing the sandbox's PID 1 runs. The
 * runtime cloned it into fresh namespaces and it executed hutch-init at once
 * (so it never held a copy of the daemon's memory). Here it waits for the
 * parent to write its uid/gid maps and hand over the idmapped mounts and the
 * compiled seccomp program, then builds the root filesystem, pivots into it
 * and locks itself down (no_new_privs, seccomp).
 *
 * It runs as root of its own user namespace, i.e. as the sandbox's
 * unprivileged host uid: nothing here can touch what the host has not handed
 * it. Failures are reported to the parent over the sync socket; success is
 * the socket being closed.
 */
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/mountapi.h"
#include "runtime/sandbox_internal.h"
#include "runtime/landlock.h"
#include "runtime/seccomp.h"
#include <linux/filter.h>
#include "util/cleanup.h"
#include "util/fdpass.h"
#include "util/fileutil.h"

static __attribute__((noreturn)) void report(int sync_fd, const hu_err *err)
{
	struct hu_child_report r = {.code = err->code};
	snprintf(r.msg, sizeof(r.msg), "%s", err->msg);
	(void)!send(sync_fd, &r, sizeof(r), MSG_NOSIGNAL);
	_exit(1);
}

static int path_in(char *buf, size_t n, const char *a, const char *b, hu_err *err)
{
	if ((size_t)snprintf(buf, n, "%s/%s", a, b) >= n)
		return hu_err_set(err, ENAMETOOLONG, "path %s/%s", a, b);
	return 0;
}

static int do_mount(const char *src, const char *dst, const char *type, unsigned long flags, const char *data,
		    hu_err *err)
{
	if (mount(src, dst, type, flags, data) < 0)
		return hu_err_sys(err, "mount %s on %s", type ? type : src ? src : "(remount)", dst);
	return 0;
}

static int loopback_up(hu_err *err)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;

	if (s < 0)
		return hu_err_sys(err, "socket");
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0 || (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr) < 0)) {
		close(s);
		return hu_err_sys(err, "bring up lo");
	}
	close(s);
	return 0;
}

/* ptys one sandbox may hold at once (its devpts instance's max=) */
#define HU_SANDBOX_PTYS_MAX 128
#define HU_STR_(x) #x
#define HU_STR(x) HU_STR_(x)

/* /dev: a small tmpfs with the harmless host character devices bound in,
 * a private devpts instance (ptys of this sandbox only) and a /dev/shm. */
static int setup_dev(const char *root, uint64_t shm_bytes, hu_err *err)
{
	static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
	static const char *const links[][2] = {
		{"pts/ptmx", "ptmx"}, {"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"},
		{"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}, {"/proc/kcore", "core"},
	};
	char dev[PATH_MAX], p[PATH_MAX], host[64], opts[96];

	if (path_in(dev, sizeof(dev), root, "dev", err) < 0 ||
	    do_mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=65536,nr_inodes=128", err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		if (path_in(p, sizeof(p), dev, nodes[i], err) < 0)
			return -1;
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0)
			return hu_err_sys(err, "create %s", p);
		close(fd);
		snprintf(host, sizeof(host), "/dev/%s", nodes[i]);
		if (do_mount(host, p, NULL, MS_BIND, NULL, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		if (i == 5)
			continue; /* no /dev/core: nothing should read kernel memory */
		if (path_in(p, sizeof(p), dev, links[i][1], err) < 0)
			return -1;
		if (symlink(links[i][0], p) < 0)
			return hu_err_sys(err, "symlink %s", p);
	}
	if (path_in(p, sizeof(p), dev, "pts", err) < 0)
		return -1;
	/* max: the kernel counts ptys host-wide (kernel.pty.max, 4096 by
	 * default, of which every devpts instance but the host's own shares
	 * all but the 1024 reserved), so without a cap of its own one sandbox
	 * could take every pty of every other sandbox. */
	if (mkdir(p, 0755) < 0 ||
	    do_mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC,
		     "newinstance,ptmxmode=0666,mode=0620,max=" HU_STR(HU_SANDBOX_PTYS_MAX), err) < 0)
		return err->code ? -1 : hu_err_sys(err, "mkdir %s", p);
	if (path_in(p, sizeof(p), dev, "shm", err) < 0)
		return -1;
	snprintf(opts, sizeof(opts), "mode=1777,size=%llu", (unsigned long long)shm_bytes);
	if (mkdir(p, 01777) < 0 || do_mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, opts, err) < 0)
		return err->code ? -1 : hu_err_sys(err, "mkdir %s", p);
	return 0;
}

/* Every start of a sandbox's init is a boot: /proc/sys/kernel/random/boot_id
 * is a fresh random UUID (a read-only file bound over the host's), so code
 * inside can tell a cold boot (a resume after a memory release) from a
 * thaw, and never learns the host's boot id. The file lives at the root of
 * a tiny tmpfs of this mount namespace, mounted on <layer>/bootid: the bind
 * then shows only "/boot_id" in the sandbox's mountinfo, nothing of the
 * layers' file system. */
static int own_boot_id(hu_err *err)
{
	uint8_t b[16];
	char text[40];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return hu_err_sys(err, "getrandom");
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	snprintf(text, sizeof(text), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	if (mkdir("bootid", 0700) < 0 && errno != EEXIST)
		return hu_err_sys(err, "mkdir bootid");
	if (do_mount("hutch-boot", "bootid", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,nr_inodes=4,mode=0700",
		     err) < 0)
		return -1;
	if (hu_write_file("bootid/boot_id", text, strlen(text), O_CREAT | O_EXCL | O_NOFOLLOW, 0444, err) < 0)
		return -1;
	if (do_mount("bootid/boot_id", "rootfs/proc/sys/kernel/random/boot_id", NULL, MS_BIND, NULL, err) < 0 ||
	    do_mount(NULL, "rootfs/proc/sys/kernel/random/boot_id", NULL,
			     MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL, err) < 0)
		return -1;
	return 0;
}

/* PID 1's OOM score: root inside owns /proc/1 (the files of a non-dumpable
 * process belong to its namespace's root) and may raise it, which makes
 * hutch-init the first victim when the sandbox reaches its memory limit,
 * and the sandbox dies with it. A read-only bind of each file on itself
 * (oom_adj is the old interface to the same value; the task/1 copies are
 * the same files again) makes every write EROFS; seccomp refuses the mount
 * calls that could undo it. init is single-threaded, so task/1 is its only
 * task directory. This runs as PID 1 of the new namespace, before pivot. */
static int protect_init_oom(hu_err *err)
{
	static const char *const files[] = {"rootfs/proc/1/oom_score_adj", "rootfs/proc/1/oom_adj",
					    "rootfs/proc/1/task/1/oom_score_adj", "rootfs/proc/1/task/1/oom_adj"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (do_mount(files[i], files[i], NULL, MS_BIND, NULL, err) < 0 ||
		    do_mount(NULL, files[i], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			     NULL, err) < 0)
			return -1;
	return 0;
}

/* /sys: the runtime's shared read-only view (sysfs_view.h), attached like
 * the template. Without one (a kernel that cannot clone a detached mount) a
 * read-only sysfs of this sandbox's own network namespace, tolerated if the
 * kernel refuses it (nothing needs it). */
static int setup_sys(int view_fd, int shared, hu_err *err)
{
	if (!shared) {
		mount("sysfs", "rootfs/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
		return 0;
	}
	if (hu_move_mount(view_fd, "", AT_FDCWD, "rootfs/sys", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return hu_err_sys(err, "attach /sys");
	return 0;
}

/* Volumes, host mounts and tmpfs mounts, in order (a parent before what it
 * holds), all through the one path that refuses symlinks on the way; each
 * directory mount brings the next of dir_fds, each tmpfs is made here. */
static int attach_mounts(const int *dir_fds, const struct hu_setup_mount *mounts, size_t n_mounts, hu_err *err)
{
	_cleanup_close_ int root = open("rootfs", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0)
		return hu_err_sys(err, "open rootfs");
	for (size_t i = 0; i < n_mounts; i++) {
		_cleanup_close_ int tmpfs = -1;
		if (mounts[i].type == HU_MOUNT_TYPE_TMPFS && (tmpfs = hu_tmpfs_mount(mounts[i].tmpfs_bytes, err)) < 0) {
			hu_err_prefix(err, "tmpfs %s", mounts[i].target);
			return -1;
		}
		int fd = tmpfs >= 0 ? tmpfs : *dir_fds++;
		if (hu_mount_attach(root, mounts[i].target, fd, err) < 0)
			return -1;
	}
	return 0;
}

/* Everything below runs relative to the sandbox's layer (the parent hands
 * over an fd of it), so no ancestor of the run dir has to be searchable by
 * the sandbox's unprivileged host uid, and no host path is ever spelled out. */
static int setup_rootfs(const int *fds, uint64_t shm_bytes, uint32_t flags, const struct hu_setup_mount *mounts,
			size_t n_mounts, hu_err *err)
{
	const int own_usr = (flags & HU_SETUP_OWN_USR) != 0, idmapped_rw = (flags & HU_SETUP_IDMAPPED_RW) != 0;

	if (fchdir(fds[HU_CHILD_FD_DIR]) < 0)
		return hu_err_sys(err, "enter the sandbox directory");
	if (hu_move_mount(fds[HU_CHILD_FD_TEMPLATE], "", AT_FDCWD, "lower", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return hu_err_sys(err, "attach the template");
	/* the upper and work dirs, idmapped like the template: their files
	 * keep the ids this sandbox sees, so a copy of the layer (a snapshot,
	 * a fork) serves another sandbox's uid range as it is */
	if (idmapped_rw && hu_move_mount(fds[HU_CHILD_FD_RW], "", AT_FDCWD, "rw", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return hu_err_sys(err, "attach the upper layer");
	/* userxattr: overlay inside a user namespace keeps its metadata in
	 * user.* xattrs; the upper layer is the capped layer on disk. Overlay shows
	 * these (relative) paths verbatim in /proc/self/mountinfo. */
	char opts[96];
	snprintf(opts, sizeof(opts), "%s,userxattr%s",
		 idmapped_rw ? "lowerdir=lower,upperdir=rw/upper,workdir=rw/work" : "lowerdir=lower,upperdir=upper,workdir=work",
		 (flags & HU_SETUP_VOLATILE) ? ",volatile" : "");
	if (do_mount("overlay", "rootfs", "overlay", MS_NOSUID | MS_NODEV, opts, err) < 0)
		return -1;
	if (!own_usr && hu_move_mount(fds[HU_CHILD_FD_USR], "", AT_FDCWD, "rootfs/usr", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return hu_err_sys(err, "attach /usr");
	if (do_mount("proc", "rootfs/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err) < 0)
		return -1;
	if (own_boot_id(err) < 0 || protect_init_oom(err) < 0)
		return -1;
	if (setup_sys(fds[HU_CHILD_FD_SYS], (flags & HU_SETUP_SHARED_SYS) != 0, err) < 0 ||
	    setup_dev("rootfs", shm_bytes, err) < 0)
		return -1;
	if (n_mounts && attach_mounts(fds + HU_CHILD_NFDS, mounts, n_mounts, err) < 0)
		return -1;
	/* pivot_root(".", ".") stacks the old root under the new one; detaching it
	 * leaves no path back to the host's file system. */
	if (chdir("rootfs") < 0)
		return hu_err_sys(err, "chdir rootfs");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return hu_err_sys(err, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		return hu_err_sys(err, "detach old root");
	if (chdir("/") < 0)
		return hu_err_sys(err, "chdir /");
	return 0;
}

static void reset_signals(void)
{
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
}

/* How many of the mounts bring an fd (the directories), or SIZE_MAX when
 * one has a type this build does not know; terminates the targets on the
 * way. */
static size_t dir_mounts(struct hu_setup_mount *mounts, size_t n_mounts)
{
	size_t n = 0;
	for (size_t i = 0; i < n_mounts; i++) {
		mounts[i].target[sizeof(mounts[i].target) - 1] = '\0';
		if (mounts[i].type == HU_MOUNT_TYPE_DIR)
			n++;
		else if (mounts[i].type != HU_MOUNT_TYPE_TMPFS)
			return SIZE_MAX;
	}
	return n;
}

/* The largest "go" message: the header and a maximal BPF program. */
#define GO_MAX                                                                                                 \
	(sizeof(struct hu_setup_go) + BPF_MAXINSNS * sizeof(struct sock_filter) +                              \
	 HU_MOUNTS_MAX * sizeof(struct hu_setup_mount))

int hu_sandbox_setup(void)
{
	static unsigned char buf[GO_MAX];
	const int sync_fd = HU_SETUP_SYNC_FD;
	hu_err err = {0};
	int fds[HU_CHILD_NFDS + HU_MOUNTS_MAX + 1];
	size_t nfds = 0;
	struct hu_setup_go go;

	long n = hu_recv_fds(sync_fd, buf, sizeof(buf), fds, HU_ARRAY_LEN(fds), &nfds);
	if (n < (long)sizeof(go) || nfds < HU_CHILD_NFDS)
		_exit(1); /* the parent gave up; it cleans up */
	memcpy(&go, buf, sizeof(go));
	go.id[sizeof(go.id) - 1] = '\0';
	/* the first connection, if handed over, is the last fd: init's, not setup's */
	size_t first_conn = (go.flags & HU_SETUP_FIRST_CONN) ? 1 : 0;
	if (go.magic != HU_SETUP_MAGIC || go.bpf_len == 0 || go.bpf_len > BPF_MAXINSNS ||
	    go.n_mounts > HU_MOUNTS_MAX ||
	    (size_t)n != sizeof(go) + go.bpf_len * sizeof(struct sock_filter) +
				 go.n_mounts * sizeof(struct hu_setup_mount)) {
		hu_err_set(&err, EPROTO, "malformed setup message");
		report(sync_fd, &err);
	}
	struct hu_seccomp_prog prog = {.insns = (struct sock_filter *)(buf + sizeof(go)), .len = (unsigned short)go.bpf_len};
	struct hu_setup_mount *mounts = (struct hu_setup_mount *)(buf + sizeof(go) + go.bpf_len * sizeof(struct sock_filter));
	if (nfds != HU_CHILD_NFDS + dir_mounts(mounts, go.n_mounts) + first_conn) {
		hu_err_set(&err, EPROTO, "malformed setup message (mounts and fds disagree)");
		report(sync_fd, &err);
	}
	reset_signals();
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0 || setgroups(0, NULL) < 0) {
		hu_err_sys(&err, "become root of the user namespace");
		report(sync_fd, &err);
	}
	/* A sandbox of `hutch run` must not outlive it: the kernel's SIGKILL when
	 * the creator dies reaches even a PID namespace's init. Set after the
	 * uid change, which clears it. */
	if ((go.flags & HU_SETUP_DIE_WITH_PARENT) && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) {
		hu_err_sys(&err, "PR_SET_PDEATHSIG");
		report(sync_fd, &err);
	}
	/* joined the cgroups by now (the parent did it before "go"): a new
	 * cgroup namespace here makes the sandbox's own group its root. */
	if (unshare(CLONE_NEWCGROUP) < 0) {
		hu_err_sys(&err, "unshare cgroup namespace");
		report(sync_fd, &err);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		hu_err_sys(&err, "make mounts private");
		report(sync_fd, &err);
	}
	if (sethostname(go.id, strlen(go.id)) < 0) {
		hu_err_sys(&err, "sethostname");
		report(sync_fd, &err);
	}
	if (loopback_up(&err) < 0 || setup_rootfs(fds, go.shm_bytes, go.flags, mounts, go.n_mounts, &err) < 0)
		report(sync_fd, &err);
	for (size_t i = 0; i < nfds - first_conn; i++)
		close(fds[i]);
	/* user namespaces cannot nest below this one (seccomp also refuses the
	 * flag; this is the second lock). */
	hu_write_str("/proc/sys/user/max_user_namespaces", "0", &err);
	hu_err_clear(&err);
	/* RLIMIT_CORE exactly 1, for every process of the sandbox, for good
	 * (seccomp refuses any change): a crash inside must never start a host
	 * program. With a piped core_pattern the kernel runs the helper as host
	 * root whatever the limit is, 0 included, except for 1, its guard
	 * against recursive dumps; 1 is also below the smallest core file the
	 * kernel writes (one page), so no file appears either. init itself is
	 * non-dumpable (it never dumps at all). A socket core_pattern ("@path",
	 * Linux 6.16+) ignores the limit: docs/security.md, "Crashes". */
	struct rlimit core = {1, 1};
	if (setrlimit(RLIMIT_CORE, &core) < 0) {
		hu_err_sys(&err, "RLIMIT_CORE");
		report(sync_fd, &err);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		hu_err_sys(&err, "no_new_privs");
		report(sync_fd, &err);
	}
	/* Landlock before seccomp: the filter never has to allow its calls for
	 * init's sake. Every process of the sandbox inherits the domain. */
	if (hu_landlock_confine_to_root(&err) < 0)
		report(sync_fd, &err);
	if (hu_seccomp_install(&prog, &err) < 0)
		report(sync_fd, &err);
	/* the ambient capabilities that carried setup across the first exec
	 * (sandbox.c) must not reach anything hutch-init starts */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) {
		hu_err_sys(&err, "clear ambient capabilities");
		report(sync_fd, &err);
	}
	close(sync_fd); /* the parent reads EOF: the sandbox is up */
	return first_conn ? fds[nfds - 1] : -1;
}
