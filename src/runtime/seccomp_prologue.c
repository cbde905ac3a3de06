/*
 * The hand-written part of the sandbox filter, run before libseccomp's
 * program (seccomp.c appends that one). The checks here are a few plain BPF
 * comparisons each and hundreds of instructions as libseccomp rules (one
 * syscall number per rule, at most one comparison per argument, no
 * "allow these and refuse the rest" within one syscall):
 *
 *  - syscall numbers from HU_SECCOMP_UNREVIEWED_FIRST up answer ENOSYS;
 *  - personality(): only PER_LINUX (0) and the query 0xffffffff pass. Any
 *    other persona (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, MMAP_PAGE_ZERO, ...)
 *    weakens memory protections and gets EPERM, and so does garbage in the
 *    upper 32 bits (the kernel ignores it; we refuse it rather than reason
 *    about it);
 *  - socket() and socketpair() (which creates sockets through the same
 *    per-family code): an allowlist of families and, within each, of the
 *    protocols a sandbox needs. The kernel looks up the protocol of a new
 *    socket and, when it has none registered, asks modprobe on the host for
 *    "net-pf-F-proto-P[-type-T]": SCTP, DCCP, L2TP, RDS or any number the
 *    host's modules answer to would be loaded (and their code reached) by
 *    one unprivileged socket() call. So:
 *      AF_UNIX     protocol 0 or PF_UNIX (both mean the same; no modules).
 *      AF_INET,    SOCK_STREAM with 0 or IPPROTO_TCP; SOCK_DGRAM with 0,
 *      AF_INET6    IPPROTO_UDP, or the ping protocol of the family
 *                  (IPPROTO_ICMP / IPPROTO_ICMPV6: unprivileged ping
 *                  sockets); SOCK_RAW with any protocol (raw sockets match
 *                  a wildcard entry, so no module is asked for, and need
 *                  CAP_NET_RAW, which no sandbox process has). Any other
 *                  protocol is EPROTONOSUPPORT (MPTCP and UDP-Lite too:
 *                  built in, but more kernel code nobody here needs; Go,
 *                  the one common MPTCP user, falls back to TCP on
 *                  EPROTONOSUPPORT), any other type ESOCKTNOSUPPORT: the
 *                  kernel's own answers for what it does not have.
 *      AF_NETLINK  NETLINK_ROUTE only (ip, getifaddrs, getaddrinfo). Every
 *                  other protocol is EAFNOSUPPORT, as before: nf_tables
 *                  (NETLINK_NETFILTER, behind most 2022-2024 user-namespace
 *                  root exploits), xfrm, audit, uevent, generic netlink.
 *                  NETLINK_SOCK_DIAG too: a socket-diag request names its
 *                  family (and protocol) in the message, which seccomp
 *                  cannot read, and the kernel loads "<family>_diag" (with
 *                  the family's own module: packet, vsock, tipc, sctp, dccp
 *                  ...) for whatever family a request names, so socket
 *                  diagnostics cannot be limited to the allowed families.
 *                  `ss` falls back to /proc/net/{tcp,udp,unix}.
 *    Everything else: EAFNOSUPPORT (AF_PACKET, AF_VSOCK, AF_ALG, AF_KEY,
 *    AF_XDP, AF_TIPC, AF_RDS, ...). Families and protocols with garbage in
 *    their upper 32 bits are refused (the kernel would truncate them to an
 *    int: 0x100000011 is AF_PACKET); the type is compared on its low four
 *    bits, as the kernel does (the rest are SOCK_CLOEXEC, SOCK_NONBLOCK,
 *    or garbage the kernel refuses itself).
 *
 * It decides only for native x86_64 numbers below the x32 bit and allows
 * nothing itself: everything else, and every call it lets pass, falls
 * through to libseccomp's program, which starts with its own architecture
 * check (foreign ABIs are killed there) and holds every other rule.
 *
 * The program is written with named positions: each instruction sits at the
 * index of its label (designated initialisers) and jumps name their target,
 * so an inserted instruction cannot silently shift a jump, and a backward
 * or out-of-range jump does not compile.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "runtime/seccomp_internal.h"

enum {
	P_ARCH, P_ARCH_CHK, P_NR, P_X32, P_UNREVIEWED, P_PERSONALITY, P_SOCKET, P_SOCKETPAIR,
	/* personality(persona) */
	PE_HI, PE_HI_CHK, PE_LO, PE_LINUX, PE_QUERY,
	/* socket(family, type, protocol), socketpair(family, type, protocol, sv) */
	SF_HI, SF_HI_CHK, SF_LO, SF_UNIX, SF_INET, SF_INET6, SF_NETLINK,
	SU_HI, SU_HI_CHK, SU_LO, SU_ZERO, SU_PF_UNIX,
	SN_HI, SN_HI_CHK, SN_LO, SN_ROUTE,
	SI_HI, SI_HI_CHK, SI_TYPE, SI_TYPE_MASK, SI_RAW, SI_STREAM, SI_DGRAM,
	SI_STREAM_PROTO, SI_STREAM_ZERO, SI_STREAM_TCP,
	SI_DGRAM_PROTO, SI_DGRAM_ZERO, SI_DGRAM_UDP, SI_DGRAM_ICMP, SI_DGRAM_ICMPV6,
	SI_PING4, SI_PING4_CHK, SI_PING6, SI_PING6_CHK,
	/* verdicts */
	R_ENOSYS, R_EPERM, R_EAFNOSUPPORT, R_EPROTONOSUPPORT, R_ESOCKTNOSUPPORT,
	/* the first instruction of libseccomp's program */
	LIBSECCOMP
};

