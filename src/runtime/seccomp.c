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
 *  - ENOSYS for clone3 and for syscall numbers newer than the ones reviewed
 *    here: ENOSYS means "this kernel does not have it", which is the one errno
 *    libcs and runtimes treat as "fall back to the older call" (glibc retries
 *    clone3 as clone; newer *at2/fsxattr calls fall back likewise).
 *  - EAFNOSUPPORT for socket families/netlink protocols outside the allowed
 *    set: the kernel's own answer for a family that is not compiled in, which
 *    probing code (libaudit, python's socket module users) treats as "absent".
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
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/audit.h>
#include <stddef.h>

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
 * prologue below: as 554 libseccomp rules (one per number) it made the
 * program 1052 instructions long, which the kernel checks, converts and
 * JITs again for every sandbox. */
#define HU_UNREVIEWED_FIRST 470
#define X32_SYSCALL_BIT 0x40000000u

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

static int add_socket_rules(scmp_filter_ctx ctx, hu_err *err)
{
	/*
	 * Allowed families: AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (ip, ss,
	 * getifaddrs). Everything else is refused with EAFNOSUPPORT, notably
	 * AF_PACKET (raw frames; several userns-reachable root exploits),
	 * AF_KEY, AF_VSOCK (talks to the hypervisor/host), AF_ALG (kernel
	 * crypto API), AF_BLUETOOTH, AF_CAN, AF_XDP, AF_RDS, AF_TIPC, ...
	 *
	 * As above, rules are a union of single comparisons. Every family
	 * above AF_NETLINK (16) is one rule; the 64-bit comparison also catches
	 * values with garbage in the upper half (the kernel truncates to int,
	 * so 0x100000011 would otherwise be AF_PACKET), and negative ints
	 * (sign-extended, hence huge). The gaps below 16 are listed one by one.
	 */
	static const int low_denied[] = { 0, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15 };
	const uint32_t act = SCMP_ACT_ERRNO(EAFNOSUPPORT);

	/* socketpair() creates sockets of a family too (and runs that family's
	 * code): the same family rules apply to it. */
	static const int creators[] = { SCMP_SYS(socket), SCMP_SYS(socketpair) };
	for (size_t c = 0; c < HU_ARRAY_LEN(creators); c++) {
		ADD(ctx, act, creators[c], 1, SCMP_A0(SCMP_CMP_GT, AF_NETLINK));
		for (size_t i = 0; i < HU_ARRAY_LEN(low_denied); i++)
			ADD(ctx, act, creators[c], 1, SCMP_A0(SCMP_CMP_EQ, (uint64_t)low_denied[i]));
	}

	/*
	 * Within AF_NETLINK only NETLINK_ROUTE (0: ip, getifaddrs) and
	 * NETLINK_SOCK_DIAG (4: ss) are allowed. In particular this keeps
	 * nf_tables (NETLINK_NETFILTER), the source of most 2022-2024
	 * unprivileged-userns root exploits, and xfrm, audit, uevent and
	 * generic netlink out of reach. libaudit treats EAFNOSUPPORT as
	 * "no audit in this kernel" and carries on.
	 */
	ADD(ctx, act, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
	    SCMP_A2(SCMP_CMP_GT, NETLINK_SOCK_DIAG));
	for (uint64_t proto = 1; proto < NETLINK_SOCK_DIAG; proto++)
		ADD(ctx, act, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
		    SCMP_A2(SCMP_CMP_EQ, proto));
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
	    add_ioctl_rules(ctx, err) < 0 ||
	    add_socket_rules(ctx, err) < 0)
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

/*
 * The hand-written prologue, run before libseccomp's program. Two checks are
 * one or two comparisons in plain BPF and hundreds of instructions as
 * libseccomp rules (one syscall number per rule, one comparison per
 * argument):
 *  - the unreviewed range (HU_UNREVIEWED_FIRST and up) answers ENOSYS;
 *  - personality(): only PER_LINUX (0) and the query 0xffffffff pass. Any
 *    other persona (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, MMAP_PAGE_ZERO, ...)
 *    weakens memory protections and gets EPERM, and so does garbage in the
 *    upper 32 bits (the kernel ignores it; we refuse it rather than reason
 *    about it).
 * It decides only for native x86_64 numbers below the x32 bit and allows
 * nothing itself: everything else falls through to libseccomp's program,
 * which starts with its own architecture check (foreign ABIs are killed
 * there) and holds every other rule. Jump offsets count from the next
 * instruction.
 */
#define LD_ABS(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(off))
#define JEQ(k, jt, jf) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(k), jt, jf)
#define JGE(k, jt, jf) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)(k), jt, jf)
#define ARG0_LO offsetof(struct seccomp_data, args)
#define ARG0_HI (ARG0_LO + 4) /* x86_64 is little-endian */
#define PROLOGUE_LEN 13       /* libseccomp's program starts at index 13 */

static const struct sock_filter prologue[PROLOGUE_LEN] = {
	/*  0 */ LD_ABS(offsetof(struct seccomp_data, arch)),
	/*  1 */ JEQ(AUDIT_ARCH_X86_64, 0, 11),      /* foreign: -> 13 */
	/*  2 */ LD_ABS(offsetof(struct seccomp_data, nr)),
	/*  3 */ JGE(X32_SYSCALL_BIT, 9, 0),         /* x32: -> 13 */
	/*  4 */ JGE(HU_UNREVIEWED_FIRST, 6, 0),     /* unreviewed: -> 11 */
	/*  5 */ JEQ(SYS_personality, 0, 7),         /* other: -> 13 */
	/*  6 */ LD_ABS(ARG0_HI),
	/*  7 */ JEQ(0, 0, 4),                       /* upper garbage: -> 12 */
	/*  8 */ LD_ABS(ARG0_LO),
	/*  9 */ JEQ(0, 3, 0),                       /* PER_LINUX: -> 13 */
	/* 10 */ JEQ(0xffffffffu, 2, 1),             /* query: -> 13, else -> 12 */
	/* 11 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	/* 12 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
};

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
	off_t size = lseek(fd, 0, SEEK_END);
	off_t n = size / (off_t)sizeof(struct sock_filter);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 || PROLOGUE_LEN + n > BPF_MAXINSNS)
		return hu_err_set(err, EINVAL, "seccomp: exported program has %lld bytes", (long long)size);
	out->insns = malloc(sizeof(prologue) + (size_t)size);
	if (!out->insns)
		return hu_err_set(err, ENOMEM, "seccomp: program");
	memcpy(out->insns, prologue, sizeof(prologue));
	if (pread(fd, out->insns + PROLOGUE_LEN, (size_t)size, 0) != size) {
		hu_seccomp_prog_free(out);
		return hu_err_sys(err, "seccomp: read program");
	}
	out->len = (unsigned short)(PROLOGUE_LEN + n);
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
