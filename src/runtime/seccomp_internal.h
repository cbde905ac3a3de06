/* The pieces of the sandbox filter shared by seccomp.c and
 * seccomp_prologue.c; not part of the runtime's API. */
#ifndef HUTCH_RUNTIME_SECCOMP_INTERNAL_H
#define HUTCH_RUNTIME_SECCOMP_INTERNAL_H

#include <linux/filter.h>

/* The first syscall number not reviewed yet (listns, Linux 6.19): from here
 * up every number answers ENOSYS. */
#define HU_SECCOMP_UNREVIEWED_FIRST 470

/* The hand-written program that runs before libseccomp's; its last jumps
 * lead to index hu_seccomp_prologue_len, where libseccomp's program starts. */
extern const struct sock_filter hu_seccomp_prologue[];
extern const unsigned short hu_seccomp_prologue_len;

#endif
