/*
 * The sandbox runtime: the C API that the daemon and the CLI share. No HTTP,
 * no store: it creates, freezes, thaws and destroys sandboxes on this host.
 *
 * A sandbox is a process tree rooted at hutch-init (PID 1 of its own PID
 * namespace) in fresh user, mount, ipc, uts, net and cgroup namespaces, on an
 * overlay root whose lower layer is a template (idmapped) and whose upper
 * layer is on disk, with /usr bound read-only (idmapped). Its callers talk to
 * hutch-init over the unix socket at hu_sandbox_socket().
 *
 * Where a sandbox's state lives:
 * - <data_dir>/layers/<id>/: its files (rw/upper/, rw/work/, stored with
 *   the ids the sandbox sees and mounted idmapped, and the empty mount
 *   points rootfs/ and lower/), a btrfs subvolume capped at disk_bytes by a
 *   quota group (EDQUOT inside). Owned by the sandbox's host uid base, which
 *   names its uid slot. Survives daemon restarts and host reboots; removed
 *   by destroy and cleanup only. hu_runtime_storage() says where the btrfs
 *   comes from.
 * - <run_dir>/sandboxes/<id>/ (pid, stopped), <run_dir>/slots/<slot>, the
 *   cgroup: volatile, gone after a reboot. hu_sandbox_revive rebuilds them
 *   from the layer alone.
 * The overlay is mounted inside the sandbox's mount namespace only; the
 * host's namespace holds one hutch mount at most (the layers image).
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
	char data_dir[PATH_MAX];  /* persistent: templates/, layers/ (default /var/lib/hutch) */
	char run_dir[PATH_MAX];   /* volatile: sandboxes/, ctl/, slots/ (default /run/hutch) */
	char init_path[PATH_MAX]; /* the hutch-init binary; "" = next to /proc/self/exe */
	char cgroup_parent[64];   /* parent cgroup name (default "hutch") */
	/* the uid slots ("" = <run_dir>/slots): daemons on one host that do
	 * not share a run dir (nodes of a cluster) must share this, or two
	 * sandboxes could get the same host uid range */
	char slots_dir[PATH_MAX];
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
	/* block I/O of every sandbox (cgroup.h): HUTCH_IO_WEIGHT (default 100),
	 * HUTCH_IO_BPS and HUTCH_IO_IOPS (caps per disk, read and write each;
	 * default 0, none). A sandbox's own caps may only be tighter. */
	char io_weight[16];
	char io_bps[24];
	char io_iops[24];
	char net_flows[16];       /* HUTCH_NET_FLOWS: connections a sandbox may hold (default 1024, 0 = no limit) */
	/* the writable layers (docs/operations.md, "Storage"): HUTCH_LAYERS,
	 * HUTCH_LAYERS_SIZE */
	char layers[16];          /* auto (default) | data-dir | image */
	char layers_size[24];     /* size of a new layers.img ("" = the data dir's free space) */
	/* how long the image stays mounted after the last runtime closes (0 =
	 * unmount at once): `hutch run` sets it, so that a run after a run does
	 * not mount and unmount a btrfs each time (layers.h, hu_layers_linger) */
	unsigned layers_linger_ms;
};

/* Where the writable layers live and why (hu_runtime_storage, hutch doctor). */
struct hu_storage_info {
	char backend[16];     /* "data-dir" (its own btrfs) or "image" (<data_dir>/layers.img) */
	char root[PATH_MAX];  /* <data_dir>/layers: <root>/<id> is a sandbox's layer */
	char image[PATH_MAX]; /* the image file ("" for data-dir) */
	char quota[16];       /* btrfs quota mode: "simple", "qgroup" ("" = not enabled yet) */
	char reason[256];
	int ready;            /* mounted and quota-enabled (a probe may find it not yet made) */
};

struct hu_runtime;
struct hu_sandbox;

