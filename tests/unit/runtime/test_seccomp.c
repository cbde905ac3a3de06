/*
 * The sandbox seccomp filter: every probe runs in a forked child that sets
 * no_new_privs and loads the filter (the test process itself stays
 * unfiltered), makes one call with harmless arguments and reports the errno
 * (0 for success) back through a pipe.
 *
 * Filtered children leave with _exit(): LeakSanitizer's exit-time check uses
 * ptrace, which the filter denies, so it must never run there.
 *
 * "Harmless" means: should the filter ever fail to deny a call, the call
 * still does nothing to the host (bad paths, bad fds, bad magic numbers).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "runtime/seccomp.h"
#include "util/cleanup.h"

extern char **environ;

/* Numbers missing from older headers (x86_64). */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#define NR_OPEN_TREE_ATTR 467
#define NR_UNREVIEWED 470
#define X32_SYSCALL_BIT 0x40000000L
#define I386_NR_GETPID 20

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif

/* What a probe sends back. */
struct report {
	int loaded; /* 1 if hu_seccomp_load() succeeded */
	int value;  /* errno of the probed call, 0 on success, or a wait status */
	char msg[200];
};

typedef int (*probe_fn)(void);

static int rc_errno(long r)
{
	return r < 0 ? errno : 0;
}

/* Run `fn` under the filter in a child; return what it reported. */
static int run_filtered(probe_fn fn)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct report r = { 0 };
		hu_err err;
		hu_err_clear(&err);
		close(p[0]);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) == 0 && hu_seccomp_load(&err) == 0) {
			r.loaded = 1;
			r.value = fn();
		} else {
			snprintf(r.msg, sizeof(r.msg), "%s", err.msg);
		}
		if (write(p[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	struct report r;
	ssize_t n = read(p[0], &r, sizeof(r));
	close(p[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (n != (ssize_t)sizeof(r))
		fail_msg("probe child sent nothing (wait status 0x%x)", st);
	if (!r.loaded)
		fail_msg("hu_seccomp_load failed: %s", r.msg);
	return r.value;
}

#define EXPECT(fn, want)                                                                 \
	do {                                                                             \
		int got_ = run_filtered(fn);                                             \
		if (got_ != (want))                                                      \
			fail_msg("%s: got %d (%s), want %d (%s)", #fn, got_, strerror(got_), \
				 (want), strerror(want));                                \
	} while (0)

/* ---- denied calls ---------------------------------------------------- */

static int p_init_module(void) { return rc_errno(syscall(SYS_init_module, NULL, 0UL, "")); }
static int p_finit_module(void) { return rc_errno(syscall(SYS_finit_module, -1, "", 0)); }
/* Invalid flags: even unfiltered this only returns EINVAL (0 segments with
 * valid flags would unload a loaded crash kernel). */
static int p_kexec_load(void) { return rc_errno(syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0xdead0000UL)); }
/* Wrong magic: unfiltered it is EINVAL, never a reboot. */
static int p_reboot(void) { return rc_errno(syscall(SYS_reboot, 0, 0, 0, NULL)); }
static int p_syslog(void) { return rc_errno(syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0)); }
static int p_bpf(void) { return rc_errno(syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0)); }
static int p_perf_event_open(void) { return rc_errno(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0UL)); }
static int p_userfaultfd(void) { return rc_errno(syscall(SYS_userfaultfd, O_CLOEXEC)); }
static int p_io_uring_setup(void) { return rc_errno(syscall(SYS_io_uring_setup, 1, NULL)); }
static int p_io_uring_enter(void) { return rc_errno(syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0)); }
static int p_keyctl(void) { return rc_errno(syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3 /* SESSION */, 0)); }
static int p_add_key(void) { return rc_errno(syscall(SYS_add_key, "user", "hutch-test", "x", 1UL, -2 /* PROCESS */)); }
static int p_request_key(void) { return rc_errno(syscall(SYS_request_key, "user", "hutch-test", NULL, 0)); }
static int p_open_by_handle_at(void) { return rc_errno(syscall(SYS_open_by_handle_at, -1, NULL, 0)); }

/* Unfiltered, this would stop the test process: detach again if it ever
 * succeeds, so the failure is reported instead of hanging. */
static int p_ptrace(void)
{
	pid_t parent = getppid();
	long r = syscall(SYS_ptrace, PTRACE_ATTACH, parent, NULL, NULL);
	int e = errno;
	if (r == 0) {
		waitpid(parent, NULL, __WALL);
		syscall(SYS_ptrace, PTRACE_DETACH, parent, NULL, NULL);
		return 0;
	}
	return e;
}

static int p_process_vm_readv(void)
{
	static char buf[8];
	struct iovec local = { buf, sizeof(buf) }, remote = { buf, sizeof(buf) };
	return rc_errno(syscall(SYS_process_vm_readv, getppid(), &local, 1UL, &remote, 1UL, 0UL));
}

static int p_kcmp(void) { return rc_errno(syscall(SYS_kcmp, getpid(), getppid(), 0 /* KCMP_FILE */, 0, 0)); }
static int p_mount(void) { return rc_errno(syscall(SYS_mount, "none", "/nonexistent/hutch-test", "tmpfs", 0UL, NULL)); }
static int p_umount2(void) { return rc_errno(syscall(SYS_umount2, "/nonexistent/hutch-test", 0)); }
static int p_pivot_root(void) { return rc_errno(syscall(SYS_pivot_root, "/nonexistent/a", "/nonexistent/b")); }
static int p_chroot(void) { return rc_errno(syscall(SYS_chroot, "/")); }
/* Unfiltered, these only change the throw-away child. */
static int p_unshare_user(void) { return rc_errno(syscall(SYS_unshare, CLONE_NEWUSER)); }
static int p_unshare_ns(void) { return rc_errno(syscall(SYS_unshare, CLONE_NEWNS)); }

