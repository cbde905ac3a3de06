/*
 * The sandbox seccomp filter (libseccomp).
 *
 * Policy: default ALLOW with explicit denies. The workloads are arbitrary
 * python/node/bash programs plus whatever they pip/npm/apt install, so an
 * allowlist would break in ways nobody can predict; instead every syscall that
 * (a) only makes sense for the host's administrator, (b) reaches kernel code
 * that has a long record of privilege-escalation bugs, or (c) lets a process
 * escape or inspect across the namespace/process boundaries hutch relies on,
 * is denied. docs/security.md has the same list as a table, with reasons.
 *
 * Errno choices (why not simply kill):
 *  - EPERM for denied syscalls: it is what the kernel itself answers when a
 *    capability is missing, so programs already handle it ("operation not
 *    permitted") instead of crashing on a SIGSYS.
 *  - ENOSYS for clone3, io_setup and for syscall numbers newer than the ones
 *    reviewed here: ENOSYS means "this kernel does not have it", which is the
 *    one errno libcs and runtimes treat as "fall back to the older call"
 *    (glibc retries clone3 as clone; libaio users fall back to threads;
 *    newer *at2/fsxattr calls fall back likewise).
 *  - EAFNOSUPPORT for socket families/netlink protocols outside the allowed
 *    set: the kernel's own answer for a family that is not compiled in, which
 *    probing code (libaudit, python's socket module users) treats as "absent";
 *    EPROTONOSUPPORT / ESOCKTNOSUPPORT for IP protocols and socket types
 *    outside it (seccomp_prologue.c, where the socket rules live).
 *  - Success without effect for setting RLIMIT_CORE (see add_rlimit_rules).
 *  - Foreign ABIs (i386 `int $0x80`, x32) kill the whole process: only a
 *    deliberate filter-evasion attempt or a foreign binary makes such calls,
 *    and a dead process is the unambiguous outcome for both.
 *
 * This file is reviewed for x86_64 only (raw syscall numbers below, and the
 * x32/i386 reasoning); other architectures need their own review.
 */
#include "runtime/seccomp.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "runtime/seccomp_internal.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

#if !defined(__x86_64__)
#error "hutch's seccomp policy has only been reviewed for x86_64"
#endif

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* Syscalls denied outright with EPERM. `optional` marks names that do not
 * exist on x86_64 or that an older libseccomp may not know; every other name
 * must resolve, so an old libseccomp can never silently produce a filter with
 * a hole in it (the default action is ALLOW). */
struct hu_deny {
	const char *name;
	bool optional;
};

static const struct hu_deny deny_eperm[] = {
	/* Host administration: loading kernel code, rebooting, swap, process
	 * accounting, the system clock, the kernel log, quotas, legacy and
	 * raw-hardware calls. None has a legitimate use inside a sandbox, and
	 * most are reachable only through bugs since root here is root of a
	 * user namespace, not of the host. */
	{ "init_module", false },
	{ "finit_module", false },
	{ "delete_module", false },
	{ "create_module", true },
	{ "get_kernel_syms", true },
	{ "query_module", true },
	{ "kexec_load", false },
	{ "kexec_file_load", false },
	{ "reboot", false },
	{ "swapon", false },
	{ "swapoff", false },
	{ "acct", false },
	{ "settimeofday", false },
	{ "clock_settime", false },
	{ "clock_adjtime", false },
	{ "adjtimex", false },
	{ "syslog", false },
	{ "quotactl", false },
	{ "quotactl_fd", false },
	{ "lookup_dcookie", false },
	{ "nfsservctl", false },
	{ "vhangup", false },
	{ "iopl", false },
	{ "ioperm", false },
	{ "pciconfig_read", true }, /* not on x86_64 */
	{ "pciconfig_write", true },
	{ "pciconfig_iobase", true },
	{ "uselib", false },   /* a.out loader, legacy attack surface */
	{ "_sysctl", false },  /* removed from the kernel; deny if it comes back */

	/* Kernel subsystems with a long record of local privilege escalations
	 * that untrusted code does not need: eBPF, perf, userfaultfd (the
	 * classic race-widening primitive), io_uring, the keyring, fanotify,
	 * and file handles (open_by_handle_at is the "shocker" container
	 * escape; name_to_handle_at is its other half). */
	{ "bpf", false },
	{ "perf_event_open", false },
	{ "userfaultfd", false },
	{ "io_uring_setup", false },
	{ "io_uring_enter", false },
	{ "io_uring_register", false },
	{ "keyctl", false },
	{ "add_key", false },
	{ "request_key", false },
	{ "fanotify_init", false },
	{ "name_to_handle_at", false },
	{ "open_by_handle_at", false },

	/* Cross-process inspection and tampering. Debuggers (gdb, strace) do
	 * not work inside a sandbox: ptrace is the single most common
	 * ingredient of sandbox escapes and would let code read the memory of
	 * every process of the same uid. The calls below are ptrace-equivalent
	 * (they use the same access check) and are denied with it. */
	{ "ptrace", false },
	{ "process_vm_readv", false },
	{ "process_vm_writev", false },
	{ "process_madvise", false },
	{ "pidfd_getfd", false },
	{ "kcmp", false },

	/* The filesystem view and the namespaces are set up by hutch before
	 * this filter is loaded and must not change afterwards: no mounts
	 * (old or new mount API), no new namespaces, no joining others.
	 * chroot is denied too: the sandbox root is the pivot_root'ed tree,
	 * no workload we run needs a nested root, and a process with its own
	 * root confuses every path the runtime resolves through
	 * /proc/<pid>/root. (CAP_SYS_CHROOT stays in the root capability set
	 * only because caps.h documents it; it is inert under this filter.) */
	{ "mount", false },
	{ "umount2", false },
	{ "pivot_root", false },
	{ "chroot", false },
	{ "unshare", false },
	{ "setns", false },
	{ "open_tree", false },
	{ "move_mount", false },
	{ "fsopen", false },
	{ "fsconfig", false },
	{ "fsmount", false },
	{ "fspick", false },
	{ "mount_setattr", false },
};