/* An extra mount of a sandbox, attached at `target` inside the sandbox
 * before pivot_root:
 * - HU_MOUNT_TYPE_DIR: a host directory (a volume or a host mount). The
 *   runtime clones the directory's mount (open_tree), so the sandbox sees
 *   only that subtree, never its host path.
 * - HU_MOUNT_TYPE_TMPFS: a fresh, empty tmpfs (`hutch run --tmpfs`), made
 *   by the sandbox's setup stage in its own user namespace, as /dev/shm is:
 *   mode 1777, owned by the sandbox's root, nosuid and nodev, at most
 *   tmpfs_bytes. Its pages are charged to the memory cgroup of whoever
 *   writes them, the sandbox's, so it counts against the memory limit; it
 *   goes with the sandbox's mount namespace, never into its layer. */
#define HU_MOUNTS_MAX 16
#define HU_MOUNT_TARGET_MAX 256
enum hu_mount_type {
	HU_MOUNT_TYPE_DIR = 0,
	HU_MOUNT_TYPE_TMPFS = 1,
};
struct hu_mount_spec {
	const char *source; /* host path of the directory, used when source_fd < 0 */
	int source_fd;      /* an fd (O_PATH is enough) of the directory, or -1 */
	const char *target; /* absolute path inside the sandbox (hu_mount_target_check) */
	int read_only;      /* MOUNT_ATTR_RDONLY: writes fail with EROFS */
	int idmap;          /* idmapped through the sandbox's user namespace: on-disk
			     * ids are the sandbox's ids (1000 = user), whatever
			     * host uid range this sandbox has */
	enum hu_mount_type type; /* DIR (zero) uses the fields above; TMPFS only target */
	uint64_t tmpfs_bytes;    /* TMPFS: its size cap, 1 .. the memory limit */
};

struct hu_sandbox_spec {
	char id[HU_ID_MAX];      /* [a-z0-9-], 1..63 chars; also the hostname */
	char template_name[HU_ID_MAX];
	struct hu_cgroup_limits limits;
	uint64_t disk_bytes;     /* size cap of the writable layer (data and metadata) */
	uint64_t disk_inodes;    /* unused on btrfs: inodes are metadata, charged to disk_bytes */
	int die_with_parent;     /* the sandbox is killed when its creator dies (hutch run) */
	/* the layer is thrown away with the sandbox and never restarted over
	 * (hutch run): its overlay need not sync it (HU_SETUP_VOLATILE) */
	int volatile_layer;
	const struct hu_mount_spec *mounts; /* extra mounts (borrowed), attached in order */
	size_t n_mounts;                    /* at most HU_MOUNTS_MAX */
	struct hu_net_spec net;  /* zero: loopback only */
	char from_snapshot[HU_ID_MAX]; /* "": an empty layer; else its files start as
					* this snapshot's (hu_sandbox_snapshot), over the
					* template the snapshot's sandbox had */
	/* A connected stream socket that hutch-init serves from its start as a
	 * client it accepted (the caller keeps the other end, and closes this
	 * one after the create): requests written to the other end before the
	 * create run as soon as the sandbox is up, without a connect and a
	 * round trip after it (hutch run's command). -1 (the default): none. */
	int first_conn_fd;
};

/* Is `target` an acceptable mount point inside a sandbox? Absolute, at most
 * HU_MOUNT_TARGET_MAX - 1 bytes, normalised (no empty, "." or ".."
 * components, no trailing '/'), and neither "/" nor under /proc, /sys, /dev
 * or /usr (the sandbox's own kernel views and the shared read-only system
 * files). EINVAL with the reason otherwise. Pure; the daemon and the
 * sandbox's setup stage both check. */
int hu_mount_target_check(const char *target, hu_err *err);
/* A list of extra mounts, as a whole: at most HU_MOUNTS_MAX, every target
 * acceptable (hu_mount_target_check) and none twice, every tmpfs sized
 * between 1 byte and the memory limit (memory_bytes; 0 = no limit). EINVAL
 * (negative: the message reaches the caller as it is) otherwise. Pure. */
int hu_mounts_check(const struct hu_mount_spec *mounts, size_t n, uint64_t memory_bytes, hu_err *err);
/* `PATH[:SIZE]` (hutch run --tmpfs), parsed in place (arg is the caller's):
 * m becomes a tmpfs at PATH of SIZE bytes (hu_parse_size syntax), or of 0
 * when SIZE is absent (the caller then sets hu_sandbox_shm_bytes). PATH
 * is checked as a mount target; an explicit size of 0 is refused (tmpfs
 * takes size=0 as "unlimited"). EINVAL or ERANGE with the reason. */