static int p_setns(void)
{
	int fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1000;
	return rc_errno(syscall(SYS_setns, fd, CLONE_NEWUTS));
}

static int p_open_tree(void) { return rc_errno(syscall(SYS_open_tree, AT_FDCWD, "/", 0U)); }
static int p_open_tree_attr(void) { return rc_errno(syscall(NR_OPEN_TREE_ATTR, AT_FDCWD, "/", 0U, NULL, 0UL)); }
static int p_move_mount(void) { return rc_errno(syscall(SYS_move_mount, -1, "", -1, "", 0U)); }
static int p_fsopen(void) { return rc_errno(syscall(SYS_fsopen, "tmpfs", 0U)); }
static int p_mount_setattr(void) { return rc_errno(syscall(SYS_mount_setattr, -1, "", 0U, NULL, 0UL)); }

/* Raw clone with fork semantics (no CLONE_VM, child continues on a copy of
 * this stack); if it ever creates a child, that child leaves at once. */
static int raw_clone(unsigned long flags)
{
	long r = syscall(SYS_clone, flags | SIGCHLD, 0UL, NULL, NULL, 0UL);
	if (r == 0)
		_exit(0);
	int e = errno;
	if (r > 0) {
		waitpid((pid_t)r, NULL, 0);
		return 0;
	}
	return e;
}

static int p_clone_newuser(void) { return raw_clone(CLONE_NEWUSER); }
static int p_clone_newnet(void) { return raw_clone(CLONE_NEWNET); }
static int p_clone_newpid_ns(void) { return raw_clone(CLONE_NEWPID | CLONE_NEWNS); }
/* Upper 32 bits are ignored by the kernel and must not hide the flag. */
static int p_clone_newuser_hibits(void) { return raw_clone(CLONE_NEWUSER | (1UL << 40)); }

static int p_clone3(void)
{
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	long r = syscall(SYS_clone3, &ca, sizeof(ca));
	if (r == 0)
		_exit(0);
	int e = errno;
	if (r > 0) {
		waitpid((pid_t)r, NULL, 0);
		return 0;
	}
	return e;
}

/* A pty pair; returns the slave fd or -1. */
static int open_pty(int *master)
{
	*master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*master < 0 || grantpt(*master) < 0 || unlockpt(*master) < 0)
		return -1;
	const char *name = ptsname(*master);
	return name ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
}

static int p_tiocsti(void)
{
	int m, s = open_pty(&m);
	char c = 'x';
	if (s < 0)
		return -1000;
	return rc_errno(ioctl(s, TIOCSTI, &c));
}

static int p_tiocsti_master(void)
{
	int m;
	char c = 'x';
	if (open_pty(&m) < 0)
		return -1000;
	return rc_errno(ioctl(m, TIOCSTI, &c));
}

/* The kernel truncates the request to 32 bits; the filter must too. */
static int p_tiocsti_hibits(void)
{
	int m, s = open_pty(&m);
	char c = 'x';
	if (s < 0)
		return -1000;
	return rc_errno(syscall(SYS_ioctl, s, (unsigned long)TIOCSTI | (1UL << 32), &c));
}

static int p_tioclinux(void)
{
	int m, s = open_pty(&m);
	char sub = 3; /* TIOCL_PASTESEL */
	if (s < 0)
		return -1000;
	return rc_errno(ioctl(s, TIOCLINUX, &sub));
}

static int p_pers_read_implies_exec(void) { return rc_errno(syscall(SYS_personality, (unsigned long)READ_IMPLIES_EXEC)); }
static int p_pers_no_randomize(void) { return rc_errno(syscall(SYS_personality, (unsigned long)ADDR_NO_RANDOMIZE)); }
static int p_pers_1(void) { return rc_errno(syscall(SYS_personality, 1UL)); }
static int p_pers_fffffffe(void) { return rc_errno(syscall(SYS_personality, 0xfffffffeUL)); }
static int p_pers_7fffffff(void) { return rc_errno(syscall(SYS_personality, 0x7fffffffUL)); }
static int p_pers_80000000(void) { return rc_errno(syscall(SYS_personality, 0x80000000UL)); }
static int p_pers_hibits(void) { return rc_errno(syscall(SYS_personality, (1UL << 32) | READ_IMPLIES_EXEC)); }