/*
 * Syscalls newer than libseccomp 2.5.4's tables. Their x86_64 numbers are
 * fixed by the kernel ABI, so they are added by number when libseccomp does
 * not know the name. Reviewed up to Linux 6.19 (listns = 470):
 *   457 statmount, 458 listmount      allowed (read-only mount info, own ns)
 *   459-461 lsm_*_self_attr, modules  allowed (own attributes only)
 *   462 mseal                         allowed (hardening for the caller)
 *   463-466 *xattrat                  allowed (plain file operations)
 *   467 open_tree_attr                DENIED (mount API, see above)
 *   468-469 file_getattr/setattr      allowed (plain file operations)
 *   470 listns                        ENOSYS via the range below
 */
struct hu_deny_nr {
	const char *name;
	int nr;
};

static const struct hu_deny_nr deny_eperm_nr[] = {
	{ "open_tree_attr", 467 },
};

/* Every number from here up answers ENOSYS: a syscall a future kernel adds
 * is allowed by a default-allow filter unless it is stopped here, and ENOSYS
 * makes well-behaved callers fall back. Numbers above 1023 do not exist on
 * x86_64 (the kernel would answer ENOSYS itself); x32 numbers carry bit 30
 * and are killed as a foreign ABI. The check is one comparison in the
 * prologue (seccomp_prologue.c, HU_SECCOMP_UNREVIEWED_FIRST): as 554
 * libseccomp rules (one per number) it made the program 1052 instructions
 * long, which the kernel checks, converts and JITs again for every sandbox. */

/* Namespace-creating clone() flags. CLONE_NEWTIME is only honoured by clone3
 * and unshare (in clone() that bit belongs to the exit signal, where 0x80 is
 * never a valid value), both denied outright; it is listed for completeness. */
static const uint64_t clone_ns_flags[] = {
	CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET,
	CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWCGROUP, CLONE_NEWTIME,
};

/* Terminal ioctls. TIOCSTI pushes bytes into a terminal's input queue and
 * TIOCLINUX (selection paste) does the same on a VT: whoever shares the
 * terminal (an attached `hutch exec -t` session) would run them as typed
 * input. TIOCSETD switches line disciplines, which no workload needs and
 * which has been a steady source of kernel bugs (n_gsm, n_hdlc). */
static const uint32_t deny_ioctls[] = { TIOCSTI, TIOCLINUX, TIOCSETD };

#define ADD(ctx, act, nr, ...)                                                        \
	do {                                                                          \
		int rc_ = seccomp_rule_add((ctx), (act), (nr), __VA_ARGS__);          \
		if (rc_ < 0)                                                          \
			return hu_err_set(err, -rc_, "seccomp: add rule for syscall %d", \
					  (int)(nr));                                 \
	} while (0)