int hu_tmpfs_arg_parse(char *arg, struct hu_mount_spec *m, hu_err *err);
/* The default size of a sandbox's tmpfs mounts, /dev/shm's: half the
 * memory limit, or 64 MiB without one. */
uint64_t hu_sandbox_shm_bytes(const struct hu_cgroup_limits *limits);
/* A host path a mount may come from: absolute and normalised (no empty,
 * '.' or '..' component). EINVAL otherwise. */
int hu_host_path_check(const char *path, hu_err *err);

/* hutch-init's setup stage: run in a freshly cloned sandbox (hutch-init
 * --setup), it waits for the parent's "go" on fd 4, builds the root
 * filesystem, pivots into it, and locks itself down (no_new_privs, seccomp),
 * then returns so the process goes on as the sandbox's init: the fd of the
 * first connection the parent handed over (hu_sandbox_spec.first_conn_fd),
 * or -1. On failure it reports to the parent and exits. */
int hu_sandbox_setup(void);

/* Defaults a caller starts from (512 MiB, 256 pids, 1 CPU, 1 GiB disk). */
void hu_sandbox_spec_defaults(struct hu_sandbox_spec *spec);
/* Validate an id: 1..63 chars of [a-z0-9-], not starting with '-'. */
int hu_sandbox_id_valid(const char *id);

/* Fill defaults for a runtime configuration (environment variables
 * HUTCH_DATA_DIR, HUTCH_RUN_DIR, HUTCH_INIT, HUTCH_LAYERS and
 * HUTCH_LAYERS_SIZE override them). */
void hu_runtime_config_defaults(struct hu_runtime_config *cfg);
/* Open the runtime; this brings up the layer store (making and mounting
 * <data_dir>/layers.img on first use when the data dir's file system cannot
 * cap a layer itself). */
int hu_runtime_open(const struct hu_runtime_config *cfg, struct hu_runtime **out, hu_err *err);
/* Close; the last runtime of the host to close an image holding no layer
 * unmounts it. */
void hu_runtime_close(struct hu_runtime *rt);
/* Where the layers of this runtime live, and why that backend. */
void hu_runtime_storage(const struct hu_runtime *rt, struct hu_storage_info *out);
/* The same without opening a runtime or making anything (hutch doctor):
 * what hu_runtime_open would choose; out->ready says whether it is up. */
int hu_storage_probe(const struct hu_runtime_config *cfg, struct hu_storage_info *out, hu_err *err);
/* Call fn for the id of every layer kept under the data dir (the sandboxes
 * to bring back after a reboot, with those of this boot); a nonzero return
 * of fn stops the walk and is returned. */
int hu_runtime_layers(struct hu_runtime *rt, int (*fn)(const char *id, void *arg), void *arg, hu_err *err);
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
/* disk_used: what the writable layer holds, as of the file system's last
 * commit (at most a few seconds old). */
int hu_sandbox_stats(struct hu_sandbox *sb, struct hu_cgroup_stats *st, uint64_t *disk_used, hu_err *err);
/* Commit the layer's pending writes, so that the next disk_used is exact
 * (a few ms; for a caller about to report a full disk, not for metrics). */
int hu_sandbox_disk_settle(struct hu_sandbox *sb, hu_err *err);
/* Memory PSI "some avg10" (%) of the sandbox's cgroup, and of the parent
 * group of all sandboxes; -1 where there is none (cgroup v1, PSI off). */
double hu_sandbox_memory_psi(struct hu_sandbox *sb);
double hu_runtime_sandboxes_memory_psi(struct hu_runtime *rt);
/* Clean up sandboxes whose PID 1 is gone and that nobody will destroy (a
 * `hutch run` that was SIGKILLed): those whose directory is older than
 * min_age_s and whose init socket has no listener. Live sandboxes, and ones
 * being created, are never touched. With `owned` (a daemon), those it
 * says it owns are skipped; without (hutch run), so are sandboxes stopped
 * on purpose by hu_sandbox_stop. Also the layers of sandboxes that were to
 * die with their creator (hutch run) and whose run dir is gone (a reboot
 * came between), older than min_age_s; a daemon's layers are never swept.
 * *cleaned gets the count. */
