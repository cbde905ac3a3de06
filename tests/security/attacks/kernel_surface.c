/* ATTACK: reach the high-risk kernel subsystems and host administration
 * calls that a sandbox escape usually starts from.     (run as root and user)
 *
 * Tries: bpf (map create, prog load), perf_event_open (a software counter
 * on itself, which the kernel alone would allow), userfaultfd (user-mode
 * only, which the kernel alone would allow), io_uring_setup/enter/register,
 * keyctl/add_key/request_key, syslog, init/finit/delete_module, kexec_load,
 * kexec_file_load, reboot, swapon/swapoff, acct, settimeofday(NULL, NULL),
 * clock_settime, clock_adjtime/adjtimex (read-only modes 0, which the kernel
 * alone would allow), iopl/ioperm, fanotify_init, name_to_handle_at and
 * open_by_handle_at ("shocker"), quotactl, vhangup, lookup_dcookie, uselib,
 * personality(READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, PER_LINUX32, upper-bit
 * garbage); sockets of the families that root exploits use (AF_PACKET, also
 * with garbage in the upper 32 bits of the family; AF_VSOCK, AF_ALG, AF_KEY,
 * AF_XDP, AF_TIPC, AF_RDS, AF_CAN, AF_BLUETOOTH; netlink NETFILTER, XFRM,
 * AUDIT, KOBJECT_UEVENT, GENERIC, SOCK_DIAG), raw IP sockets; IP
 * protocols whose socket() makes the kernel look for a module (SCTP as
 * stream and seqpacket, DCCP, L2TP, unknown numbers, upper-bit garbage),
 * types the kernel turns into something else (AF_INET with SOCK_PACKET is
 * an AF_PACKET socket to it) and the built-in ones nobody here needs (MPTCP,
 * UDP-Lite), a protocol of the other IP family (ICMPv6 on AF_INET), AF_UNIX
 * protocols other than 0; socketpair() of every family, and of netlink and
 * IP with those protocols (socketpair runs the family's create code too);
 * io_setup (native AIO: fs.aio-max-nr is one counter for the whole host);
 * opening ptys until it fails (kernel.pty.max is host-wide too);
 * syscall numbers above the last reviewed one (470 listns, 500, 1023).
 *
 * Why it must fail: each of these is denied by the seccomp filter (EPERM;
 * EAFNOSUPPORT for socket families and netlink protocols, EPROTONOSUPPORT
 * for IP and unix protocols, ESOCKTNOSUPPORT for IP socket types; ENOSYS for
 * io_setup and unreviewed numbers); raw IP sockets need CAP_NET_RAW, which
 * is not granted. On a kernel without SCTP or DCCP the kernel gives the same
 * answers (and would first ask modprobe for the module);
 * tests/unit/runtime/test_seccomp.c proves on the BPF that the filter is
 * what answers. MPTCP, UDP-Lite and NETLINK_SOCK_DIAG are built into most
 * kernels: there only the filter refuses them. ptys stop at the cap of the
 * sandbox's own devpts instance (max=128), with ENOSPC.
 *
 * Expected: the errno listed with each call below. Every call is made with
 * arguments that would be harmless even if it got through.
 */
#include "lib.h"

#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <sys/fanotify.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/timex.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <time.h>

#ifndef AF_XDP
#define AF_XDP 44
#endif

