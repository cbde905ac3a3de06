/* Installing a compiled filter: separate from seccomp.c so that hutch-init,
 * which installs the program in its setup stage, does not link libseccomp. */
#include <errno.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/seccomp.h"

int hu_seccomp_install(const struct hu_seccomp_prog *prog, hu_err *err)
{
	struct sock_fprog fprog = {.len = prog->len, .filter = prog->insns};
	if (prog->len == 0)
		return hu_err_set(err, EINVAL, "seccomp: no compiled program");
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0)
		return hu_err_sys(err, "seccomp: install filter");
	return 0;
}