static int add_named_denies(scmp_filter_ctx ctx, hu_err *err)
{
	for (size_t i = 0; i < HU_ARRAY_LEN(deny_eperm); i++) {
		int nr = seccomp_syscall_resolve_name(deny_eperm[i].name);
		if (nr < 0) {
			/* Negative: unknown to libseccomp, or a pseudo number for a
			 * syscall that x86_64 does not have. */
			if (deny_eperm[i].optional)
				continue;
			return hu_err_set(err, ENOSYS, "seccomp: libseccomp does not know syscall %s",
					  deny_eperm[i].name);
		}
		ADD(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	for (size_t i = 0; i < HU_ARRAY_LEN(deny_eperm_nr); i++) {
		int nr = seccomp_syscall_resolve_name(deny_eperm_nr[i].name);
		if (nr < 0)
			nr = deny_eperm_nr[i].nr;
		ADD(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	return 0;
}

static int add_clone_rules(scmp_filter_ctx ctx, hu_err *err)
{
	/* clone(flags, ...): flags is argument 0 and a register, so the filter
	 * can see it. One rule per flag: any namespace bit set -> EPERM. The
	 * kernel only looks at the low 32 bits, where all these bits live. */
	for (size_t i = 0; i < HU_ARRAY_LEN(clone_ns_flags); i++)
		ADD(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i], clone_ns_flags[i]));

	/* clone3(struct clone_args *, size): the flags live in memory, which
	 * seccomp cannot read, so clone3 is refused as a whole. ENOSYS (not
	 * EPERM) because glibc's pthread_create/posix_spawn then fall back to
	 * clone, which is filtered above. */
	ADD(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	return 0;
}

static int add_ioctl_rules(scmp_filter_ctx ctx, hu_err *err)
{
	/* The kernel truncates the request to 32 bits (unsigned int cmd), so
	 * compare only the low 32 bits: TIOCSTI | (1UL << 32) must not slip
	 * through (the bypass behind CVE-2019-10063). */
	for (size_t i = 0; i < HU_ARRAY_LEN(deny_ioctls); i++)
		ADD(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
		    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, deny_ioctls[i]));
	return 0;
}

/*
 * Limits a sandbox must not be able to change:
 *  - RLIMIT_CORE is 1 (set in sandbox_child.c). A piped core_pattern runs
 *    its helper on the host, as host root, whatever the crashing process's
 *    RLIMIT_CORE is, except for exactly 1: the kernel's own guard against
 *    recursive dumps. 1 is also below the smallest core file the kernel
 *    writes, so no core file is written either. Lowering it to 0 would bring
 *    the pipe back, and seccomp cannot tell lowering from raising (the new
 *    value is in memory), so no call changes it. A call that sets it
 *    succeeds without doing anything: the sanitizer runtimes (ASan, TSan,
 *    MSan) lower RLIMIT_CORE at start and die if that fails, gpg and gpgsm
 *    die on anything but EINVAL, and a process that lowers it gets what it
 *    wants (no core, no helper). Only a caller that
 *    raises it is misled, and the kernel would refuse that above the hard
 *    limit of 1 anyway. prlimit64 that also asks for the old value gets
 *    EINVAL instead: a faked success would leave it uninitialised.
 *  - Another process's limits: root inside is the same uid as hutch-init,
 *    so prlimit64(1, RLIMIT_CPU, {1, 1}) would have the kernel kill PID 1
 *    (and with it the sandbox) after one second of CPU, and RLIMIT_NOFILE
 *    or RLIMIT_NPROC would leave it unable to accept a connection or start
 *    a command. PID 1 is hutch-init in every sandbox (no nested PID
 *    namespaces). Reading its limits (new limit NULL) stays allowed.
 * pid and resource are ints to the kernel: compared on their low 32 bits.
 */
static int add_rlimit_rules(scmp_filter_ctx ctx, hu_err *err)
{
	const struct scmp_arg_cmp core = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, RLIMIT_CORE);

	ADD(ctx, SCMP_ACT_ERRNO(0), SCMP_SYS(setrlimit), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, RLIMIT_CORE));
	ADD(ctx, SCMP_ACT_ERRNO(0), SCMP_SYS(prlimit64), 3, core, SCMP_A2(SCMP_CMP_NE, 0), SCMP_A3(SCMP_CMP_EQ, 0));
	ADD(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(prlimit64), 3, core, SCMP_A2(SCMP_CMP_NE, 0),
	    SCMP_A3(SCMP_CMP_NE, 0));
	ADD(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 2, SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, 1),
	    SCMP_A2(SCMP_CMP_NE, 0));
	return 0;
}

/*
 * Host-wide counters that no cgroup accounts for. io_setup (native AIO)
 * reserves events against fs.aio-max-nr, one number for the whole host:
 * one sandbox creating contexts until it is reached makes io_setup fail
 * with EAGAIN for every other sandbox and for the host's databases. One
 * io_setup(65536) takes the default limit whole (for 4 MiB of ring); a cap
 * on nr_events would only change how many calls that takes (the counter
 * counts what each call asks for, and a one-event context costs a few
 * KiB), so io_setup is refused: ENOSYS, the answer of a kernel built
 * without AIO, on which libaio users (MySQL, MariaDB, fio) fall back to
 * their thread-pool I/O. The other aio calls need a context and fail
 * without one. POSIX aio (glibc's aio_read) uses threads, not these.
 */
static int add_host_counter_rules(scmp_filter_ctx ctx, hu_err *err)
{
	ADD(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(io_setup), 0);
	return 0;
}

