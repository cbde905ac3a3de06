/*
 * cgroups behind one interface, with backends for the hosts hutch meets:
 *   - v2: a unified hierarchy with the memory, pids and cpu controllers;
 *   - v1: per-controller hierarchies (memory, pids, cpu, cpuacct, freezer);
 *   - hybrid: v1 controllers for the limits plus a controller-less cgroup2
 *     mount (for example /sys/fs/cgroup/unified) used for freeze, kill and
 *     clone3(CLONE_INTO_CGROUP), which are faster and race-free there.
 * hu_cgroup_detect() picks the backend from /proc/self/mountinfo.
 *
 * Block I/O (cgroup_io.c) is optional in every mode: the v2 `io` controller
 * where the cgroup2 root offers it, else a v1 `blkio` hierarchy where one is
 * mounted; a host with neither runs sandboxes without I/O limits (`hutch
 * doctor` says so).
 *
 * Every sandbox gets one group named after it under a parent group "hutch"
 * (configurable), in every hierarchy the backend uses.
 */
#ifndef HUTCH_RUNTIME_CGROUP_H
#define HUTCH_RUNTIME_CGROUP_H

#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"

enum hu_cgroup_mode { HU_CGROUP_V1 = 1, HU_CGROUP_V2 = 2, HU_CGROUP_HYBRID = 3 };

/* Block I/O of a group. The weight is a share of a disk's time against the
 * group's siblings (the other sandboxes; the parent group competes with the
 * host's own groups as one); it takes effect only where the disk's scheduler
 * or the io.cost controller weighs groups (bfq, iocost). The caps hold on
 * every disk they name, whatever its scheduler. */
#define HU_CG_IO_DEVS_MAX 8
#define HU_CG_IO_WEIGHT_DEFAULT 100
struct hu_cgroup_io {
	uint32_t weight; /* 1..10000 (v1 and bfq: at most 1000); 0 = leave the kernel's */
	uint64_t bps;    /* read and write cap each, bytes a second per disk; 0 = none */
	uint64_t iops;   /* read and write cap each, operations a second per disk; 0 = none */
	unsigned n_dev;  /* the whole disks the caps apply to */
	struct {
		uint32_t major, minor;
	} dev[HU_CG_IO_DEVS_MAX];
};

struct hu_cgroup_limits {
	uint64_t memory_bytes; /* 0 = unlimited; swap is always limited to 0 extra */
	uint64_t pids;         /* 0 = unlimited */
	uint32_t cpu_millis;   /* 1000 = one full CPU; 0 = unlimited */
	struct hu_cgroup_io io;
};

/* The operator's I/O settings as text (HUTCH_IO_WEIGHT, HUTCH_IO_BPS,
 * HUTCH_IO_IOPS; io.weight, io.bps, io.iops): a weight 1..10000, a size a
 * second ("50M"; 0 = no cap, else at least 1M) and a count a second (0 = no
 * cap, else at least 100). A NULL string leaves its field alone. */
int hu_cgroup_io_parse(const char *weight, const char *bps, const char *iops, struct hu_cgroup_io *out,
		       hu_err *err);

/* Where the hierarchies are mounted. Tests point these at temporary dirs. */
struct hu_cgroup_env {
	enum hu_cgroup_mode mode;
	char v2_root[256];      /* cgroup2 mount (v2 or hybrid), "" if none */
	char v1_memory[256];    /* v1 controller mounts, "" if absent */
	char v1_pids[256];
	char v1_cpu[256];
	char v1_freezer[256];
	char parent[64];        /* parent group name, default "hutch" */
	char v1_cpuacct[256];   /* v1 cpuacct mount (cpu usage in pure v1); may equal v1_cpu */
	char v1_blkio[256];     /* v1 blkio mount (v1 and hybrid), "" if absent: no I/O limits */
};

/* Group names (and the parent name): 1..64 characters of [A-Za-z0-9._-],
 * not "." and without "..", so a name can never leave its parent directory. */
#define HU_CGROUP_NAME_MAX 64
/* 0 if valid, else -1 with EINVAL. */
int hu_cgroup_validate_name(const char *name, hu_err *err);

struct hu_cgroup; /* one sandbox's group(s) */

/* Fill env from the running system's mounts; -1 if no usable cgroup setup. */
int hu_cgroup_detect(struct hu_cgroup_env *env, hu_err *err);
/* The same from a given mountinfo file (tests; another process's mounts). */
int hu_cgroup_detect_from(const char *mountinfo_path, struct hu_cgroup_env *env, hu_err *err);
const char *hu_cgroup_mode_name(enum hu_cgroup_mode mode);

/* Create the group `name` in every hierarchy and apply limits (lim NULL: no
 * limits). An empty group of that name left over by a crash is taken over
 * (and thawed); one with processes in it fails with EEXIST. On failure,
 * nothing is left behind. */
int hu_cgroup_create(const struct hu_cgroup_env *env, const char *name, const struct hu_cgroup_limits *lim,
		     struct hu_cgroup **out, hu_err *err);
