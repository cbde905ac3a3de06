/* What the parent (sandbox.c) and the cloned child (sandbox_child.c) share. */
#ifndef HUTCH_RUNTIME_SANDBOX_INTERNAL_H
#define HUTCH_RUNTIME_SANDBOX_INTERNAL_H

#include "runtime/runtime_internal.h"

/* The fds hutch-init starts with in setup mode (`hutch-init --setup`). */
#define HU_SETUP_LISTEN_FD 3 /* the init socket, kept by hutch-init */
#define HU_SETUP_SYNC_FD 4   /* SOCK_SEQPACKET to the parent, closed when setup is done */

/* The "go" message from the parent: this header, then the compiled seccomp
 * program (bpf_len struct sock_filter), with SCM_RIGHTS fds: the idmapped
 * template mount, the idmapped read-only /usr mount, an O_PATH fd of the
 * sandbox's layer (the capped subvolume holding rootfs/, lower/, rw/ and
 * bootid/) in the child's own mount namespace, the idmapped writable
 * mount of its rw/ (upper/, work/) and a clone of the read-only /sys view. */
#define HU_SETUP_MAGIC 0x68757431u /* "hut1" */
#define HU_SETUP_DIE_WITH_PARENT 1u
#define HU_SETUP_OWN_USR 2u /* the template brings its own /usr: the USR fd is a placeholder */
/* the layer keeps upper/ and work/ in rw/, and the RW fd is an idmapped
 * mount of it; without: a layer of an older hutch, upper/ and work/ at its
 * top with host uids, and the RW fd a placeholder */
#define HU_SETUP_IDMAPPED_RW 4u
/* the SYS fd is a clone of the runtime's read-only sysfs view (sysfs_view.h)
 * to attach at /sys; without: a placeholder, and the child mounts a sysfs of
 * its own network namespace */
#define HU_SETUP_SHARED_SYS 8u
/* the layer goes with the sandbox (hu_sandbox_spec.volatile_layer): the
 * overlay is `volatile`, it never syncs the layer, so the unmount at the
 * sandbox's end commits no btrfs transaction (an fsync inside is a no-op:
 * nothing there outlives the sandbox) */
#define HU_SETUP_VOLATILE 16u
/* one more fd follows the mounts': a connected socket that init serves as a
 * client it accepted (hu_sandbox_spec.first_conn_fd) */
#define HU_SETUP_FIRST_CONN 32u
struct hu_setup_go {
	uint32_t magic;
	uint32_t bpf_len;
	uint32_t flags;
	uint64_t shm_bytes;
	uint32_t n_mounts; /* extra mounts: their targets follow the program */
	char id[HU_ID_MAX];
};
/* After the program: n_mounts of these. Each HU_MOUNT_TYPE_DIR mount has
 * an fd, after the HU_CHILD_NFDS fixed ones, in the same order; a
 * HU_MOUNT_TYPE_TMPFS mount has none: the child makes it (in its own user
 * namespace, like /dev/shm) of tmpfs_bytes. */
struct hu_setup_mount {
	char target[HU_MOUNT_TARGET_MAX];
	uint32_t type; /* enum hu_mount_type */
	uint32_t reserved;
	uint64_t tmpfs_bytes;
};
#define HU_CHILD_FD_TEMPLATE 0
#define HU_CHILD_FD_USR 1
#define HU_CHILD_FD_DIR 2
#define HU_CHILD_FD_RW 3
#define HU_CHILD_FD_SYS 4
#define HU_CHILD_NFDS 5

/* Extra mounts (sandbox_mounts.c). Parent: a detached mount for each
 * directory mount of spec->mounts into fds[0..n_mounts-1], -1 for each
 * tmpfs (all closed again on failure). Child: hu_tmpfs_mount makes a
 * detached tmpfs of `bytes` (mode 1777, nosuid, nodev); hu_mount_attach
 * attaches mount_fd at target below root_fd, creating the missing
 * directories and refusing symlinks on the way. */
int hu_mounts_open(const struct hu_sandbox_spec *spec, int userns_fd, int *fds, hu_err *err);
int hu_tmpfs_mount(uint64_t bytes, hu_err *err);
int hu_mount_attach(int root_fd, const char *target, int mount_fd, hu_err *err);

/* A failure report from the child: errno and message. */
struct hu_child_report {
	int code;
	char msg[HU_ERR_MSG_MAX];
};

/* sandbox_io.c: the block I/O settings of the sandbox's group (the
 * runtime's, tightened by the spec's) and the disks its caps apply to. */
void hu_sbx_io_limits(const struct hu_runtime *rt, const struct hu_sandbox_spec *spec, struct hu_cgroup_io *io);

#endif
