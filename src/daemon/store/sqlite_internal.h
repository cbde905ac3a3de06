/*
 * What the SQLite backend's files share (sqlite.c, sqlite_volumes.c,
 * sqlite_templates.c).
 */
#ifndef HUTCH_DAEMON_STORE_SQLITE_INTERNAL_H
#define HUTCH_DAEMON_STORE_SQLITE_INTERNAL_H

#include <sqlite3.h>

#include "daemon/store/backend.h"
#include "daemon/store/sqlite.h"

/* The database handle of a SQLite store. */
sqlite3 *hu_sqlite_db(struct hu_store *st);
/* Statements of the side files that run on a request's hot path (every
 * create asks whether its templateID names a snapshot): prepared once, on
 * first use, and kept until the store closes. The rest prepare per call. */
enum hu_sqlite_kept {
	HU_SQLITE_KEPT_SNAPSHOT_FIND,
	HU_SQLITE_KEPT_COUNT,
};
/* Kept statement id (sql is always the same for an id), reset and unbound;
 * NULL with err set when it cannot be prepared. */
sqlite3_stmt *hu_sqlite_kept(struct hu_store *st, enum hu_sqlite_kept id, const char *sql, hu_err *err);
/* -1 with ENOSPC (a full disk: 507) or EIO and SQLite's message. */
int hu_sqlite_err(sqlite3 *db, hu_err *err, const char *what);

/* sqlite_templates.c */
int hu_sqlite_template_users(struct hu_store *st, const char *template_id, int *count, hu_err *err);
/* sqlite_volumes.c: the volume calls of struct hu_store_ops */
int hu_sqlite_volume_add(struct hu_store *st, const struct hu_volume *v, hu_err *err);
int hu_sqlite_volume_find(struct hu_store *st, const char *team, const char *key, struct hu_volume *out, hu_err *err);
int hu_sqlite_volume_each(struct hu_store *st, const char *team, void (*fn)(const struct hu_volume *v, void *arg),
			  void *arg, hu_err *err);
int hu_sqlite_volume_delete(struct hu_store *st, const char *id, hu_err *err);
int hu_sqlite_volume_by_id(struct hu_store *st, const char *id, struct hu_volume *out, hu_err *err);

/* sqlite_snapshots.c: the snapshot calls of struct hu_store_ops */
int hu_sqlite_snapshot_put(struct hu_store *st, const struct hu_snapshot_row *row, hu_err *err);
int hu_sqlite_snapshot_find(struct hu_store *st, const char *team, const char *key, struct hu_snapshot_row *out,
			    hu_err *err);
int hu_sqlite_snapshot_each(struct hu_store *st, const char *team,
			    void (*fn)(const struct hu_snapshot_row *row, void *arg), void *arg, hu_err *err);
int hu_sqlite_snapshot_delete(struct hu_store *st, const char *id, hu_err *err);

#endif
