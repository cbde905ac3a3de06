/* What the parent (sandbox.c) and the cloned child (sandbox_child.c) share. */
#ifndef HUTCH_RUNTIME_SANDBOX_INTERNAL_H
#define HUTCH_RUNTIME_SANDBOX_INTERNAL_H

#include "runtime/runtime_internal.h"

/* Everything the child needs, in memory it inherits as a copy at clone time. */
struct hu_child_args {
	char id[HU_ID_MAX];
	uint64_t shm_bytes;
	int sync_fd;   /* SOCK_SEQPACKET to the parent; CLOEXEC, so exec = EOF = success */
	int listen_fd; /* the init socket, becomes fd 3 of hutch-init */
	int init_memfd;
	const struct hu_seccomp_prog *seccomp;
};

/* The "go" message from the parent carries, as SCM_RIGHTS: the idmapped
 * template mount, the idmapped read-only /usr mount, and an O_PATH fd of the
 * sandbox's disk (the size-capped tmpfs holding rootfs/, lower/, upper/ and
 * work/) in the child's own mount namespace. */
#define HU_CHILD_FD_TEMPLATE 0
#define HU_CHILD_FD_USR 1
#define HU_CHILD_FD_DIR 2
#define HU_CHILD_NFDS 3

/* A failure report from the child: errno and message. */
struct hu_child_report {
	int code;
	char msg[HU_ERR_MSG_MAX];
};

/* Runs in the cloned child; never returns. */
__attribute__((noreturn)) void hu_child_main(const struct hu_child_args *args);

#endif
