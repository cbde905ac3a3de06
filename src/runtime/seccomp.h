/*
 * The seccomp filter every sandbox process runs under (loaded once, right
 * before hutch-init is executed; all processes inherit it). docs/security.md
 * lists what it denies and why.
 */
#ifndef HUTCH_RUNTIME_SECCOMP_H
#define HUTCH_RUNTIME_SECCOMP_H

#include <linux/filter.h>

#include "util/err.h"

/* The filter compiled to classic BPF once (libseccomp takes milliseconds to
 * generate it; installing a ready program takes a fraction of one). */
struct hu_seccomp_prog {
	struct sock_filter *insns;
	unsigned short len;
};
int hu_seccomp_compile(struct hu_seccomp_prog *out, hu_err *err);
/* Install a compiled program into the calling thread (no_new_privs must be
 * set). Async-signal-safe: no allocation, one syscall. */
int hu_seccomp_install(const struct hu_seccomp_prog *prog, hu_err *err);
void hu_seccomp_prog_free(struct hu_seccomp_prog *prog);

/* Compile and install the filter into the calling thread, as a sandbox does
 * (needs no_new_privs or CAP_SYS_ADMIN; the caller sets PR_SET_NO_NEW_PRIVS
 * first). */
int hu_seccomp_load(hu_err *err);

/* Write the same filter as classic BPF (an array of struct sock_filter) to
 * `fd` without loading it: for tests that evaluate it on synthetic
 * seccomp_data (foreign architectures the host cannot execute) and for
 * debugging. */
int hu_seccomp_export_bpf(int fd, hu_err *err);

#endif