/* Re-open an existing group after a daemon restart (no limits written). */
int hu_cgroup_open(const struct hu_cgroup_env *env, const char *name, struct hu_cgroup **out, hu_err *err);

/* An O_DIRECTORY fd of the cgroup2 group for clone3(CLONE_INTO_CGROUP), or
 * -1 when the backend has no cgroup2 group (pure v1). Owned by the cgroup. */
int hu_cgroup_clone_fd(const struct hu_cgroup *cg);
/* A stopped sandbox's group keeps no descriptor open (a released sandbox
 * holds only its files, and the daemon's descriptor budget does not count
 * it): drop the clone fd, and take it again before the group's next process
 * is cloned into it (0, or -1 if the group cannot be opened). */
void hu_cgroup_drop_clone_fd(struct hu_cgroup *cg);
int hu_cgroup_take_clone_fd(struct hu_cgroup *cg, hu_err *err);
/* Move pid into every hierarchy (v1 controllers; v2 unless CLONE_INTO_CGROUP
 * already placed it). */
int hu_cgroup_attach(struct hu_cgroup *cg, pid_t pid, int placed_by_clone, hu_err *err);
/* Move pid into the cgroup2 group only (nothing without one). */
int hu_cgroup_attach_unified(struct hu_cgroup *cg, pid_t pid, hu_err *err);

/* The most v1 hierarchies a group spans (memory, pids, cpu, cpuacct,
 * freezer, blkio). */
#define HU_CGROUP_V1_MAX 6
/* For a child that joins the group's v1 hierarchies itself: the `tasks`
 * file of each, open for writing (*n of them; the caller closes them). A
 * single-threaded process that writes "0" into each moves itself, and the
 * kernel then takes no global lock; a pid written into cgroup.procs takes
 * cgroup_threadgroup_rwsem for writing, which waits out an RCU grace period
 * (5-17 ms measured here, docs/benchmarks.md). The fds carry root's open-time
 * credentials, which is what the kernel checks. On failure none is open. */
int hu_cgroup_open_self_attach(const struct hu_cgroup *cg, int fds[HU_CGROUP_V1_MAX], size_t *n, hu_err *err);

int hu_cgroup_set_limits(struct hu_cgroup *cg, const struct hu_cgroup_limits *lim, hu_err *err);
/* Freeze / thaw every process of the group; return once the kernel reports
 * the group frozen (thawed). */
int hu_cgroup_freeze(struct hu_cgroup *cg, hu_err *err);
int hu_cgroup_thaw(struct hu_cgroup *cg, hu_err *err);
/* SIGKILL every process in the group and wait (bounded) until it is empty. */
int hu_cgroup_kill_all(struct hu_cgroup *cg, hu_err *err);
/* Give back the memory a group without processes still holds (the page
 * cache of its files): a sandbox whose memory is released keeps nothing in
 * RAM. Best effort where the kernel has no knob for it. */
int hu_cgroup_drop_cache(struct hu_cgroup *cg, hu_err *err);
/* Remove the (empty) group from every hierarchy and free cg. Idempotent on
 * missing dirs. cg is freed even on error. */
int hu_cgroup_destroy(struct hu_cgroup *cg, hu_err *err);
/* hu_cgroup_kill_all then hu_cgroup_destroy, for a group that is usually
 * empty already: it kills only when a group is found busy. cg is freed even
 * on error. */
int hu_cgroup_kill_destroy(struct hu_cgroup *cg, hu_err *err);
/* Free the handle without touching the groups. */
void hu_cgroup_close(struct hu_cgroup *cg);

struct hu_cgroup_stats {
	uint64_t memory_bytes;   /* current usage */
	uint64_t memory_limit;   /* 0 = none */
	uint64_t cpu_usage_usec; /* cumulative */
	uint64_t pids_current;
	uint64_t oom_kills;      /* where the kernel reports it */
};
int hu_cgroup_stats(struct hu_cgroup *cg, struct hu_cgroup_stats *st, hu_err *err);

/* What this host lets hutch set on a sandbox's block I/O, found with a
 * throw-away group (v1 blkio; v2 only when the root already passes `io` to
 * its children: the doctor changes nothing), for `hutch doctor`. */
struct hu_cgroup_io_support {
	const char *controller; /* "io (cgroup2)", "blkio (v1)", or NULL: none */
	const char *weight;     /* the weight knob ("io.weight", "io.bfq.weight", ...), NULL: none */
	int caps;               /* io.max or blkio.throttle.* present */
	int unknown;            /* v2 with io offered but not yet enabled for children: not looked at */
};
int hu_cgroup_io_probe(const struct hu_cgroup_env *env, struct hu_cgroup_io_support *out, hu_err *err);

/* Pure formatting helpers, exposed for unit tests: the exact strings written
 * to cpu.max (v2) and cpu.cfs_quota_us (v1) for a limit. */
void hu_cgroup_v2_cpu_max(uint32_t cpu_millis, char *buf, size_t n);
long long hu_cgroup_v1_cfs_quota(uint32_t cpu_millis, long long period_us);

#endif