/* Jump offset from the instruction at `from` to the one at `to` (BPF
 * counts from the next instruction); refuses to compile unless the jump
 * goes forward and fits in a byte. */
#define TO(from, to) ((uint8_t)(sizeof(char[(to) > (from) && (to) - (from) <= 256 ? 1 : -1]) - 1 + (to) - (from) - 1))
#define LD(at, off) [at] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(off))
#define JEQ(at, k, t, f) [at] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(k), TO(at, t), TO(at, f))
#define JGE(at, k, t, f) [at] = BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)(k), TO(at, t), TO(at, f))
#define AND(at, k) [at] = BPF_STMT(BPF_ALU | BPF_AND | BPF_K, (uint32_t)(k))
#define RET_ERRNO(at, e) [at] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (e))

/* x86_64 is little-endian: the low half of an argument comes first. */
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n))
#define ARG_HI(n) (ARG_LO(n) + 4)
#define X32_SYSCALL_BIT 0x40000000u

const struct sock_filter hu_seccomp_prologue[] = {
	LD(P_ARCH, offsetof(struct seccomp_data, arch)),
	JEQ(P_ARCH_CHK, AUDIT_ARCH_X86_64, P_NR, LIBSECCOMP),
	LD(P_NR, offsetof(struct seccomp_data, nr)),
	JGE(P_X32, X32_SYSCALL_BIT, LIBSECCOMP, P_UNREVIEWED),
	JGE(P_UNREVIEWED, HU_SECCOMP_UNREVIEWED_FIRST, R_ENOSYS, P_PERSONALITY),
	JEQ(P_PERSONALITY, SYS_personality, PE_HI, P_SOCKET),
	JEQ(P_SOCKET, SYS_socket, SF_HI, P_SOCKETPAIR),
	JEQ(P_SOCKETPAIR, SYS_socketpair, SF_HI, LIBSECCOMP),

	LD(PE_HI, ARG_HI(0)),
	JEQ(PE_HI_CHK, 0, PE_LO, R_EPERM),
	LD(PE_LO, ARG_LO(0)),
	JEQ(PE_LINUX, 0, LIBSECCOMP, PE_QUERY),
	JEQ(PE_QUERY, 0xffffffffu, LIBSECCOMP, R_EPERM),

	/* the family */
	LD(SF_HI, ARG_HI(0)),
	JEQ(SF_HI_CHK, 0, SF_LO, R_EAFNOSUPPORT),
	LD(SF_LO, ARG_LO(0)),
	JEQ(SF_UNIX, AF_UNIX, SU_HI, SF_INET),
	JEQ(SF_INET, AF_INET, SI_HI, SF_INET6),
	JEQ(SF_INET6, AF_INET6, SI_HI, SF_NETLINK),
	JEQ(SF_NETLINK, AF_NETLINK, SN_HI, R_EAFNOSUPPORT),

	/* AF_UNIX: the protocol */
	LD(SU_HI, ARG_HI(2)),
	JEQ(SU_HI_CHK, 0, SU_LO, R_EPROTONOSUPPORT),
	LD(SU_LO, ARG_LO(2)),
	JEQ(SU_ZERO, 0, LIBSECCOMP, SU_PF_UNIX),
	JEQ(SU_PF_UNIX, PF_UNIX, LIBSECCOMP, R_EPROTONOSUPPORT),

	/* AF_NETLINK: the protocol */
	LD(SN_HI, ARG_HI(2)),
	JEQ(SN_HI_CHK, 0, SN_LO, R_EAFNOSUPPORT),
	LD(SN_LO, ARG_LO(2)),
	JEQ(SN_ROUTE, NETLINK_ROUTE, LIBSECCOMP, R_EAFNOSUPPORT),

	/* AF_INET, AF_INET6: the type, then the protocol for that type */
	LD(SI_HI, ARG_HI(2)),
	JEQ(SI_HI_CHK, 0, SI_TYPE, R_EPROTONOSUPPORT),
	LD(SI_TYPE, ARG_LO(1)),
	AND(SI_TYPE_MASK, 0xf),
	JEQ(SI_RAW, SOCK_RAW, LIBSECCOMP, SI_STREAM),
	JEQ(SI_STREAM, SOCK_STREAM, SI_STREAM_PROTO, SI_DGRAM),
	JEQ(SI_DGRAM, SOCK_DGRAM, SI_DGRAM_PROTO, R_ESOCKTNOSUPPORT),
	LD(SI_STREAM_PROTO, ARG_LO(2)),
	JEQ(SI_STREAM_ZERO, 0, LIBSECCOMP, SI_STREAM_TCP),
	JEQ(SI_STREAM_TCP, IPPROTO_TCP, LIBSECCOMP, R_EPROTONOSUPPORT),
	LD(SI_DGRAM_PROTO, ARG_LO(2)),
	JEQ(SI_DGRAM_ZERO, 0, LIBSECCOMP, SI_DGRAM_UDP),
	JEQ(SI_DGRAM_UDP, IPPROTO_UDP, LIBSECCOMP, SI_DGRAM_ICMP),
	JEQ(SI_DGRAM_ICMP, IPPROTO_ICMP, SI_PING4, SI_DGRAM_ICMPV6),
	JEQ(SI_DGRAM_ICMPV6, IPPROTO_ICMPV6, SI_PING6, R_EPROTONOSUPPORT),
	/* a ping socket only with its own family's ICMP */
	LD(SI_PING4, ARG_LO(0)),
	JEQ(SI_PING4_CHK, AF_INET, LIBSECCOMP, R_EPROTONOSUPPORT),
	LD(SI_PING6, ARG_LO(0)),
	JEQ(SI_PING6_CHK, AF_INET6, LIBSECCOMP, R_EPROTONOSUPPORT),

	RET_ERRNO(R_ENOSYS, ENOSYS),
	RET_ERRNO(R_EPERM, EPERM),
	RET_ERRNO(R_EAFNOSUPPORT, EAFNOSUPPORT),
	RET_ERRNO(R_EPROTONOSUPPORT, EPROTONOSUPPORT),
	RET_ERRNO(R_ESOCKTNOSUPPORT, ESOCKTNOSUPPORT),
};

const unsigned short hu_seccomp_prologue_len = LIBSECCOMP;

_Static_assert(sizeof(hu_seccomp_prologue) / sizeof(hu_seccomp_prologue[0]) == LIBSECCOMP,
	       "every position of the prologue holds an instruction");