static void release_ctx(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

static int build(scmp_filter_ctx ctx, hu_err *err)
{
	int rc;

	/* Return the kernel's errno from seccomp_load() instead of
	 * libseccomp's generic -ECANCELED. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	if (rc < 0)
		return hu_err_set(err, -rc, "seccomp: set SYSRAWRC");

	/* Foreign ABIs. The filter contains only the native x86_64 arch, so an
	 * i386 syscall (int $0x80, AUDIT_ARCH_I386) fails the arch check and
	 * gets this action. x32 syscalls carry AUDIT_ARCH_X86_64 too, but
	 * libseccomp emits "nr >= __X32_SYSCALL_BIT -> bad-arch action" for an
	 * x86_64 filter without the x32 arch, so they land here as well
	 * (verified on 2.5.4 by exporting the BPF; test_seccomp's
	 * test_bpf_foreign_arch_killed checks it on every build). The native
	 * arch is never removed: seccomp_arch_remove() would drop the rules. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc < 0)
		return hu_err_set(err, -rc, "seccomp: set bad-arch action");

	/* The caller already set no_new_privs; leaving libseccomp's NNP
	 * attribute on (its default) makes the load self-sufficient. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1);
	if (rc < 0)
		return hu_err_set(err, -rc, "seccomp: set NNP");

	/* a binary search over syscall numbers keeps the per-call cost
	 * logarithmic instead of a linear scan */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0)
		return hu_err_set(err, -rc, "seccomp: set optimize level");

	if (add_named_denies(ctx, err) < 0 || add_clone_rules(ctx, err) < 0 ||
	    add_ioctl_rules(ctx, err) < 0 || add_rlimit_rules(ctx, err) < 0 ||
	    add_host_counter_rules(ctx, err) < 0)
		return -1;
	return 0;
}

/* The same steps a sandbox takes (compile once, install the BPF), so that
 * whoever loads the filter this way tests exactly what sandboxes run. */
int hu_seccomp_load(hu_err *err)
{
	struct hu_seccomp_prog prog;

	if (hu_seccomp_compile(&prog, err) < 0)
		return -1;
	int rc = hu_seccomp_install(&prog, err);
	hu_seccomp_prog_free(&prog);
	return rc;
}

/* libseccomp's part of the program, as classic BPF, into fd. */
static int export_rules(int fd, hu_err *err)
{
	__attribute__((cleanup(release_ctx))) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return hu_err_set(err, ENOMEM, "seccomp: init filter");
	if (build(ctx, err) < 0)
		return -1;
	int rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0)
		return hu_err_set(err, -rc, "seccomp: export filter");
	return 0;
}

int hu_seccomp_compile(struct hu_seccomp_prog *out, hu_err *err)
{
	out->insns = NULL;
	out->len = 0;
	_cleanup_close_ int fd = memfd_create("hutch-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return hu_err_sys(err, "seccomp: memfd");
	if (export_rules(fd, err) < 0)
		return -1;
	const size_t plen = hu_seccomp_prologue_len;
	/* every position of the prologue is written (a gap would be a zero
	 * instruction, "load 0", in the middle of its jumps) */
	for (size_t i = 0; i < plen; i++)
		if (hu_seccomp_prologue[i].code == 0 && hu_seccomp_prologue[i].k == 0)
			return hu_err_set(err, EINVAL, "seccomp: prologue instruction %zu is missing", i);
	off_t size = lseek(fd, 0, SEEK_END);
	off_t n = size / (off_t)sizeof(struct sock_filter);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 || (off_t)plen + n > BPF_MAXINSNS)
		return hu_err_set(err, EINVAL, "seccomp: exported program has %lld bytes", (long long)size);
	out->insns = malloc(plen * sizeof(struct sock_filter) + (size_t)size);
	if (!out->insns)
		return hu_err_set(err, ENOMEM, "seccomp: program");
	memcpy(out->insns, hu_seccomp_prologue, plen * sizeof(struct sock_filter));
	if (pread(fd, out->insns + plen, (size_t)size, 0) != size) {
		hu_seccomp_prog_free(out);
		return hu_err_sys(err, "seccomp: read program");
	}
	out->len = (unsigned short)(plen + (size_t)n);
	return 0;
}

int hu_seccomp_export_bpf(int fd, hu_err *err)
{
	struct hu_seccomp_prog prog;

	if (hu_seccomp_compile(&prog, err) < 0)
		return -1;
	size_t len = prog.len * sizeof(*prog.insns);
	int rc = hu_write_all(fd, prog.insns, len);
	if (rc < 0)
		hu_err_sys(err, "seccomp: write program");
	hu_seccomp_prog_free(&prog);
	return rc;
}

void hu_seccomp_prog_free(struct hu_seccomp_prog *prog)
{
	free(prog->insns);
	prog->insns = NULL;
	prog->len = 0;
}