int hu_runtime_sweep(struct hu_runtime *rt, unsigned min_age_s, int (*owned)(const char *id, void *arg), void *arg,
		     unsigned *cleaned, hu_err *err);

/* Remove whatever is left of sandbox `id` without a handle (its owner died):
 * kill its processes through the cgroup, remove its layer (its files), its
 * run directory, its socket, its cgroup and its uid slot. Missing pieces are
 * fine. */
int hu_sandbox_cleanup_leftover(struct hu_runtime *rt, const char *id, hu_err *err);

/* Take over a sandbox that a previous process created (a restarted daemon):
 * its directory, uid slot and cgroup, and its hutch-init if that still
 * runs (*alive = 1). A sandbox without init (stopped by a memory release,
 * or dead) can be restarted or destroyed through the handle. */
int hu_sandbox_adopt(struct hu_runtime *rt, const char *id, struct hu_sandbox **out, int *alive, hu_err *err);
/* Bring back sandbox spec->id from its layer alone, with no state in the
 * run dir (the host rebooted): take the uid slot its files belong to (the
 * layer's owner), make its run directory and its cgroup (spec->limits), and
 * return the handle of a stopped sandbox. hu_sandbox_restart(sb, spec) then
 * boots a fresh init over the files (spec->template_name must be the
 * template it was made from); hu_sandbox_destroy removes them. ENOENT: no
 * such layer; EEXIST: this boot knows the sandbox (hu_sandbox_adopt it);
 * EBUSY: its uid slot is taken by another sandbox (revive before creating
 * new sandboxes). On failure the files are untouched. */
int hu_sandbox_revive(struct hu_runtime *rt, const struct hu_sandbox_spec *spec, struct hu_sandbox **out,
		      hu_err *err);
/* Memory release: end every process of the sandbox (its memory is freed),
 * write its files back and drop their page cache from its cgroup, and keep
 * the files, uid slot and cgroup, for hu_sandbox_restart. */
int hu_sandbox_stop(struct hu_sandbox *sb, hu_err *err);
/* Start a fresh hutch-init over the kept files of a stopped sandbox, as
 * create does (blocking, a few ms). On failure the files are kept. */
int hu_sandbox_restart(struct hu_sandbox *sb, const struct hu_sandbox_spec *spec, hu_err *err);

/* Snapshots (snapshot.c): a read-only copy-on-write snapshot of the
 * sandbox's files, its layer, as <data_dir>/layers/.snapshots/<name> (a
 * valid id). Files only: no memory, no processes. The caller freezes a
 * running sandbox around it for a point-in-time copy (btrfs writes the
 * layer's dirty pages out first). All or nothing: a crash leaves the
 * snapshot whole or absent. EEXIST: the name is taken. */
int hu_sandbox_snapshot(struct hu_sandbox *sb, const char *name, hu_err *err);
/* Remove snapshot `name` (absent is fine). Sandboxes made from it keep
 * their files (theirs are copies on write). */
int hu_snapshot_delete(struct hu_runtime *rt, const char *name, hu_err *err);
/* Call fn for every snapshot kept under the data dir; a nonzero return of
 * fn stops the walk and is returned. */
int hu_runtime_snapshots(struct hu_runtime *rt, int (*fn)(const char *name, void *arg), void *arg, hu_err *err);

/* Free the handle and leave the sandbox running (a daemon shutting down:
 * the next start adopts it). */
void hu_sandbox_close(struct hu_sandbox *sb);
/* Kill every process, remove the layer (the files), the cgroup, the
 * directories and the uid slot, and free sb (also on error: what can be removed is removed).
 * Blocks while init dies (a few ms; at most HU_SANDBOX_EXIT_WAIT_MS). */
int hu_sandbox_destroy(struct hu_sandbox *sb, hu_err *err);
/* The same in two steps, for a caller with an event loop: _start sends init
 * its SIGKILL and returns the fd that becomes readable when init has exited
 * (-1: nothing to wait for). Wait for it (or HU_SANDBOX_EXIT_WAIT_MS), then
 * hu_sandbox_destroy does the rest without waiting for init again. */
#define HU_SANDBOX_EXIT_WAIT_MS 5000
int hu_sandbox_destroy_start(struct hu_sandbox *sb);

#endif
