/* clone3 with a child function on its own stack (clone3.h).
 *
 * A CLONE_VM child cannot return from the system call into C: it would run
 * on in the caller's frames. So the call is a few lines of assembly: the
 * child, on the fresh stack the kernel gave it, calls fn(arg) and exits.
 * Only x86-64 has them (the one architecture this is run and tested on);
 * elsewhere hu_clone3_call fails with ENOSYS and callers use clone(). */
#include <errno.h>

#include "runtime/clone3.h"

#if defined(__x86_64__)
/* rdi = args, rsi = size, rdx = fn, rcx = arg. The syscall instruction
 * clobbers only rcx and r11, so fn and arg wait in r8 and r9 (which the
 * caller does not expect kept). */
long hu_clone3_raw(struct hu_clone_args *args, size_t size, int (*fn)(void *), void *arg);
__asm__(".text\n"
	".globl hu_clone3_raw\n"
	".hidden hu_clone3_raw\n"
	".type hu_clone3_raw, @function\n"
	"hu_clone3_raw:\n"
	"	mov %rdx, %r8\n"
	"	mov %rcx, %r9\n"
	"	mov $435, %eax\n" /* __NR_clone3 */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jz 1f\n"
	"	ret\n"
	"1:	xor %ebp, %ebp\n" /* the child: no frame above this one */
	"	mov %r9, %rdi\n"
	"	call *%r8\n"
	"	mov %eax, %edi\n"
	"	mov $60, %eax\n" /* __NR_exit */
	"	syscall\n"
	"	hlt\n"
	".size hu_clone3_raw, .-hu_clone3_raw\n");
#endif

pid_t hu_clone3_call(struct hu_clone_args *args, int (*fn)(void *), void *arg)
{
#if defined(__x86_64__)
	long rc = hu_clone3_raw(args, sizeof(*args), fn, arg);
	if (rc < 0) {
		errno = (int)-rc;
		return -1;
	}
	return (pid_t)rc;
#else
	(void)args;
	(void)fn;
	(void)arg;
	errno = ENOSYS;
	return -1;
#endif
}
