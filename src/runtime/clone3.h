/* clone3 with a function on its own stack, the way glibc's clone() runs one
 * for the older clone syscall (which has no CLONE_INTO_CGROUP). */
#ifndef HUTCH_RUNTIME_CLONE3_H
#define HUTCH_RUNTIME_CLONE3_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* struct clone_args of <linux/sched.h> up to `cgroup` (CLONE_ARGS_SIZE_VER2),
 * declared here: that header clashes with glibc's <sched.h>. */
struct hu_clone_args {
	uint64_t flags;
	uint64_t pidfd;
	uint64_t child_tid;
	uint64_t parent_tid;
	uint64_t exit_signal;
	uint64_t stack;
	uint64_t stack_size;
	uint64_t tls;
	uint64_t set_tid;
	uint64_t set_tid_size;
	uint64_t cgroup;
};

/* clone3(args); the child calls fn(arg) on args->stack (16-byte aligned,
 * args->stack_size bytes) and exits with what it returns. Meant for
 * CLONE_VM | CLONE_VFORK children, which share the caller's memory and so
 * cannot return into the caller's frames. The child's pid, or -1 with
 * errno (ENOSYS on an architecture this file has no entry code for: the
 * caller falls back to clone()). */
pid_t hu_clone3_call(struct hu_clone_args *args, int (*fn)(void *), void *arg);

#endif