static int sock_errno(int domain, int type, int proto)
{
	int fd = socket(domain, type | SOCK_CLOEXEC, proto);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int p_af_packet(void) { return sock_errno(AF_PACKET, SOCK_RAW, 0); }
static int p_af_vsock(void) { return sock_errno(AF_VSOCK, SOCK_STREAM, 0); }
static int p_af_alg(void) { return sock_errno(AF_ALG, SOCK_SEQPACKET, 0); }
static int p_af_key(void) { return sock_errno(15 /* AF_KEY */, SOCK_RAW, 2); }
static int p_netlink_netfilter(void) { return sock_errno(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER); }
static int p_netlink_audit(void) { return sock_errno(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT); }
/* 0x100000011 is AF_PACKET to the kernel (int truncation). */
static int p_af_packet_hibits(void)
{
	long fd = syscall(SYS_socket, (1UL << 32) | AF_PACKET, (unsigned long)SOCK_RAW, 0UL);
	if (fd < 0)
		return errno;
	close((int)fd);
	return 0;
}

static int p_unreviewed_nr(void) { return rc_errno(syscall(NR_UNREVIEWED, 0, 0, 0)); }

/* Protocols the kernel would look up (and ask modprobe for when it has no
 * handler): refused by the filter before that. MPTCP and UDP-Lite are built
 * into most kernels, so on those these two fail only because of the filter. */
static int p_sctp(void) { return sock_errno(AF_INET, SOCK_STREAM, IPPROTO_SCTP); }
static int p_sctp_seqpacket(void) { return sock_errno(AF_INET6, SOCK_SEQPACKET, IPPROTO_SCTP); }
static int p_dccp(void) { return sock_errno(AF_INET, SOCK_DCCP, IPPROTO_DCCP); }
static int p_l2tp(void) { return sock_errno(AF_INET, SOCK_DGRAM, 115 /* IPPROTO_L2TP */); }
static int p_mptcp(void) { return sock_errno(AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */); }
static int p_udplite(void) { return sock_errno(AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE); }
static int p_proto_unknown(void) { return sock_errno(AF_INET, SOCK_DGRAM, 200); }
static int p_unix_proto(void) { return sock_errno(AF_UNIX, SOCK_STREAM, 2); }
static int p_netlink_sock_diag(void) { return sock_errno(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG); }
/* socketpair runs the family's create code for the protocol too */
static int p_socketpair_netfilter(void)
{
	int sv[2];
	if (socketpair(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER, sv) == 0)
		return 0;
	return errno;
}

/* io_setup: fs.aio-max-nr is one counter for the whole host. */
static int p_io_setup(void)
{
	unsigned long ctx = 0;
	long r = syscall(SYS_io_setup, 1, &ctx);
	if (r == 0)
		syscall(SYS_io_destroy, ctx);
	return rc_errno(r);
}

/* RLIMIT_CORE may not change in any direction (a piped core_pattern ignores
 * a limit of 0): setting it succeeds and changes nothing. Returns 0 for
 * that, -1 if the limit changed. The host's own limit is not 0/0 where
 * these run (a soft 0 under an unlimited hard limit is the usual default),
 * so a change would show. */
static int core_unchanged_after(long r, const struct rlimit *before)
{
	struct rlimit after;
	if (r < 0)
		return errno;
	if (getrlimit(RLIMIT_CORE, &after) < 0)
		return -1000;
	return after.rlim_cur == before->rlim_cur && after.rlim_max == before->rlim_max ? 0 : -1;
}

static int p_setrlimit_core(void)
{
	struct rlimit before, rl = { 0, 0 };
	if (getrlimit(RLIMIT_CORE, &before) < 0 || (before.rlim_cur == 0 && before.rlim_max == 0))
		return -1000;
	return core_unchanged_after(setrlimit(RLIMIT_CORE, &rl), &before);
}

static int p_setrlimit_core_raw(void)
{
	struct rlimit before, rl = { 0, 0 };
	if (getrlimit(RLIMIT_CORE, &before) < 0 || (before.rlim_cur == 0 && before.rlim_max == 0))
		return -1000;
	return core_unchanged_after(syscall(SYS_setrlimit, RLIMIT_CORE, &rl), &before);
}

static int p_prlimit_core(void)
{
	struct rlimit before, rl = { 0, 0 };
	if (getrlimit(RLIMIT_CORE, &before) < 0 || (before.rlim_cur == 0 && before.rlim_max == 0))
		return -1000;
	return core_unchanged_after(syscall(SYS_prlimit64, 0, RLIMIT_CORE, &rl, NULL), &before);
}

/* With an old-value pointer a faked success would leave it unset: EINVAL. */
static int p_prlimit_core_old(void)
{
	struct rlimit rl = { 0, 0 }, old;
	return rc_errno(syscall(SYS_prlimit64, 0, RLIMIT_CORE, &rl, &old));
}

/* The parent (the test process) stands in for a sandbox's PID 1 only in the
 * BPF tests below; live, a new limit for PID 1 of the host's namespace must
 * be refused before the kernel's permission check. The limit asked for
 * is the one it has, so nothing changes if the filter lets it through. */
static int p_prlimit_pid1(void)
{
	struct rlimit rl;
	if (syscall(SYS_prlimit64, 1, RLIMIT_NOFILE, NULL, &rl) < 0)
		return -1000;
	return rc_errno(syscall(SYS_prlimit64, 1, RLIMIT_NOFILE, &rl, NULL));
}

/* ---- foreign ABIs: run in a grandchild, the filter may kill it ------- */

/* Exit code of a grandchild whose foreign-ABI call succeeded. */
#define FOREIGN_SUCCEEDED 42

static int in_grandchild(void (*fn)(void))
{
	pid_t pid = fork();
	if (pid < 0)
		return -1000;
	if (pid == 0) {
		/* cmocka's handlers are inherited; a fault must kill this
		 * process, not resume the test runner inside it. */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGILL, SIG_DFL);
		signal(SIGSYS, SIG_DFL);
		fn();
		_exit(43);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1000;
	return st;
}

static void i386_getpid(void)
{
	long ret;
	/* int $0x80 from 64-bit code enters the i386 syscall table:
	 * AUDIT_ARCH_I386 in seccomp_data.arch. */
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"((long)I386_NR_GETPID) : "memory", "r8", "r9", "r10", "r11");
	if (ret == getpid())
		_exit(FOREIGN_SUCCEEDED);
}

static void x32_getpid(void)
{
	long ret = syscall(X32_SYSCALL_BIT | SYS_getpid);
	if (ret == getpid())
		_exit(FOREIGN_SUCCEEDED);
}

static int p_i386(void) { return in_grandchild(i386_getpid); }
static int p_x32(void) { return in_grandchild(x32_getpid); }

/* ---- allowed calls --------------------------------------------------- */

static int p_fork_exec_true(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		char *argv[] = { "/bin/true", NULL };
		execve(argv[0], argv, environ);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* glibc's posix_spawn tries clone3 first: this proves the ENOSYS fallback. */
static int p_posix_spawn(void)
{
	char *argv[] = { "/bin/true", NULL };
	pid_t pid;
	int r = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
	if (r != 0)
		return r;
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void *thread_fn(void *arg) { return arg; }

/* pthread_create also starts with clone3 (CLONE_VM|CLONE_THREAD|...). */
static int p_pthread(void)
{
	pthread_t t;
	void *out = NULL;
	int r = pthread_create(&t, NULL, thread_fn, (void *)0x1);
	if (r != 0)
		return r;
	pthread_join(t, &out);
	return out == (void *)0x1 ? 0 : -1;
}

static int p_plain_clone(void) { return raw_clone(0); }
static int p_af_inet(void) { return sock_errno(AF_INET, SOCK_STREAM, 0); }
static int p_af_inet6(void) { return sock_errno(AF_INET6, SOCK_DGRAM, 0); }
static int p_af_unix(void) { return sock_errno(AF_UNIX, SOCK_STREAM, 0); }
static int p_netlink_route(void) { return sock_errno(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE); }
static int p_inet_tcp(void) { return sock_errno(AF_INET, SOCK_STREAM, IPPROTO_TCP); }
static int p_inet6_udp(void) { return sock_errno(AF_INET6, SOCK_DGRAM, IPPROTO_UDP); }
static int p_unix_pf_unix(void) { return sock_errno(AF_UNIX, SOCK_DGRAM, PF_UNIX); }
static int p_socketpair_unix(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return errno;
	close(sv[0]);
	close(sv[1]);
	return 0;
}

/* Reading limits (no new value) stays allowed, PID 1's included; so does
 * setting a limit other than RLIMIT_CORE on oneself. */
static int p_rlimits_read_and_own(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_CORE, &rl) < 0 || syscall(SYS_prlimit64, 1, RLIMIT_CORE, NULL, &rl) < 0 ||
	    getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return errno;
	return rc_errno(setrlimit(RLIMIT_NOFILE, &rl));
}

static int p_file_io(void)
{
	char path[] = "/tmp/hutch-seccomp-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return errno;
	unlink(path);
	char in[6] = "hello", out[6] = { 0 };
	if (write(fd, in, sizeof(in)) != (ssize_t)sizeof(in))
		return errno ? errno : EIO;
	if (pread(fd, out, sizeof(out), 0) != (ssize_t)sizeof(out))
		return errno ? errno : EIO;
	close(fd);
	return memcmp(in, out, sizeof(in)) == 0 ? 0 : EIO;
}

static int p_pers_query(void)
{
	long r = syscall(SYS_personality, 0xffffffffUL);
	return r < 0 ? errno : (r == PER_LINUX ? 0 : -1);
}

static int p_pers_linux(void) { return rc_errno(syscall(SYS_personality, (unsigned long)PER_LINUX)); }

/* What hutch-init does on a pty: TIOCGPTN, TIOCSPTLCK, TIOCSWINSZ. */
static int p_pty_ioctls(void)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return errno;
	unsigned int n;
	int unlock = 0;
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	if (ioctl(m, TIOCGPTN, &n) < 0 || ioctl(m, TIOCSPTLCK, &unlock) < 0 || ioctl(m, TIOCSWINSZ, &ws) < 0)
		return errno;
	return 0;
}

static int p_setresuid(void) { return rc_errno(setresuid(0, 0, 0)); }

/* ---- tests ----------------------------------------------------------- */

static void test_denied_admin(void **state)
{
	EXPECT(p_init_module, EPERM);
	EXPECT(p_finit_module, EPERM);
	EXPECT(p_kexec_load, EPERM);
	EXPECT(p_reboot, EPERM);
	EXPECT(p_syslog, EPERM);
}

static void test_denied_attack_surface(void **state)
{
	EXPECT(p_bpf, EPERM);
	EXPECT(p_perf_event_open, EPERM);
	EXPECT(p_userfaultfd, EPERM);
	EXPECT(p_io_uring_setup, EPERM);
	EXPECT(p_io_uring_enter, EPERM);
	EXPECT(p_keyctl, EPERM);
	EXPECT(p_add_key, EPERM);
	EXPECT(p_request_key, EPERM);
	EXPECT(p_open_by_handle_at, EPERM);
}

static void test_denied_cross_process(void **state)
{
	EXPECT(p_ptrace, EPERM);
	EXPECT(p_process_vm_readv, EPERM);
	EXPECT(p_kcmp, EPERM);
}

static void test_denied_mounts_and_namespaces(void **state)
{
	EXPECT(p_mount, EPERM);
	EXPECT(p_umount2, EPERM);
	EXPECT(p_pivot_root, EPERM);
	EXPECT(p_chroot, EPERM);
	EXPECT(p_unshare_user, EPERM);
	EXPECT(p_unshare_ns, EPERM);
	EXPECT(p_setns, EPERM);
	EXPECT(p_open_tree, EPERM);
	EXPECT(p_open_tree_attr, EPERM);
	EXPECT(p_move_mount, EPERM);
	EXPECT(p_fsopen, EPERM);
	EXPECT(p_mount_setattr, EPERM);
}

static void test_denied_clone_namespaces(void **state)
{
	EXPECT(p_clone_newuser, EPERM);
	EXPECT(p_clone_newnet, EPERM);
	EXPECT(p_clone_newpid_ns, EPERM);
	EXPECT(p_clone_newuser_hibits, EPERM);
	EXPECT(p_clone3, ENOSYS);
}

static void test_denied_tty_injection(void **state)
{
	EXPECT(p_tiocsti, EPERM);
	EXPECT(p_tiocsti_master, EPERM);
	EXPECT(p_tiocsti_hibits, EPERM);
	EXPECT(p_tioclinux, EPERM);
}

static void test_denied_personality(void **state)
{
	EXPECT(p_pers_read_implies_exec, EPERM);
	EXPECT(p_pers_no_randomize, EPERM);
	EXPECT(p_pers_1, EPERM);
	EXPECT(p_pers_fffffffe, EPERM);
	EXPECT(p_pers_7fffffff, EPERM);
	EXPECT(p_pers_80000000, EPERM);
	EXPECT(p_pers_hibits, EPERM);
}

static void test_denied_socket_families(void **state)
{
	EXPECT(p_af_packet, EAFNOSUPPORT);
	EXPECT(p_af_packet_hibits, EAFNOSUPPORT);
	EXPECT(p_af_vsock, EAFNOSUPPORT);
	EXPECT(p_af_alg, EAFNOSUPPORT);
	EXPECT(p_af_key, EAFNOSUPPORT);
	EXPECT(p_netlink_netfilter, EAFNOSUPPORT);
	EXPECT(p_netlink_audit, EAFNOSUPPORT);
}

static void test_denied_socket_protocols(void **state)
{
	EXPECT(p_sctp, EPROTONOSUPPORT);
	EXPECT(p_sctp_seqpacket, ESOCKTNOSUPPORT);
	EXPECT(p_dccp, ESOCKTNOSUPPORT);
	EXPECT(p_l2tp, EPROTONOSUPPORT);
	EXPECT(p_mptcp, EPROTONOSUPPORT);
	EXPECT(p_udplite, EPROTONOSUPPORT);
	EXPECT(p_proto_unknown, EPROTONOSUPPORT);
	EXPECT(p_unix_proto, EPROTONOSUPPORT);
	EXPECT(p_netlink_sock_diag, EAFNOSUPPORT);
	EXPECT(p_socketpair_netfilter, EAFNOSUPPORT);
}

static void test_denied_host_counters_and_limits(void **state)
{
	EXPECT(p_io_setup, ENOSYS);
	EXPECT(p_setrlimit_core, 0);
	EXPECT(p_setrlimit_core_raw, 0);
	EXPECT(p_prlimit_core, 0);
	EXPECT(p_prlimit_core_old, EINVAL);
	EXPECT(p_prlimit_pid1, EPERM);
}

static void test_unreviewed_syscall_enosys(void **state)
{
	EXPECT(p_unreviewed_nr, ENOSYS);
}

static void assert_foreign_failed(const char *what, probe_fn fn)
{
	/* Control run without the filter: some hosts cannot run the foreign
	 * ABI at all (x32 is rarely built in; some hypervisors fault on
	 * int $0x80). Then the call fails either way and only "did not
	 * succeed" can be asserted here; test_bpf_* proves the filter's
	 * answer on synthetic input regardless of the host. */
	int control = fn();
	int st = run_filtered(fn);
	if (st == -1000 || control == -1000)
		fail_msg("%s: could not fork/wait the grandchild", what);
	if (WIFEXITED(st) && WEXITSTATUS(st) == FOREIGN_SUCCEEDED)
		fail_msg("%s: the syscall succeeded under the filter", what);
	if (WIFEXITED(control) && WEXITSTATUS(control) == FOREIGN_SUCCEEDED) {
		/* The host runs it: the filter's bad-arch action must be what
		 * stopped it. */
		if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS))
			fail_msg("%s: expected death by SIGSYS, wait status 0x%x", what, st);
	} else {
		print_message("note: %s does not work on this host even unfiltered (status 0x%x); "
			      "filtered status 0x%x\n", what, control, st);
	}
}

