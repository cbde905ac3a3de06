/*
 * The sandbox runtime: the C API that the daemon and the CLI share. No HTTP,
 * no store: it creates, freezes, thaws and destroys sandboxes on this host.
 *
 * A sandbox is a process tree rooted at hutch-init (PID 1 of its own PID
 * namespace) in fresh user, mount, ipc, uts, net and cgroup namespaces, on an
 * overlay root whose lower layer is a template (idmapped) and whose upper
 * layer is a size-capped tmpfs, with /usr bound read-only (idmapped). Its
 * callers talk to hutch-init over the unix socket at hu_sandbox_socket().
 */
#ifndef HUTCH_RUNTIME_SANDBOX_H
#define HUTCH_RUNTIME_SANDBOX_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/cgroup.h"
#include "runtime/net.h"
#include "util/err.h"

#define HU_ID_MAX 64

struct hu_runtime_config {
	char data_dir[PATH_MAX];  /* persistent: templates/ (default /var/lib/hutch) */
	char run_dir[PATH_MAX];   /* volatile: sandboxes/, ctl/, slots/ (default /run/hutch) */
	char init_path[PATH_MAX]; /* the hutch-init binary; "" = next to /proc/self/exe */
	char cgroup_parent[64];   /* parent cgroup name (default "hutch") */
	/* the network boundary (net.h; docs/operations.md): HUTCH_NET,
	 * HUTCH_NET_NAME, HUTCH_NET_POOL, HUTCH_NET_DNS, HUTCH_NET_UPLINK,
	 * HUTCH_NET_ALLOW, HUTCH_NET_DENY */
	char net_mode[8];         /* none (default) | nat */
	char net_name[16];        /* nft table and interface prefix (default "hutch") */
	char net_pool[32];        /* default 10.200.0.0/17: a /31 per uid slot */
	char net_pool6[48];       /* HUTCH_NET_POOL6: IPv6 pool, a /127 per slot, or "none" */
	char net_dns[32];         /* resolver address ("" = the host's first nameserver) */
	char net_uplinks[80];     /* interfaces replies return through ("" = the default route's) */
	char net_allow[1024];     /* CIDRs exempt from the built-in denials */
	char net_deny[1024];      /* CIDRs denied on top of them (a LAN on public addresses) */
	unsigned net_dns_proxy_port; /* the daemon's DNS proxy port on the host; 0 = none */
};

struct hu_runtime;
struct hu_sandbox;

/* An extra mount of a sandbox: a host directory (a volume or a host mount)
 * attached at `target` inside the sandbox before pivot_root. The runtime
 * clones the directory's mount (open_tree), so the sandbox sees only that
 * subtree, never its host path. */
#define HU_MOUNTS_MAX 16
#define HU_MOUNT_TARGET_MAX 256
struct hu_mount_spec {
	const char *source; /* host path of the directory, used when source_fd < 0 */
	int source_fd;      /* an fd (O_PATH is enough) of the directory, or -1 */
	const char *target; /* absolute path inside the sandbox (hu_mount_target_check) */
	int read_only;      /* MOUNT_ATTR_RDONLY: writes fail with EROFS */
	int idmap;          /* idmapped through the sandbox's user namespace: on-disk
			     * ids are the sandbox's ids (1000 = user), whatever
			     * host uid range this sandbox has */
};

struct hu_sandbox_spec {
	char id[HU_ID_MAX];      /* [a-z0-9-], 1..63 chars; also the hostname */
	char template_name[HU_ID_MAX];
	struct hu_cgroup_limits limits;
	uint64_t disk_bytes;     /* size cap of the writable layer */
	uint64_t disk_inodes;    /* inode cap of the writable layer (0 = derived) */
	int die_with_parent;     /* the sandbox is killed when its creator dies (hutch run) */
	const struct hu_mount_spec *mounts; /* extra mounts (borrowed), attached in order */
	size_t n_mounts;                    /* at most HU_MOUNTS_MAX */
	struct hu_net_spec net;  /* zero: loopback only */
};

/* Is `target` an acceptable mount point inside a sandbox? Absolute, at most
 * HU_MOUNT_TARGET_MAX - 1 bytes, normalised (no empty, "." or ".."
 * components, no trailing '/'), and neither "/" nor under /proc, /sys, /dev
 * or /usr (the sandbox's own kernel views and the shared read-only system
 * files). EINVAL with the reason otherwise. Pure; the daemon and the
 * sandbox's setup stage both check. */
int hu_mount_target_check(const char *target, hu_err *err);
/* A host path a mount may come from: absolute and normalised (no empty,
 * '.' or '..' component). EINVAL otherwise. */
int hu_host_path_check(const char *path, hu_err *err);

/* hutch-init's setup stage: run in a freshly cloned sandbox (hutch-init
 * --setup), it waits for the parent's "go" on fd 4, builds the root
 * filesystem, pivots into it, and locks itself down (no_new_privs, seccomp),
 * then returns so the process goes on as the sandbox's init. On failure it
 * reports to the parent and exits. */
void hu_sandbox_setup(void);

/* Defaults a caller starts from (512 MiB, 256 pids, 1 CPU, 1 GiB disk). */
void hu_sandbox_spec_defaults(struct hu_sandbox_spec *spec);
/* Validate an id: 1..63 chars of [a-z0-9-], not starting with '-'. */
int hu_sandbox_id_valid(const char *id);

/* Fill defaults for a runtime configuration (environment variables
 * HUTCH_DATA_DIR, HUTCH_RUN_DIR and HUTCH_INIT override them). */
