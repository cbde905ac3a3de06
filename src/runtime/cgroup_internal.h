/* Shared by cgroup.c (detection, dispatch, helpers) and the v1/v2 backends. */
#ifndef HUTCH_RUNTIME_CGROUP_INTERNAL_H
#define HUTCH_RUNTIME_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/cgroup.h"
#include "util/err.h"

/* The hierarchies a group can live in. The unified (cgroup2) one comes last so
 * that creation does it after the v1 groups and a failure there exercises the
 * rollback of everything before it. */
enum hu_cg_hier {
	HU_CG_MEMORY,
	HU_CG_PIDS,
	HU_CG_CPU,
	HU_CG_CPUACCT,
	HU_CG_FREEZER,
	HU_CG_BLKIO,
	HU_CG_UNIFIED,
	HU_CG_NHIER
};

/* root (< 256) + '/' + parent (<= 64) + '/' + name (<= 64) fits with room. */
#define HU_CG_DIR_MAX 512

/* Bounded waits, in milliseconds. */
#define HU_CG_FREEZE_TIMEOUT_MS 2000
#define HU_CG_KILL_TIMEOUT_MS 5000
#define HU_CG_RMDIR_TIMEOUT_MS 1000

struct hu_cgroup {
	enum hu_cgroup_mode mode;
	const struct hu_cg_backend *be;
	char name[HU_CGROUP_NAME_MAX + 1];
	char root[HU_CG_NHIER][HU_CG_DIR_MAX];       /* the hierarchy's mount */
	char parent_dir[HU_CG_NHIER][HU_CG_DIR_MAX]; /* "" when the hierarchy is unused */
	char dir[HU_CG_NHIER][HU_CG_DIR_MAX];
	bool present[HU_CG_NHIER]; /* the backend uses it and the host has it */
	int unified_fd; /* O_DIRECTORY of dir[HU_CG_UNIFIED], or -1 */
};

/* Where one statistic comes from: a single-number knob (key == NULL) or the
 * value of `key` in a "key value" per-line knob, divided by `divisor`. */
struct hu_cg_counter {
	enum hu_cg_hier hier;
	const char *knob;
	const char *key;
	uint64_t divisor;
};

struct hu_cg_stat_layout {
	struct hu_cg_counter memory, memory_limit, cpu_usec, pids, oom_kills;
};

/* What differs between the modes; everything else is shared. */
struct hu_cg_backend {
	bool uses[HU_CG_NHIER];
	/* hierarchies a host may lack (blkio): then the group goes without */
	bool optional[HU_CG_NHIER];
	/* Called once the parent exists in `h`, before the group is made there
	 * (v2: delegate the controllers to the parent's children). May be NULL. */
	int (*prepare_parent)(struct hu_cgroup *cg, enum hu_cg_hier h, hu_err *err);
	int (*set_limits)(struct hu_cgroup *cg, const struct hu_cgroup_limits *lim, hu_err *err);
	/* Freeze (frozen) or thaw and wait until the kernel reports it done. */
	int (*freeze)(struct hu_cgroup *cg, bool frozen, hu_err *err);
	/* SIGKILL everything; the caller waits for the group to empty. */
	int (*kill)(struct hu_cgroup *cg, hu_err *err);
	const struct hu_cg_stat_layout *stats;
};

extern const struct hu_cg_backend hu_cg_backend_v1;
extern const struct hu_cg_backend hu_cg_backend_v2;

/* Backend pieces the hybrid mode combines (v1 limits, cgroup2 freeze/kill). */
int hu_cg_v1_set_limits(struct hu_cgroup *cg, const struct hu_cgroup_limits *lim, hu_err *err);
int hu_cg_v2_freeze(struct hu_cgroup *cg, bool frozen, hu_err *err);
int hu_cg_v2_kill(struct hu_cgroup *cg, hu_err *err);

/* Block I/O (cgroup_io.c): the io controller's knobs in the cgroup2 group,
 * the blkio ones in the v1 group. Knobs the kernel lacks are skipped. */
int hu_cg_v2_set_io(struct hu_cgroup *cg, const struct hu_cgroup_io *io, hu_err *err);
int hu_cg_v1_set_io(struct hu_cgroup *cg, const struct hu_cgroup_io *io, hu_err *err);

/* snprintf into buf; -1 with ENAMETOOLONG if it did not fit. */
int hu_cg_format(char *buf, size_t n, hu_err *err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* dir + "/" + leaf into buf (checked for truncation). */
int hu_cg_join(char *buf, size_t n, const char *dir, const char *leaf, hu_err *err);

/* Knob I/O in the group directory of h. */
int hu_cg_write(const struct hu_cgroup *cg, enum hu_cg_hier h, const char *knob, const char *val, hu_err *err);
/* hu_cg_write, but a knob the kernel does not offer (ENOENT) is not an error;
 * *written says whether it was there. */
int hu_cg_write_if_present(const struct hu_cgroup *cg, enum hu_cg_hier h, const char *knob, const char *val,
			   bool *written, hu_err *err);
/* Write `v`, or `unlimited` when v is 0 (the API's "no limit"). */
int hu_cg_write_limit(const struct hu_cgroup *cg, enum hu_cg_hier h, const char *knob, uint64_t v,
		      const char *unlimited, hu_err *err);
ssize_t hu_cg_read(const struct hu_cgroup *cg, enum hu_cg_hier h, const char *knob, char *buf, size_t n,
		   hu_err *err);
/* Parse a counter; "max" reads as UINT64_MAX. A missing key reads as 0. */
int hu_cg_read_counter(const struct hu_cgroup *cg, const struct hu_cg_counter *c, uint64_t *out, hu_err *err);

/* Whether the controller list `list` (space separated, "+name" accepted as
 * written into a fake tree) contains `ctrl`. */
bool hu_cg_list_has(const char *list, const char *ctrl);

/* Poll probe(cg, arg) every few ms until it returns 1 (done) or -1 (error),
 * or timeout_ms passes (-1 with ETIMEDOUT, message naming `what`). */
typedef int (*hu_cg_probe)(struct hu_cgroup *cg, int arg, hu_err *err);
int hu_cg_wait(struct hu_cgroup *cg, hu_cg_probe probe, int arg, int timeout_ms, const char *what, hu_err *err);

/* 1 if cgroup.procs of h lists no process, 0 if it does, -1 on error. */
int hu_cg_is_empty(struct hu_cgroup *cg, int h, hu_err *err);

/* A freezer: writing values[1] to knob freezes, values[0] thaws; `reached`
 * probes whether the kernel reports the state `arg` (1 frozen, 0 thawed). */
struct hu_cg_freezer {
	enum hu_cg_hier hier;
	const char *knob;
	const char *values[2];
	hu_cg_probe reached;
};
/* Request the state and wait for it (bounded). A freeze that does not finish
 * in time is undone, so the group is never left half frozen. */
int hu_cg_set_frozen(struct hu_cgroup *cg, const struct hu_cg_freezer *fz, bool frozen, hu_err *err);

/* Kill by enumeration, for hierarchies without cgroup.kill: freeze, SIGKILL
 * every pid in cgroup.procs of h, thaw, until empty (bounded). */
int hu_cg_kill_by_enumeration(struct hu_cgroup *cg, enum hu_cg_hier h, hu_err *err);

#endif