static void test_i386_syscall_fails(void **state)
{
	assert_foreign_failed("int $0x80 getpid", p_i386);
}

static void test_x32_syscall_fails(void **state)
{
	assert_foreign_failed("x32 getpid", p_x32);
}

/* ---- the exported BPF, evaluated on synthetic seccomp_data ----------- */

/* A classic-BPF interpreter for the instructions libseccomp emits. Anything
 * else fails the test, so a libseccomp upgrade that uses new opcodes is
 * noticed instead of misjudged. */
static uint32_t bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	size_t pc = 0;
	while (pc < n) {
		const struct sock_filter *i = &f[pc++];
		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (i->k + 4 > sizeof(*d) || i->k % 4)
				fail_msg("bpf: load at offset %u", i->k);
			memcpy(&a, (const char *)d + i->k, 4);
			break;
		case BPF_LD | BPF_MEM: a = mem[i->k % BPF_MEMWORDS]; break;
		case BPF_LDX | BPF_MEM: x = mem[i->k % BPF_MEMWORDS]; break;
		case BPF_ST: mem[i->k % BPF_MEMWORDS] = a; break;
		case BPF_STX: mem[i->k % BPF_MEMWORDS] = x; break;
		case BPF_ALU | BPF_AND | BPF_K: a &= i->k; break;
		case BPF_MISC | BPF_TAX: x = a; break;
		case BPF_MISC | BPF_TXA: a = x; break;
		case BPF_JMP | BPF_JA: pc += i->k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: pc += (a == i->k) ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JGT | BPF_K: pc += (a > i->k) ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JGE | BPF_K: pc += (a >= i->k) ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JSET | BPF_K: pc += (a & i->k) ? i->jt : i->jf; break;
		case BPF_RET | BPF_K: return i->k;
		case BPF_RET | BPF_A: return a;
		default: fail_msg("bpf: unsupported opcode 0x%x at %zu", i->code, pc - 1);
		}
	}
	fail_msg("bpf: fell off the end of the program");
	return 0;
}