void hu_runtime_config_defaults(struct hu_runtime_config *cfg);
int hu_runtime_open(const struct hu_runtime_config *cfg, struct hu_runtime **out, hu_err *err);
void hu_runtime_close(struct hu_runtime *rt);
const struct hu_cgroup_env *hu_runtime_cgroup_env(const struct hu_runtime *rt);

/* Build the built-in template `base` from the host if it is missing or was
 * built by an older layout version. Safe to call concurrently. */
int hu_template_ensure_base(struct hu_runtime *rt, hu_err *err);
/* Bring a built template (src/template/) up to this runtime: its
 * /opt/hutch/bin/sudo is this hutch-init (rewritten only when it differs). */
int hu_template_refresh(struct hu_runtime *rt, const char *name, hu_err *err);

/* Create a sandbox in two steps, for callers with an event loop: start does
 * the host-side work and hands the child its mounts; the child then builds
 * its root on its own. When hu_sandbox_ready_fd() is readable (or after a
 * timeout), finish collects the verdict. On any failure, nothing is left
 * behind and sb is freed. */
int hu_sandbox_create_start(struct hu_runtime *rt, const struct hu_sandbox_spec *spec, struct hu_sandbox **out,
			    hu_err *err);
int hu_sandbox_ready_fd(const struct hu_sandbox *sb);
int hu_sandbox_create_finish(struct hu_sandbox *sb, hu_err *err);
/* Create and start a sandbox (both steps, blocking); on success its
 * hutch-init is running and accepting connections. On failure nothing is
 * left behind. */
int hu_sandbox_create(struct hu_runtime *rt, const struct hu_sandbox_spec *spec, struct hu_sandbox **out,
		      hu_err *err);
const char *hu_sandbox_id(const struct hu_sandbox *sb);
const char *hu_sandbox_socket(const struct hu_sandbox *sb);
pid_t hu_sandbox_init_pid(const struct hu_sandbox *sb);
/* A pidfd of hutch-init: readable when the sandbox's PID 1 has exited. */
int hu_sandbox_pidfd(const struct hu_sandbox *sb);
uint32_t hu_sandbox_uid_base(const struct hu_sandbox *sb);
int hu_sandbox_freeze(struct hu_sandbox *sb, hu_err *err);
int hu_sandbox_thaw(struct hu_sandbox *sb, hu_err *err);
int hu_sandbox_stats(struct hu_sandbox *sb, struct hu_cgroup_stats *st, uint64_t *disk_used, hu_err *err);
/* Memory PSI "some avg10" (%) of the sandbox's cgroup, and of the parent
 * group of all sandboxes; -1 where there is none (cgroup v1, PSI off). */
double hu_sandbox_memory_psi(struct hu_sandbox *sb);
double hu_runtime_sandboxes_memory_psi(struct hu_runtime *rt);
/* Clean up sandboxes whose PID 1 is gone and that nobody will destroy (a
 * `hutch run` that was SIGKILLed): those whose directory is older than
 * min_age_s and whose init socket has no listener. Live sandboxes, and ones
 * being created, are never touched. With `owned` (a daemon), those it
 * says it owns are skipped; without (hutch run), so are sandboxes stopped
 * on purpose by hu_sandbox_stop. *cleaned gets the count. */
int hu_runtime_sweep(struct hu_runtime *rt, unsigned min_age_s, int (*owned)(const char *id, void *arg), void *arg,
		     unsigned *cleaned, hu_err *err);

/* Remove whatever is left of sandbox `id` without a handle (its owner died):
 * kill its processes through the cgroup, unmount and remove its directory,
 * its socket, its cgroup and its uid slot. Missing pieces are fine. */
int hu_sandbox_cleanup_leftover(struct hu_runtime *rt, const char *id, hu_err *err);

/* Take over a sandbox that a previous process created (a restarted daemon):
 * its directory, uid slot and cgroup, and its hutch-init if that still
 * runs (*alive = 1). A sandbox without init (stopped by a memory release,
 * or dead) can be restarted or destroyed through the handle. */
int hu_sandbox_adopt(struct hu_runtime *rt, const char *id, struct hu_sandbox **out, int *alive, hu_err *err);
/* Memory release: end every process of the sandbox (its memory is freed)
 * and keep its files, uid slot and cgroup, for hu_sandbox_restart. */
int hu_sandbox_stop(struct hu_sandbox *sb, hu_err *err);
/* Start a fresh hutch-init over the kept files of a stopped sandbox, as
 * create does (blocking, a few ms). On failure the files are kept. */
int hu_sandbox_restart(struct hu_sandbox *sb, const struct hu_sandbox_spec *spec, hu_err *err);

/* Free the handle and leave the sandbox running (a daemon shutting down:
 * the next start adopts it). */
void hu_sandbox_close(struct hu_sandbox *sb);
/* Kill every process, unmount, remove the cgroup, the directories and the
 * uid slot, and free sb (also on error: what can be removed is removed).
 * Blocks while init dies (a few ms; at most HU_SANDBOX_EXIT_WAIT_MS). */
int hu_sandbox_destroy(struct hu_sandbox *sb, hu_err *err);
/* The same in two steps, for a caller with an event loop: _start sends init
 * its SIGKILL and returns the fd that becomes readable when init has exited
 * (-1: nothing to wait for). Wait for it (or HU_SANDBOX_EXIT_WAIT_MS), then
 * hu_sandbox_destroy does the rest without waiting for init again. */
#define HU_SANDBOX_EXIT_WAIT_MS 5000
int hu_sandbox_destroy_start(struct hu_sandbox *sb);

#endif
