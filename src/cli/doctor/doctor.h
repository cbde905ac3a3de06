/*
 * `hutch doctor`'s internal API: what a check is given, what it fills in, how
 * it words its finding, and the list of checks. Only the files of the doctor
 * include it; the verb itself is cmd_doctor() in cli/cli.h.
 *
 * A check fills one struct doctor_result: a status, a finding and, for
 * warn/FAIL, what the missing piece disables. FAIL is reserved for what a
 * sandbox cannot start without.
 */
#ifndef HUTCH_CLI_DOCTOR_DOCTOR_H
#define HUTCH_CLI_DOCTOR_DOCTOR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/cgroup.h"
#include "util/err.h"

/* What the host keeps for itself when the doctor counts how many sandboxes
 * fit in its memory. */
#define DOCTOR_HOST_RESERVE_MIB 1024ULL

#define DOCTOR_TEXT_MAX 768

/* Ordered: a verdict only ever lowers a result, and the summary counts by it. */
enum doctor_status { DOCTOR_OK, DOCTOR_WARN, DOCTOR_FAIL };

struct doctor_result {
	enum doctor_status status;
	const char *name;
	char finding[DOCTOR_TEXT_MAX];
	char disables[DOCTOR_TEXT_MAX]; /* "" when nothing is */
};

/* What several checks share, worked out once before the checks run. */
struct doctor_ctx {
	char tmp[PATH_MAX]; /* private scratch dir for mount probes, "" if none */
	char tmp_err[HU_ERR_MSG_MAX];
	struct hu_cgroup_env cg;
	bool cg_ok;
	char cg_err[HU_ERR_MSG_MAX];
	unsigned kmajor, kminor;
	char krelease[65];
	uint64_t swap_kib;
	const char *config_path; /* --config, NULL: what `hutch serve` reads without flags */
};

/* context.c: fill cx (its scratch directory included), and remove that again. */
void doctor_ctx_init(struct doctor_ctx *cx);
void doctor_ctx_fini(struct doctor_ctx *cx);

/* report.c: append to a string buffer, never past its end. */
void doctor_appendf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Add to the finding; parts are joined with "; " so one check can report
 * several facts on its single line. */
void doctor_found(struct doctor_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Lower the verdict to `st` (a check never improves it again) and record what
 * the missing piece disables. */
void doctor_verdict(struct doctor_result *r, enum doctor_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Print all n results, then the summary line (or one JSON object); count[]
 * holds how many results have each status. */
void doctor_print_text(const struct doctor_result *res, size_t n, const int count[3]);
void doctor_print_json(const struct doctor_result *res, size_t n, const int count[3]);

/* context.c: cut path back to its nearest ancestor that exists (what a
 * directory not made yet would be made in); "/x" stays "/x" at worst. */
void doctor_nearest_existing(char *path);

/* host_text.c: whether a whitespace-separated list (cgroup.controllers,
 * actions_avail) contains `word`. */
bool doctor_has_word(const char *list, const char *word);
/* The kB figure after `key` ("MemTotal:") in /proc/meminfo's text; *ok says
 * whether the key is there at all. */
uint64_t doctor_meminfo_kib(const char *buf, const char *key, bool *ok);

/* The checks, one group per file, in the order the report lists them. */
typedef void doctor_check_fn(const struct doctor_ctx *cx, struct doctor_result *r);

doctor_check_fn doctor_check_root;           /* host.c */
doctor_check_fn doctor_check_userns;         /* namespaces.c */
doctor_check_fn doctor_check_namespaces;     /* namespaces.c */
doctor_check_fn doctor_check_idmap;          /* idmap.c */
doctor_check_fn doctor_check_overlay;        /* rootfs.c */
doctor_check_fn doctor_check_overlay_userns; /* rootfs.c */
doctor_check_fn doctor_check_tmpfs;          /* rootfs.c */
doctor_check_fn doctor_check_cgroups;        /* cgroups.c */
doctor_check_fn doctor_check_cg_swap;        /* cgroups.c */
doctor_check_fn doctor_check_cg2_features;   /* cgroups.c */
doctor_check_fn doctor_check_block_io;       /* cgroups.c */
doctor_check_fn doctor_check_psi;            /* cgroups.c */
doctor_check_fn doctor_check_seccomp;        /* confinement.c */
doctor_check_fn doctor_check_core_pattern;   /* confinement.c */
doctor_check_fn doctor_check_landlock;       /* confinement.c */
doctor_check_fn doctor_check_memory;         /* limits.c */
doctor_check_fn doctor_check_capacity;       /* capacity.c */
doctor_check_fn doctor_check_floor;          /* floor.c */
doctor_check_fn doctor_check_nofile;         /* limits.c */
doctor_check_fn doctor_check_volumes;        /* volumes.c */
doctor_check_fn doctor_check_storage;        /* storage.c */
doctor_check_fn doctor_check_run_dir;        /* rundir.c */
doctor_check_fn doctor_check_ipv6;           /* ipv6.c */
doctor_check_fn doctor_check_kernel;         /* host.c */
doctor_check_fn doctor_check_store;          /* store.c */

#endif