static struct sock_filter *export_filter(size_t *n)
{
	hu_err err;
	hu_err_clear(&err);
	int fd = memfd_create("hutch-bpf", MFD_CLOEXEC);
	assert_true(fd >= 0);
	if (hu_seccomp_export_bpf(fd, &err) < 0)
		fail_msg("export: %s", err.msg);
	off_t len = lseek(fd, 0, SEEK_END);
	assert_true(len > 0 && len % (off_t)sizeof(struct sock_filter) == 0);
	struct sock_filter *f = malloc((size_t)len);
	assert_non_null(f);
	assert_int_equal(pread(fd, f, (size_t)len, 0), len);
	close(fd);
	*n = (size_t)len / sizeof(struct sock_filter);
	/* The kernel refuses programs longer than BPF_MAXINSNS. */
	assert_true(*n <= BPF_MAXINSNS);
	return f;
}

static uint32_t eval(const struct sock_filter *f, size_t n, uint32_t arch, int nr, uint64_t a0, uint64_t a1)
{
	struct seccomp_data d;
	memset(&d, 0, sizeof(d));
	d.arch = arch;
	d.nr = nr;
	d.args[0] = a0;
	d.args[1] = a1;
	return bpf_run(f, n, &d);
}

#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | (uint32_t)(e))

