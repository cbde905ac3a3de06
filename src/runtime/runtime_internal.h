/* Definitions shared by the runtime's own files; not part of its API. */
#ifndef HUTCH_RUNTIME_INTERNAL_H
#define HUTCH_RUNTIME_INTERNAL_H

#include <sys/stat.h>

#include "runtime/layers.h"
#include "runtime/sandbox.h"
#include "runtime/net.h"
#include "runtime/seccomp.h"

/* Each sandbox gets HU_UID_RANGE consecutive host uids (and gids) starting at
 * HU_UID_FIRST + slot * HU_UID_RANGE; no two live sandboxes share a slot. */
#define HU_UID_FIRST 0x40000000u
#define HU_UID_RANGE 65536u
#define HU_SLOTS_MAX 16384u

/* Bump when the layout of a built template changes, so old ones are rebuilt. */
#define HU_TEMPLATE_LAYOUT 4

struct nft_ctx;

struct hu_runtime {
	struct hu_runtime_config cfg;
	struct hu_cgroup_env cg;
	int init_memfd; /* sealed copy of hutch-init, executed in every sandbox */
	struct stat init_stat; /* of the file it was copied from (st_ino 0: unknown), for template.c's sudo stamp */
	struct hu_seccomp_prog seccomp; /* compiled once (or read from the run dir's cache), installed by every sandbox */
	char sandboxes_dir[PATH_MAX];
	char ctl_dir[PATH_MAX];
	char slots_dir[PATH_MAX];
	char templates_dir[PATH_MAX];
	struct hu_net_config net; /* net.c */
	struct nft_ctx *nft;      /* NULL unless the network mode is nat */
	int host_netns;           /* the runtime's own network namespace */
	struct hu_cgroup_io io;   /* the operator's I/O weight and caps (no disks) */
	struct hu_layers layers;  /* the writable layers (layers.c) */
	int have_layers;
	int sysfs_view; /* the sandboxes' /sys (sysfs_view.h), or HU_SYSFS_VIEW_UNTRIED / _NONE */
	int sysfs_netns; /* the view's network namespace, kept alive (or -1) */
	int cache_fd;    /* <run_dir>/cache (hu_seccomp_cache_dir), or -1: the seccomp program, init_keep's record */
};

/* A sealed (read-only, fixed-size) memfd copy of the binary at path, named
 * `name` (runtime.c); the caller owns the fd. With `src`, the file's stat
 * as of the copy (zeroed when the file changed while it was copied). */
int hu_runtime_seal_binary(const char *path, const char *name, struct stat *src, hu_err *err);

/* uid slots (idrange.c) */
int hu_slot_acquire(struct hu_runtime *rt, const char *id, uint32_t *slot, hu_err *err);
/* Take exactly `slot` for `id` (a sandbox whose files already carry its
 * uids); EBUSY if another sandbox holds it. */
int hu_slot_acquire_exact(struct hu_runtime *rt, const char *id, uint32_t slot, hu_err *err);
void hu_slot_release(struct hu_runtime *rt, uint32_t slot);
/* Release the slot(s) recorded for sandbox `id` (a leftover without handle). */
void hu_slot_release_id(struct hu_runtime *rt, const char *id);
/* The slot recorded for sandbox `id` (ENOENT: none). */
int hu_slot_find_id(struct hu_runtime *rt, const char *id, uint32_t *slot, hu_err *err);

/* The path of a template's root directory. */
int hu_template_rootfs(const struct hu_runtime *rt, const char *name, char *buf, size_t n, hu_err *err);
/* Does the template bring its own /usr (a built one: <name>/own-usr)? */
int hu_template_own_usr(const struct hu_runtime *rt, const char *name);

#endif