int main(void)
{
	/* bpf */
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	EXPECT_SYS("bpf(BPF_MAP_CREATE)", EPERM, 0, SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	attr.insns = (unsigned long)prog;
	attr.insn_cnt = 2;
	attr.license = (unsigned long)"GPL";
	EXPECT_SYS("bpf(BPF_PROG_LOAD)", EPERM, 0, SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));

	/* perf: a software clock on ourselves */
	struct perf_event_attr pe;
	memset(&pe, 0, sizeof(pe));
	pe.type = PERF_TYPE_SOFTWARE;
	pe.size = sizeof(pe);
	pe.config = PERF_COUNT_SW_CPU_CLOCK;
	pe.exclude_kernel = 1;
	pe.exclude_hv = 1;
	EXPECT_SYS("perf_event_open(SW_CPU_CLOCK, self)", EPERM, 0, SYS_perf_event_open, &pe, 0, -1, -1, 0);
	pe.exclude_kernel = 0;
	EXPECT_SYS("perf_event_open(kernel, all cpus, cpu 0)", EPERM, 0, SYS_perf_event_open, &pe, -1, 0, -1, 0);

	EXPECT_SYS("userfaultfd(UFFD_USER_MODE_ONLY)", EPERM, 0, SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
	EXPECT_SYS("userfaultfd(0)", EPERM, 0, SYS_userfaultfd, O_CLOEXEC);
	errno = 0;
	int ufd = open("/dev/userfaultfd", O_RDWR);
	expect_err("open /dev/userfaultfd", ufd, errno, ENOENT, 0);

	struct io_uring_params up;
	memset(&up, 0, sizeof(up));
	EXPECT_SYS("io_uring_setup(4)", EPERM, 0, SYS_io_uring_setup, 4, &up);
	EXPECT_SYS("io_uring_enter", EPERM, 0, SYS_io_uring_enter, 0, 0, 0, 0, NULL, 0);
	EXPECT_SYS("io_uring_register", EPERM, 0, SYS_io_uring_register, 0, 0, NULL, 0);

	/* keyring */
	EXPECT_SYS("keyctl(GET_KEYRING_ID, session)", EPERM, 0, SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
	EXPECT_SYS("keyctl(JOIN_SESSION_KEYRING)", EPERM, 0, SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "hutchsec");
	EXPECT_SYS("add_key(user, process keyring)", EPERM, 0, SYS_add_key, "user", "hutchsec", "x", 1, KEY_SPEC_PROCESS_KEYRING);
	EXPECT_SYS("request_key(user)", EPERM, 0, SYS_request_key, "user", "hutchsec", NULL, 0);

	/* host administration */
	char buf[64];
	EXPECT_SYS("syslog(READ_ALL)", EPERM, 0, SYS_syslog, 3, buf, sizeof(buf));
	EXPECT_SYS("syslog(SIZE_BUFFER)", EPERM, 0, SYS_syslog, 10, NULL, 0);
	EXPECT_SYS("init_module", EPERM, 0, SYS_init_module, buf, 0, "");
	EXPECT_SYS("finit_module", EPERM, 0, SYS_finit_module, 0, "", 0);
	EXPECT_SYS("delete_module", EPERM, 0, SYS_delete_module, "hutchsec_none", O_NONBLOCK);
	EXPECT_SYS("kexec_load", EPERM, 0, SYS_kexec_load, 0, 0, NULL, 0);
	EXPECT_SYS("kexec_file_load", EPERM, 0, SYS_kexec_file_load, -1, -1, 0, "", 0);
	EXPECT_SYS("reboot(bad magic)", EPERM, 0, SYS_reboot, 0, 0, LINUX_REBOOT_CMD_CAD_ON, NULL);
	EXPECT_SYS("swapon", EPERM, 0, SYS_swapon, "/tmp/hutchsec-none", 0);
	EXPECT_SYS("swapoff", EPERM, 0, SYS_swapoff, "/tmp/hutchsec-none");
	EXPECT_SYS("acct(NULL)", EPERM, 0, SYS_acct, NULL);
	EXPECT_SYS("settimeofday(NULL, NULL)", EPERM, 0, SYS_settimeofday, NULL, NULL);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	EXPECT_SYS("clock_settime(REALTIME, now)", EPERM, 0, SYS_clock_settime, CLOCK_REALTIME, &now);
	struct timex tx;
	memset(&tx, 0, sizeof(tx));
	EXPECT_SYS("adjtimex(modes=0)", EPERM, 0, SYS_adjtimex, &tx);
	EXPECT_SYS("clock_adjtime(REALTIME, modes=0)", EPERM, 0, SYS_clock_adjtime, CLOCK_REALTIME, &tx);
	EXPECT_SYS("iopl(3)", EPERM, 0, SYS_iopl, 3);
	EXPECT_SYS("ioperm(0x80)", EPERM, 0, SYS_ioperm, 0x80, 1, 1);
	EXPECT_SYS("fanotify_init(REPORT_FID)", EPERM, 0, SYS_fanotify_init, FAN_CLASS_NOTIF | FAN_REPORT_FID, O_RDONLY);
	struct {
		unsigned int bytes;
		int type;
		unsigned char f[128];
	} fh = { .bytes = 128 };
	int mnt;
	EXPECT_SYS("name_to_handle_at(/)", EPERM, 0, SYS_name_to_handle_at, AT_FDCWD, "/", &fh, &mnt, 0);
	fh.bytes = 8;
	fh.type = 1; /* FILEID_INO32_GEN: inode 2 of the mount = the fs root */
	fh.f[0] = 2;
	EXPECT_SYS("open_by_handle_at (shocker)", EPERM, 0, SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY);
	EXPECT_SYS("quotactl(Q_SYNC)", EPERM, 0, SYS_quotactl, 0x800001, NULL, 0, NULL);
	EXPECT_SYS("quotactl_fd", EPERM, 0, SYS_quotactl_fd, 0, 0x800001, 0, NULL);
	EXPECT_SYS("vhangup", EPERM, 0, SYS_vhangup);
	EXPECT_SYS("lookup_dcookie", EPERM, 0, SYS_lookup_dcookie, 0, buf, sizeof(buf));
	EXPECT_SYS("uselib", EPERM, 0, SYS_uselib, "/tmp/hutchsec-none");

	/* personality */
	EXPECT_SYS("personality(READ_IMPLIES_EXEC)", EPERM, 0, SYS_personality, READ_IMPLIES_EXEC);
	EXPECT_SYS("personality(ADDR_NO_RANDOMIZE)", EPERM, 0, SYS_personality, ADDR_NO_RANDOMIZE);
	EXPECT_SYS("personality(MMAP_PAGE_ZERO)", EPERM, 0, SYS_personality, MMAP_PAGE_ZERO);
	EXPECT_SYS("personality(PER_LINUX32)", EPERM, 0, SYS_personality, PER_LINUX32);
	EXPECT_SYS("personality(1<<32 | ADDR_NO_RANDOMIZE)", EPERM, 0, SYS_personality, (1UL << 32) | ADDR_NO_RANDOMIZE);
	long pers = syscall(SYS_personality, 0xffffffffUL);
	if (pers == 0)
		ok("personality is still PER_LINUX with no flags");
	else
		not_ok("personality changed: 0x%lx", pers);

	/* socket families */
	static const struct {
		const char *name;
		unsigned long family;
		int type;
		unsigned long proto;
	} fams[] = {
		{ "AF_PACKET raw", AF_PACKET, SOCK_RAW, 0x0300 },
		{ "AF_PACKET dgram", AF_PACKET, SOCK_DGRAM, 0x0300 },
		{ "AF_PACKET with upper bits", (1UL << 32) | AF_PACKET, SOCK_RAW, 0x0300 },
		{ "AF_VSOCK", AF_VSOCK, SOCK_STREAM, 0 },
		{ "AF_ALG", AF_ALG, SOCK_SEQPACKET, 0 },
		{ "AF_KEY", AF_KEY, SOCK_RAW, 2 },
		{ "AF_XDP", AF_XDP, SOCK_RAW, 0 },
		{ "AF_TIPC", AF_TIPC, SOCK_STREAM, 0 },
		{ "AF_RDS", AF_RDS, SOCK_SEQPACKET, 0 },
		{ "AF_CAN", AF_CAN, SOCK_RAW, 1 },
		{ "AF_BLUETOOTH", AF_BLUETOOTH, SOCK_RAW, 0 },
		{ "AF_LLC", AF_LLC, SOCK_DGRAM, 0 },
		{ "AF_APPLETALK", AF_APPLETALK, SOCK_DGRAM, 0 },
		{ "family -1", (unsigned long)-1L, SOCK_RAW, 0 },
		{ "NETLINK_NETFILTER", AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER },
		{ "NETLINK_XFRM", AF_NETLINK, SOCK_RAW, NETLINK_XFRM },
		{ "NETLINK_AUDIT", AF_NETLINK, SOCK_RAW, NETLINK_AUDIT },
		{ "NETLINK_KOBJECT_UEVENT", AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT },
		{ "NETLINK_GENERIC", AF_NETLINK, SOCK_RAW, NETLINK_GENERIC },
		{ "NETLINK_SELINUX", AF_NETLINK, SOCK_RAW, 7 },
		{ "NETLINK_SOCK_DIAG", AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG },
		{ "NETLINK_SOCK_DIAG dgram", AF_NETLINK, SOCK_DGRAM, NETLINK_SOCK_DIAG },
		{ "NETLINK_ROUTE with upper bits", AF_NETLINK, SOCK_RAW, 1UL << 32 },
	};
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		char d[80];
		snprintf(d, sizeof(d), "socket(%s)", fams[i].name);
		EXPECT_SYS(d, EAFNOSUPPORT, 0, SYS_socket, fams[i].family, fams[i].type, fams[i].proto);
	}
	EXPECT_SYS("socket(AF_INET, SOCK_RAW, ICMP)", EPERM, 0, SYS_socket, AF_INET, SOCK_RAW, IPPROTO_ICMP);
	EXPECT_SYS("socket(AF_INET6, SOCK_RAW, RAW)", EPERM, 0, SYS_socket, AF_INET6, SOCK_RAW, IPPROTO_RAW);

	/* IP protocols and socket types */
	static const struct {
		const char *name;
		int family, type;
		unsigned long proto;
		int want;
	} protos[] = {
		{ "AF_INET SCTP stream", AF_INET, SOCK_STREAM, IPPROTO_SCTP, EPROTONOSUPPORT },
		{ "AF_INET SCTP seqpacket", AF_INET, SOCK_SEQPACKET, IPPROTO_SCTP, ESOCKTNOSUPPORT },
		{ "AF_INET6 SCTP stream", AF_INET6, SOCK_STREAM, IPPROTO_SCTP, EPROTONOSUPPORT },
		{ "AF_INET6 SCTP seqpacket", AF_INET6, SOCK_SEQPACKET, IPPROTO_SCTP, ESOCKTNOSUPPORT },
		{ "AF_INET DCCP", AF_INET, SOCK_DCCP, IPPROTO_DCCP, ESOCKTNOSUPPORT },
		{ "AF_INET6 DCCP", AF_INET6, SOCK_DCCP, IPPROTO_DCCP, ESOCKTNOSUPPORT },
		{ "AF_INET L2TP/IP", AF_INET, SOCK_DGRAM, 115, EPROTONOSUPPORT },
		{ "AF_INET6 L2TP/IP", AF_INET6, SOCK_DGRAM, 115, EPROTONOSUPPORT },
		{ "AF_INET MPTCP", AF_INET, SOCK_STREAM, 262, EPROTONOSUPPORT },
		{ "AF_INET6 MPTCP", AF_INET6, SOCK_STREAM, 262, EPROTONOSUPPORT },
		{ "AF_INET UDP-Lite", AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE, EPROTONOSUPPORT },
		{ "AF_INET6 UDP-Lite", AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE, EPROTONOSUPPORT },
		{ "AF_INET ICMPv6 dgram", AF_INET, SOCK_DGRAM, IPPROTO_ICMPV6, EPROTONOSUPPORT },
		{ "AF_INET6 ICMP dgram", AF_INET6, SOCK_DGRAM, IPPROTO_ICMP, EPROTONOSUPPORT },
		{ "AF_INET stream UDP", AF_INET, SOCK_STREAM, IPPROTO_UDP, EPROTONOSUPPORT },
		{ "AF_INET protocol 200", AF_INET, SOCK_DGRAM, 200, EPROTONOSUPPORT },
		{ "AF_INET protocol 255", AF_INET, SOCK_STREAM, 255, EPROTONOSUPPORT },
		{ "AF_INET TCP with upper bits", AF_INET, SOCK_STREAM, (1UL << 32) | IPPROTO_TCP, EPROTONOSUPPORT },
		{ "AF_INET SCTP with upper bits", AF_INET, SOCK_STREAM, (1UL << 32) | IPPROTO_SCTP, EPROTONOSUPPORT },
		{ "AF_INET type 0", AF_INET, 0, 0, ESOCKTNOSUPPORT },
		{ "AF_INET SOCK_RDM", AF_INET, SOCK_RDM, 0, ESOCKTNOSUPPORT },
		{ "AF_INET SOCK_PACKET", AF_INET, SOCK_PACKET, 0, ESOCKTNOSUPPORT },
		{ "AF_UNIX protocol 2", AF_UNIX, SOCK_STREAM, 2, EPROTONOSUPPORT },
	};
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++) {
		char d[80];
		snprintf(d, sizeof(d), "socket(%s)", protos[i].name);
		EXPECT_SYS(d, protos[i].want, 0, SYS_socket, protos[i].family, protos[i].type, protos[i].proto);
		int sv[2];
		snprintf(d, sizeof(d), "socketpair(%s)", protos[i].name);
		EXPECT_SYS(d, protos[i].want, 0, SYS_socketpair, protos[i].family, protos[i].type, protos[i].proto, sv);
	}
	int sv2[2];
	EXPECT_SYS("socketpair(AF_NETLINK, NETLINK_NETFILTER)", EAFNOSUPPORT, 0, SYS_socketpair, AF_NETLINK, SOCK_RAW,
		   NETLINK_NETFILTER, sv2);
	EXPECT_SYS("socketpair(AF_NETLINK, NETLINK_SOCK_DIAG)", EAFNOSUPPORT, 0, SYS_socketpair, AF_NETLINK, SOCK_RAW,
		   NETLINK_SOCK_DIAG, sv2);
	/* what a sandbox needs still works */
	static const struct {
		const char *name;
		int family, type, proto;
	} needed[] = {
		{ "AF_INET TCP", AF_INET, SOCK_STREAM, IPPROTO_TCP },
		{ "AF_INET UDP", AF_INET, SOCK_DGRAM, 0 },
		{ "AF_INET6 TCP", AF_INET6, SOCK_STREAM, 0 },
		{ "AF_INET6 UDP", AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, IPPROTO_UDP },
		{ "AF_UNIX stream", AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0 },
		{ "AF_NETLINK ROUTE", AF_NETLINK, SOCK_RAW, NETLINK_ROUTE },
	};
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		int fd = socket(needed[i].family, needed[i].type, needed[i].proto);
		if (fd >= 0) {
			ok("socket(%s) works", needed[i].name);
			close(fd);
		} else {
			not_ok("socket(%s): %s", needed[i].name, ename(errno));
		}
	}

	/* native AIO: one counter for the whole host */
	unsigned long aio_ctx = 0;
	errno = 0;
	long aio = syscall(SYS_io_setup, 1, &aio_ctx);
	expect_err("io_setup(1)", aio, errno, ENOSYS, 0);
	if (aio == 0)
		syscall(SYS_io_destroy, aio_ctx);

	/* ptys: counted host-wide by the kernel; the sandbox's devpts has a
	 * cap of its own (128), so one sandbox cannot take every other
	 * sandbox's. At most 512 tries: bounded even where the cap is missing. */
	int ptys[512], nptys = 0, pty_errno = 0;
	while (nptys < 512) {
		int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (m < 0) {
			pty_errno = errno;
			break;
		}
		ptys[nptys++] = m;
	}
	for (int i = 0; i < nptys; i++)
		close(ptys[i]);
	if (nptys >= 1 && nptys <= 128 && pty_errno == ENOSPC)
		ok("ptys stop at the sandbox's own cap: %d opened, then ENOSPC", nptys);
	else
		not_ok("ptys: %d opened, then %s (expected at most 128, then ENOSPC)", nptys,
		       pty_errno ? ename(pty_errno) : "no failure");

	/* socketpair: never a socket of another family than AF_UNIX, and the
	 * filter answers before any denied family's code runs. */
	int got = 0, reached = 0;
	char reached_list[512] = "";
	for (int fam = 0; fam < 64; fam++) {
		/* allowed families (netlink with protocol 0 = NETLINK_ROUTE) */
		if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6 || fam == AF_NETLINK)
			continue;
		static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET };
		for (size_t t = 0; t < 4; t++) {
			int sv[2];
			if (socketpair(fam, types[t], 0, sv) == 0) {
				not_ok("socketpair(family %d, type %d) SUCCEEDED", fam, types[t]);
				close(sv[0]);
				close(sv[1]);
				got++;
			} else if (errno != EAFNOSUPPORT) {
				/* Not the filter's answer: the family's create code ran
				 * before socketpair failed. */
				reached++;
				size_t l = strlen(reached_list);
				snprintf(reached_list + l, sizeof(reached_list) - l, " %d/%d:%s", fam, types[t], ename(errno));
			}
		}
	}
	if (!got)
		ok("socketpair() yields no socket of any family but AF_UNIX");
	if (reached)
		not_ok("socketpair() reaches the socket-create code of denied families (family/type:errno):%s",
		       reached_list);
	else
		ok("socketpair() of every denied family is refused by the filter (EAFNOSUPPORT)");

	/* unreviewed syscall numbers */
	EXPECT_SYS("syscall 470 (listns, unreviewed)", ENOSYS, 0, 470, 0, 0, 0);
	EXPECT_SYS("syscall 500", ENOSYS, 0, 500, 0, 0, 0);
	EXPECT_SYS("syscall 1023", ENOSYS, 0, 1023, 0, 0, 0);
	return end();
}
