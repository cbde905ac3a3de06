/*
 * Named volumes: directories that outlive the sandboxes mounting them.
 *
 * A volume belongs to a team and has a name unique within it, an id (what
 * its files on disk are named after) and an optional size cap. Without a
 * cap it is the directory <volume_root>/<id>; with one it is an ext4 image
 * <volume_root>/<id>.img (sparse, made with mkfs.ext4) that the daemon
 * loop-mounts at <run_dir>/volumes/<id> from its first use until it is
 * deleted (every sandbox clones that one mount), so writing past the cap
 * fails with ENOSPC inside the sandbox. Either way, sandboxes
 * mount it idmapped: files are stored with the sandbox's ids (1000 = user),
 * whatever host uid range a sandbox has, so the next sandbox sees the same
 * owners. The rows live in the store (store.h).
 */
#ifndef HUTCH_DAEMON_VOLUMES_H
#define HUTCH_DAEMON_VOLUMES_H

#include <stdint.h>

#include "daemon/core/daemon.h"
#include "daemon/store/store.h" /* struct hu_volume, its rows */

#define HU_VOLUME_MIN_SIZE (4ull << 20)
#define HU_VOLUME_MAX_SIZE (16ull << 40)
/* The owner of a new volume's top directory: the sandbox's `user`. */
#define HU_VOLUME_OWNER 1000

/* ---- on disk (volumes.c) ------------------------------------------------- */
/* The configured volume root, or <data_dir>/volumes. */
void hu_volume_root(const struct hu_config *cfg, char *buf, size_t n);
/* Make the volume's directory or image (nothing is left on failure). */
int hu_volume_create_disk(const struct hu_config *cfg, const struct hu_volume *v, hu_err *err);
/* An O_PATH fd of the volume's top directory, for a sandbox to mount
 * (a capped volume's image is mounted first if it is not yet). */
int hu_volume_open(const struct hu_config *cfg, const struct hu_volume *v, hu_err *err);
/* Deleting is two steps around the row's deletion, so a crash at any point
 * loses nothing acknowledged: retire moves the files aside at once (a
 * capped volume's image is unmounted first) to <volume_root>/.trash-<id>
 * (or .trash-<id>.img); unretire moves them back (the row could not be
 * deleted); purge removes them with a background `rm` (a big or deep tree
 * must not stall the loop). */
int hu_volume_retire(const struct hu_config *cfg, const struct hu_volume *v, hu_err *err);
int hu_volume_unretire(const struct hu_config *cfg, const struct hu_volume *v, hu_err *err);
int hu_volume_purge(const struct hu_config *cfg, const struct hu_volume *v, hu_err *err);
/* At start: a retired volume whose row still exists (the daemon died
 * between the steps) is moved back; one without a row is purged. */
void hu_volume_sweep(struct hu_daemon *d);

#endif
