/* ATTACK: get around a 64-bit-only seccomp filter with a foreign syscall
 * ABI.                                                 (run as root and user)
 *
 * Tries, each in a forked child:
 *  1. `int $0x80` (i386 compat entry): getpid (20), unshare(CLONE_NEWUSER)
 *     (i386 310), mount (i386 21), and ptrace (i386 26) -- numbers that the
 *     x86_64 filter would read as different syscalls (20 = writev,
 *     21 = access, 26 = msync), the classic way past a native-only filter;
 *  2. x32 syscalls (nr | 0x40000000, the `__X32_SYSCALL_BIT`) through the
 *     native `syscall` instruction: getpid, unshare, mount;
 *  3. a nonsense number above every table but below the x32 bit.
 *
 * Why it must fail: the filter contains only AUDIT_ARCH_X86_64; any other
 * arch (i386 via int $0x80) hits the bad-arch action, and x32 numbers (bit
 * 30) are matched explicitly; both kill the process with SIGSYS.
 *
 * Control run: `foreign_abi control`, run by run.sh on the host (no filter),
 * prints "i386=yes" if this kernel executes `int $0x80` syscalls at all and
 * "i386=no" if it does not (IA32 emulation disabled: the instruction raises
 * a general protection fault, SIGSEGV, before any syscall code runs; this
 * is the case on the Firecracker/PVM test VM). run.sh passes the answer as
 * argv[1]. With i386=yes, int $0x80 children must die by SIGSYS; with
 * i386=no, SIGSEGV is the kernel's own refusal and is accepted (the BPF
 * unit test test_bpf_foreign_arch_killed covers the filter for that case).
 *
 * Expected: each child is killed by SIGSYS (SIGSEGV for int $0x80 only when
 * the control run said i386=no); the parent lives on. The child writes a
 * byte to a pipe just before the instruction, so a child that died too
 * early does not count as blocked.
 */
#include "lib.h"

#include <signal.h>
#include <sys/wait.h>

static long int80(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return ret;
}

static long sys64(long nr, long a, long b, long c)
{
	long ret;
	register long r10 __asm__("r10") = 0;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return ret;
}

static int i386_available = 1;

static void attempt(const char *desc, int compat, long nr, long a, long b, long c)
{
	int p[2];
	if (pipe(p) < 0) {
		not_ok("%s: pipe: %s", desc, ename(errno));
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (write(p[1], "R", 1) != 1)
			_exit(98);
		long r = compat ? int80(nr, a, b, c) : sys64(nr, a, b, c);
		/* Still alive: report what the call returned. */
		_exit(r < 0 && r > -4096 ? 100 : 101);
	}
	close(p[1]);
	char ch = 0;
	ssize_t n = read(p[0], &ch, 1);
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (n != 1)
		not_ok("%s: child died before the call", desc);
	else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
		ok("%s: process killed by SIGSYS", desc);
	else if (compat && !i386_available && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV)
		ok("%s: killed by SIGSEGV (this kernel runs no i386 syscalls)", desc);
	else if (WIFEXITED(st))
		not_ok("%s: the call RETURNED (%s) instead of killing the process", desc,
		       WEXITSTATUS(st) == 100 ? "an error" : "success");
	else
		not_ok("%s: child ended with status 0x%x", desc, st);
}

/* Unfiltered, on the host: can this kernel run an i386 getpid at all? */
static int control(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(int80(20, 0, 0, 0) == getpid() ? 0 : 1);
	int st = 0;
	waitpid(pid, &st, 0);
	printf("i386=%s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "yes" : "no");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "control") == 0)
		return control();
	i386_available = !(argc > 1 && strcmp(argv[1], "i386=no") == 0);
	printf("# i386 syscalls on this kernel: %s\n", i386_available ? "yes" : "no");
	attempt("int $0x80 getpid (i386 20)", 1, 20, 0, 0, 0);
	attempt("int $0x80 unshare(CLONE_NEWUSER) (i386 310)", 1, 310, 0x10000000, 0, 0);
	attempt("int $0x80 mount (i386 21)", 1, 21, 0, 0, 0);
	attempt("int $0x80 ptrace(PTRACE_ATTACH, 1) (i386 26)", 1, 26, 16, 1, 0);
	attempt("x32 getpid (0x40000000|39)", 0, 0x40000000 | 39, 0, 0, 0);
	attempt("x32 unshare(CLONE_NEWUSER) (0x40000000|272)", 0, 0x40000000 | 272, 0x10000000, 0, 0);
	attempt("x32 mount (0x40000000|165)", 0, 0x40000000 | 165, 0, 0, 0);
	attempt("x32 ptrace (0x40000000|521)", 0, 0x40000000 | 521, 16, 1, 0);
	/* Far outside every table: the kernel answers ENOSYS by itself, so the
	 * filter may pass it through; it must simply not do anything. */
	errno = 0;
	long r = syscall(0x3fff0000L, 0, 0, 0);
	if (r == -1 && errno == ENOSYS)
		ok("syscall 0x3fff0000: ENOSYS");
	else
		not_ok("syscall 0x3fff0000: returned %ld (%s)", r, ename(errno));
	if (getppid() > 0)
		ok("the parent survived every attempt");
	return end();
}