static void test_bpf_foreign_arch_killed(void **state)
{
	size_t n;
	struct sock_filter *f = export_filter(&n);
	/* i386 (int $0x80): getpid and, say, i386 mount, both killed. */
	assert_int_equal(eval(f, n, AUDIT_ARCH_I386, I386_NR_GETPID, 0, 0), SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(eval(f, n, AUDIT_ARCH_I386, 21, 0, 0), SECCOMP_RET_KILL_PROCESS);
	/* x32 shares AUDIT_ARCH_X86_64 and sets bit 30 of the number. */
	assert_int_equal(eval(f, n, AUDIT_ARCH_X86_64, (int)(X32_SYSCALL_BIT | SYS_getpid), 0, 0),
			 SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(eval(f, n, AUDIT_ARCH_X86_64, (int)(X32_SYSCALL_BIT | SYS_mount), 0, 0),
			 SECCOMP_RET_KILL_PROCESS);
	/* Native calls are judged normally. */
	assert_int_equal(eval(f, n, AUDIT_ARCH_X86_64, SYS_getpid, 0, 0), SECCOMP_RET_ALLOW);
	assert_int_equal(eval(f, n, AUDIT_ARCH_X86_64, SYS_mount, 0, 0), RET_ERRNO(EPERM));
	free(f);
}

/* personality: exactly 0 and 0xffffffff pass; probe every single-bit and
 * two-bit value in the low half plus upper-half garbage. */
static void test_bpf_personality_values(void **state)
{
	size_t n;
	struct sock_filter *f = export_filter(&n);
	assert_int_equal(eval(f, n, AUDIT_ARCH_X86_64, SYS_personality, 0, 0), SECCOMP_RET_ALLOW);
	assert_int_equal(eval(f, n, AUDIT_ARCH_X86_64, SYS_personality, 0xffffffffULL, 0), SECCOMP_RET_ALLOW);
	for (int i = 0; i < 64; i++) {
		uint64_t v = 1ULL << i;
		assert_int_equal(eval(f, n, AUDIT_ARCH_X86_64, SYS_personality, v, 0), RET_ERRNO(EPERM));
		assert_int_equal(eval(f, n, AUDIT_ARCH_X86_64, SYS_personality, 0xffffffffULL ^ v, 0),
				 RET_ERRNO(EPERM));
		for (int j = 0; j < i; j++)
			assert_int_equal(eval(f, n, AUDIT_ARCH_X86_64, SYS_personality, v | (1ULL << j), 0),
					 RET_ERRNO(EPERM));
	}
	free(f);
}

static uint32_t eval_args(const struct sock_filter *f, size_t n, int nr, uint64_t a0, uint64_t a1, uint64_t a2,
			  uint64_t a3)
{
	struct seccomp_data d;
	memset(&d, 0, sizeof(d));
	d.arch = AUDIT_ARCH_X86_64;
	d.nr = nr;
	d.args[0] = a0;
	d.args[1] = a1;
	d.args[2] = a2;
	d.args[3] = a3;
	return bpf_run(f, n, &d);
}

/* socket and socketpair: only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK
 * (with NETLINK_ROUTE) pass; garbage in the upper half of the family is
 * refused, not truncated. */
static void test_bpf_socket_families(void **state)
{
	size_t n;
	struct sock_filter *f = export_filter(&n);
	static const int creators[] = { SYS_socket, SYS_socketpair };
	for (size_t c = 0; c < 2; c++) {
		for (uint64_t fam = 0; fam < 64; fam++) {
			bool ok = fam == AF_UNIX || fam == AF_INET || fam == AF_INET6 || fam == AF_NETLINK;
			uint32_t want = ok ? SECCOMP_RET_ALLOW : RET_ERRNO(EAFNOSUPPORT);
			if (eval_args(f, n, creators[c], fam, SOCK_DGRAM, 0, 0) != want)
				fail_msg("syscall %d, socket family %llu", creators[c], (unsigned long long)fam);
			if (eval_args(f, n, creators[c], fam | (1ULL << 32), SOCK_DGRAM, 0, 0) != RET_ERRNO(EAFNOSUPPORT))
				fail_msg("syscall %d, family %llu with upper bits not refused", creators[c],
					 (unsigned long long)fam);
		}
		for (uint64_t proto = 0; proto < 64; proto++) {
			uint32_t want = proto == NETLINK_ROUTE ? SECCOMP_RET_ALLOW : RET_ERRNO(EAFNOSUPPORT);
			if (eval_args(f, n, creators[c], AF_NETLINK, SOCK_RAW, proto, 0) != want)
				fail_msg("syscall %d, netlink protocol %llu", creators[c], (unsigned long long)proto);
		}
		assert_int_equal(eval_args(f, n, creators[c], AF_NETLINK, SOCK_RAW, 1ULL << 32, 0),
				 RET_ERRNO(EAFNOSUPPORT));
		assert_int_equal(eval_args(f, n, creators[c], (uint64_t)-1, SOCK_RAW, 0, 0), RET_ERRNO(EAFNOSUPPORT));
	}
	free(f);
}

/* The policy for AF_INET/AF_INET6 (and AF_UNIX), written out the plain way
 * to check the hand-written BPF against. */
static uint32_t inet_policy(int fam, unsigned type, uint64_t proto)
{
	if (proto >> 32)
		return RET_ERRNO(EPROTONOSUPPORT);
	if (fam == AF_UNIX)
		return proto == 0 || proto == PF_UNIX ? SECCOMP_RET_ALLOW : RET_ERRNO(EPROTONOSUPPORT);
	switch (type & 0xf) {
	case SOCK_RAW:
		return SECCOMP_RET_ALLOW; /* CAP_NET_RAW decides; no module lookup */
	case SOCK_STREAM:
		return proto == 0 || proto == IPPROTO_TCP ? SECCOMP_RET_ALLOW : RET_ERRNO(EPROTONOSUPPORT);
	case SOCK_DGRAM:
		if (proto == 0 || proto == IPPROTO_UDP || (fam == AF_INET && proto == IPPROTO_ICMP) ||
		    (fam == AF_INET6 && proto == IPPROTO_ICMPV6))
			return SECCOMP_RET_ALLOW;
		return RET_ERRNO(EPROTONOSUPPORT);
	default:
		return RET_ERRNO(ESOCKTNOSUPPORT);
	}
}

/* Every type (with and without SOCK_CLOEXEC|SOCK_NONBLOCK and upper-half
 * garbage) and protocols 0-299 plus the interesting large ones, for each
 * family with a protocol rule; SCTP (132), DCCP (33), L2TP (115), MPTCP
 * (262) and UDP-Lite (136) among them. */
static void test_bpf_socket_protocols(void **state)
{
	size_t n;
	struct sock_filter *f = export_filter(&n);
	static const int fams[] = { AF_UNIX, AF_INET, AF_INET6 };
	static const uint64_t big[] = { 255, 256, 262, 0x7fffffff, 0x80000000, 0xffffffff, 1ULL << 32,
					(1ULL << 32) | IPPROTO_TCP, (1ULL << 32) | IPPROTO_SCTP, ~0ULL };
	static const uint64_t type_bits[] = { 0, SOCK_CLOEXEC | SOCK_NONBLOCK, 1ULL << 40 };
	static const int creators[] = { SYS_socket, SYS_socketpair };
	for (size_t c = 0; c < 2; c++)
		for (size_t fi = 0; fi < 3; fi++)
			for (unsigned type = 0; type < 16; type++)
				for (size_t tb = 0; tb < 3; tb++)
					for (size_t pi = 0; pi < 300 + HU_ARRAY_LEN(big); pi++) {
						uint64_t proto = pi < 300 ? pi : big[pi - 300];
						uint64_t t = type | type_bits[tb];
						uint32_t got = eval_args(f, n, creators[c], fams[fi], t, proto, 0);
						uint32_t want = inet_policy(fams[fi], type, proto);
						if (got != want)
							fail_msg("syscall %d (%d, %#llx, %#llx): got %#x, want %#x",
								 creators[c], fams[fi], (unsigned long long)t,
								 (unsigned long long)proto, got, want);
					}
	free(f);
}

/* RLIMIT_CORE cannot change (setting it is a success without effect, EINVAL
 * when the old value is asked for too); nothing sets PID 1's limits;
 * io_setup is absent. Everything else about limits is left alone. */
static void test_bpf_limits_and_aio(void **state)
{
	size_t n;
	struct sock_filter *f = export_filter(&n);
	const uint64_t ptr = 0x7ffc0000;
	const uint32_t ignored = RET_ERRNO(0);
	for (uint64_t res = 0; res < 16; res++) {
		bool core = res == RLIMIT_CORE;
		assert_int_equal(eval_args(f, n, SYS_setrlimit, res, ptr, 0, 0), core ? ignored : SECCOMP_RET_ALLOW);
		assert_int_equal(eval_args(f, n, SYS_prlimit64, 0, res, ptr, 0), core ? ignored : SECCOMP_RET_ALLOW);
		assert_int_equal(eval_args(f, n, SYS_prlimit64, 0, res, ptr, ptr),
				 core ? RET_ERRNO(EINVAL) : SECCOMP_RET_ALLOW);
		assert_int_equal(eval_args(f, n, SYS_prlimit64, 42, res, ptr, 0), core ? ignored : SECCOMP_RET_ALLOW);
		/* reading, PID 1's included */
		assert_int_equal(eval_args(f, n, SYS_prlimit64, 0, res, 0, ptr), SECCOMP_RET_ALLOW);
		assert_int_equal(eval_args(f, n, SYS_prlimit64, 1, res, 0, ptr), SECCOMP_RET_ALLOW);
		/* a new limit for PID 1: refused (RLIMIT_CORE by its own rule,
		 * which also leaves it unchanged) */
		uint32_t pid1 = eval_args(f, n, SYS_prlimit64, 1, res, ptr, 0);
		if (pid1 != RET_ERRNO(EPERM) && !(core && pid1 == ignored))
			fail_msg("prlimit64(1, %llu, new): %#x", (unsigned long long)res, pid1);
		assert_true(eval_args(f, n, SYS_prlimit64, (1ULL << 32) | 1, res, ptr, 0) != SECCOMP_RET_ALLOW);
		assert_true(eval_args(f, n, SYS_prlimit64, 1, res, 1ULL << 32, 0) != SECCOMP_RET_ALLOW);
	}
	/* the kernel reads the resource as an unsigned int */
	assert_int_equal(eval_args(f, n, SYS_setrlimit, (1ULL << 32) | RLIMIT_CORE, ptr, 0, 0), ignored);
	assert_int_equal(eval_args(f, n, SYS_prlimit64, 0, (1ULL << 32) | RLIMIT_CORE, ptr, 0), ignored);
	assert_int_equal(eval_args(f, n, SYS_prlimit64, 0, RLIMIT_CORE, ptr, 1ULL << 32), RET_ERRNO(EINVAL));
	assert_int_equal(eval_args(f, n, SYS_io_setup, 1, ptr, 0, 0), RET_ERRNO(ENOSYS));
	assert_int_equal(eval_args(f, n, SYS_io_setup, 0, 0, 0, 0), RET_ERRNO(ENOSYS));
	assert_int_equal(eval_args(f, n, SYS_io_submit, 0, 0, 0, 0), SECCOMP_RET_ALLOW);
	free(f);
}

/* Every syscall number the filter answers, against the documented policy:
 * nothing outside the known list is denied by accident. */
static void test_bpf_unreviewed_range(void **state)
{
	size_t n;
	struct sock_filter *f = export_filter(&n);
	for (int nr = 451; nr < 470; nr++) {
		uint32_t want = nr == NR_OPEN_TREE_ATTR ? RET_ERRNO(EPERM) : SECCOMP_RET_ALLOW;
		if (eval(f, n, AUDIT_ARCH_X86_64, nr, 0, 0) != want)
			fail_msg("syscall %d", nr);
	}
	for (int nr = 470; nr <= 1023; nr++)
		if (eval(f, n, AUDIT_ARCH_X86_64, nr, 0, 0) != RET_ERRNO(ENOSYS))
			fail_msg("syscall %d not ENOSYS", nr);
	free(f);
}

/* The kernel checks, converts and JITs the program again for every
 * sandbox: its length is a cost of every create (1056 instructions cost
 * ~4% of a create's CPU when the unreviewed range was one rule per number). */
static void test_bpf_program_size(void **state)
{
	size_t n;
	struct sock_filter *f = export_filter(&n);
	if (n >= 256)
		fail_msg("the filter is %zu instructions long", n);
	free(f);
}

static void test_allowed_process_ops(void **state)
{
	EXPECT(p_fork_exec_true, 0);
	EXPECT(p_posix_spawn, 0);
	EXPECT(p_pthread, 0);
	EXPECT(p_plain_clone, 0);
	EXPECT(p_setresuid, 0);
}

static void test_allowed_io_and_sockets(void **state)
{
	EXPECT(p_file_io, 0);
	EXPECT(p_af_inet, 0);
	EXPECT(p_af_inet6, 0);
	EXPECT(p_af_unix, 0);
	EXPECT(p_inet_tcp, 0);
	EXPECT(p_inet6_udp, 0);
	EXPECT(p_unix_pf_unix, 0);
	EXPECT(p_socketpair_unix, 0);
	EXPECT(p_netlink_route, 0);
	EXPECT(p_pty_ioctls, 0);
	EXPECT(p_rlimits_read_and_own, 0);
}

static void test_allowed_personality(void **state)
{
	EXPECT(p_pers_query, 0);
	EXPECT(p_pers_linux, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_denied_admin),
		cmocka_unit_test(test_denied_attack_surface),
		cmocka_unit_test(test_denied_cross_process),
		cmocka_unit_test(test_denied_mounts_and_namespaces),
		cmocka_unit_test(test_denied_clone_namespaces),
		cmocka_unit_test(test_denied_tty_injection),
		cmocka_unit_test(test_denied_personality),
		cmocka_unit_test(test_denied_socket_families),
		cmocka_unit_test(test_denied_socket_protocols),
		cmocka_unit_test(test_denied_host_counters_and_limits),
		cmocka_unit_test(test_unreviewed_syscall_enosys),
		cmocka_unit_test(test_i386_syscall_fails),
		cmocka_unit_test(test_x32_syscall_fails),
		cmocka_unit_test(test_bpf_foreign_arch_killed),
		cmocka_unit_test(test_bpf_personality_values),
		cmocka_unit_test(test_bpf_socket_families),
		cmocka_unit_test(test_bpf_socket_protocols),
		cmocka_unit_test(test_bpf_limits_and_aio),
		cmocka_unit_test(test_bpf_unreviewed_range),
		cmocka_unit_test(test_bpf_program_size),
		cmocka_unit_test(test_allowed_process_ops),
		cmocka_unit_test(test_allowed_io_and_sockets),
		cmocka_unit_test(test_allowed_personality),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
