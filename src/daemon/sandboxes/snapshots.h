/*
 * Snapshots of sandboxes' files as the daemon keeps them: a store row (the
 * source of truth, rows.h) and the runtime's read-only copy-on-write copy
 * of the sandbox's layer (runtime/sandbox.h). A snapshot's id or name is a
 * templateID: a sandbox made from it stands on the template its sandbox had,
 * and its writable layer starts as a writable copy of the snapshot.
 *
 * Files only: memory and processes are not part of a snapshot (no
 * checkpointing of processes on these kernels); a sandbox made from one
 * boots a fresh init over the files.
 */
#ifndef HUTCH_DAEMON_SANDBOXES_SNAPSHOTS_H
#define HUTCH_DAEMON_SANDBOXES_SNAPSHOTS_H

#include "daemon/core/daemon.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/store/rows.h"

/* Is `name` an acceptable snapshot name? 1..63 of [A-Za-z0-9._-], starting
 * with a letter or digit. */
int hu_snapshot_name_valid(const char *name);

/* Take a snapshot of s (running or paused). A running sandbox is frozen for
 * the copy (milliseconds: btrfs writes its dirty pages out and snapshots
 * the layer's metadata) and runs on. The row is written first (state
 * creating), so that a daemon killed in the middle leaves nothing the next
 * start does not undo (hu_snapshots_reconcile). `state` is HU_SNAP_READY or
 * HU_SNAP_FORK (the point in time of a fork, never listed). A `name` the
 * team already uses moves to the new snapshot, and the old one is removed.
 * out gets the row. */
int hu_snapshot_take(struct hu_daemon *d, struct hu_sbx *s, const char *name, enum hu_snapshot_state state,
		     struct hu_snapshot_row *out, hu_err *err);
/* The team's ready snapshot (or a fork's, with forks) named by `key`: its
 * id or name, with an optional ":default" or ":latest" tag as E2B's
 * snapshot ids carry. ENOENT otherwise. */
int hu_snapshot_lookup(struct hu_daemon *d, const char *team, const char *key, int forks,
		       struct hu_snapshot_row *out, hu_err *err);
/* Remove a snapshot: its files, then its row. Sandboxes made from it keep
 * theirs. */
int hu_snapshot_remove(struct hu_daemon *d, const struct hu_snapshot_row *row, hu_err *err);
/* Does any snapshot stand on template_id? (It cannot be deleted then.) */
int hu_snapshot_uses_template(struct hu_daemon *d, const char *template_id);

/* At start, before sandboxes are created: snapshots being made or a fork's
 * when the last daemon died are undone (files and row), and files no ready
 * row owns are removed. Logged. */
void hu_snapshots_reconcile(struct hu_daemon *d);

#endif
