/*
 * Where the sandboxes' writable layers live: one btrfs subvolume per
 * sandbox under <data_dir>/layers/, capped by a quota group. The btrfs is
 * the data dir's own file system when that is btrfs with quota groups
 * enabled ("data-dir"); otherwise hutch keeps one image for the host,
 * <data_dir>/layers.img, loop-mounted on <data_dir>/layers ("image").
 * docs/operations.md ("Storage") says why.
 */
#ifndef HUTCH_RUNTIME_LAYERS_H
#define HUTCH_RUNTIME_LAYERS_H

#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>

#include "runtime/sandbox.h"
#include "util/err.h"

enum hu_layers_kind { HU_LAYERS_DATA_DIR = 1, HU_LAYERS_IMAGE = 2 };

/* What the choice depends on, gathered from the data dir (or made up by a
 * test). */
struct hu_layers_facts {
	int on_btrfs;      /* the data dir is on btrfs */
	int btrfs_quota;   /* ... with quota groups enabled */
	char fs_name[16];  /* the data dir's file system, for the reason */
	char want[16];     /* HUTCH_LAYERS: "auto" (or ""), "data-dir", "image" */
};

/* Pure: the backend for these facts and, in reason, why. EINVAL when
 * `want` names an unknown backend or one these facts cannot give. */
int hu_layers_choose(const struct hu_layers_facts *f, enum hu_layers_kind *kind, char *reason, size_t n,
		     hu_err *err);

struct hu_layers {
	enum hu_layers_kind kind;
	char root[PATH_MAX];  /* <data_dir>/layers: a subvolume per sandbox */
	char image[PATH_MAX]; /* <data_dir>/layers.img ("image" only) */
	char fsid[40];        /* /sys/fs/btrfs/<fsid>/ */
	char quota[16];       /* "simple" or "qgroup" */
	char reason[256];
	int root_fd;
	int lock_fd;          /* <data_dir>/layers.lock: held while bringing it up or down */
	int users_fd;         /* <data_dir>/layers.users: held shared while open */
	unsigned linger_ms;   /* the config's layers_linger_ms */
	/* What a keeper also holds for the next runtime (init_keep.h), set by
	 * the runtime before it closes: the sealed hutch-init, the stat of the
	 * file it was copied from, the sysfs view, and the cache directory to
	 * record them in
	 * (-1: nothing to hold; the keeper closes neither, the caller does). */
	int keep_init_fd;
	int keep_dir_fd;
	struct stat keep_init_stat;
	int keep_view_fd;       /* the sandboxes' sysfs view (sysfs_view.h), or -1 */
	int keep_view_netns_fd; /* and its network namespace */
};

/* Choose and bring up the backend (making, attaching and mounting the image
 * when it is the image's turn). Every runtime of the host holds
 * layers.users shared while open, so that hu_layers_close can tell when it
 * is the last; layers.lock serialises bringing the image up and down. */
int hu_layers_open(struct hu_layers *ly, const struct hu_runtime_config *cfg, hu_err *err);
/* Close; the last runtime to close an image that holds no layer unmounts
 * it (the loop device goes with it), so throw-away data dirs leave nothing.
 * With linger_ms, that last runtime hands the unmount to a keeper instead
 * (hu_layers_linger). */
void hu_layers_close(struct hu_layers *ly);
/* Is this the last runtime out of an image that holds no layer? On 1,
 * layers.lock and layers.users are held exclusively (the caller unmounts).
 * The layers root is opened afresh and must still be this image's mount. */
int hu_layers_last_out(struct hu_layers *ly);
/* layers_keeper.c: with both locks held exclusively (hu_layers_last_out),
 * start a detached keeper process that holds layers.users shared for
 * linger_ms (a runtime opened meanwhile finds the image mounted and reuses
 * it) and then unmounts the image if it is the last out by then; SIGTERM
 * makes it decide at once. Of the caller's descriptors it keeps only the
 * locks and the keep_* ones (its stdout and stderr are /dev/null), and
 * records the sealed hutch-init and the sysfs view it holds for the
 * runtimes that open meanwhile (init_keep.h). 0 when it took over (the caller only
 * closes its descriptors), -1 when it could not be started (the caller
 * unmounts itself). */
int hu_layers_linger(struct hu_layers *ly);
/* Without side effects: which backend hu_layers_open would use, and why. */
int hu_layers_probe(const struct hu_runtime_config *cfg, struct hu_storage_info *out, hu_err *err);

/* The directory of a layer holding the overlay's upper/ and work/, whose
 * files carry the ids the sandbox sees (0 is its root), not host uids. */
#define HU_LAYER_RW "rw"

/* One sandbox's layer: <root>/<id>, a subvolume capped at `bytes` holding
 * rootfs/, lower/ and bootid/ (mount points) owned by `owner` (the
 * sandbox's host uid base, which identifies its uid slot again later), rw/
 * (upper/, work/: root's, mapped to the sandbox's root by an idmapped mount
 * when it starts), and with `ephemeral` the marker file of that name. */
int hu_layer_create(const struct hu_layers *ly, const char *id, uint64_t bytes, uint32_t owner, int ephemeral,
		    hu_err *err);
/* A layer whose files start as snapshot `snap`'s (snapshot.c): a writable
 * snapshot of it, capped at `bytes`, its top directories given to `owner`
 * (the files in rw/ need no change: they are not tied to a uid slot; those
 * of a snapshot of a layer without rw/ are moved from the snapshot's uid
 * range to the one starting at `owner`, a walk over them). Nothing is left
 * on failure. */
int hu_layer_from_snapshot(const struct hu_layers *ly, const char *snap, const char *id, uint64_t bytes,
			   uint32_t owner, hu_err *err);
/* Does the layer (an fd of its top directory) keep its files in rw/, to be
 * mounted idmapped? 0: a layer made before that, upper/ and work/ at its
 * top with the files at the sandbox's host uids. */
int hu_layer_idmapped(int layer_fd);
/* Was the layer made for a sandbox that dies with its creator (hutch run)?
 * Such a layer is debris once its run dir is gone (a reboot). */
int hu_layer_ephemeral(const struct hu_layers *ly, const char *id);
/* Remove the layer and everything in it; a missing one is fine. */
int hu_layer_destroy(const struct hu_layers *ly, const char *id, hu_err *err);
int hu_layer_path(const struct hu_layers *ly, const char *id, char *buf, size_t n, hu_err *err);
/* Bytes the layer holds (as of the file system's last commit). */
int hu_layer_usage(const struct hu_layers *ly, const char *id, uint64_t *bytes, hu_err *err);
/* The owner of the layer's top directory (ENOENT: no such layer). */
int hu_layer_owner(const struct hu_layers *ly, const char *id, uint32_t *uid, hu_err *err);

#endif
