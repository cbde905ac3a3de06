/* The snapshots table of the SQLite store (backend.h). Prepared per call,
 * like sqlite_volumes.c: snapshots are rare control-plane requests; but the
 * find is kept prepared (hu_sqlite_kept): every create runs it. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "daemon/store/sqlite_internal.h"

#define COLUMNS "id, team, name, sandbox, template, state, created_at, cpu, memory, disk"

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **s, hu_err *err)
{
	if (sqlite3_prepare_v2(db, sql, -1, s, NULL) != SQLITE_OK)
		return hu_sqlite_err(db, err, "prepare");
	return 0;
}

static const char *text(sqlite3_stmt *s, int col)
{
	const unsigned char *t = sqlite3_column_text(s, col);
	return t ? (const char *)t : "";
}

static void row_to_snapshot(sqlite3_stmt *s, struct hu_snapshot_row *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", text(s, 0));
	snprintf(r->team, sizeof(r->team), "%s", text(s, 1));
	snprintf(r->name, sizeof(r->name), "%s", text(s, 2));
	snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", text(s, 3));
	snprintf(r->template_id, sizeof(r->template_id), "%s", text(s, 4));
	r->state = (enum hu_snapshot_state)sqlite3_column_int(s, 5);
	r->created_at_ms = sqlite3_column_int64(s, 6);
	r->cpu_millis = (uint32_t)sqlite3_column_int64(s, 7);
	r->memory_bytes = (uint64_t)sqlite3_column_int64(s, 8);
	r->disk_bytes = (uint64_t)sqlite3_column_int64(s, 9);
}

int hu_sqlite_snapshot_put(struct hu_store *st, const struct hu_snapshot_row *row, hu_err *err)
{
	sqlite3 *db = hu_sqlite_db(st);
	sqlite3_stmt *s;
	int rc;

	if (prepare(db,
		    "INSERT INTO snapshots (" COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
		    " ON CONFLICT(id) DO UPDATE SET name = ?3, state = ?6",
		    &s, err) < 0)
		return -1;
	sqlite3_bind_text(s, 1, row->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, row->team, -1, SQLITE_STATIC);
	if (row->name[0])
		sqlite3_bind_text(s, 3, row->name, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 3);
	sqlite3_bind_text(s, 4, row->sandbox_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, row->template_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 6, (int)row->state);
	sqlite3_bind_int64(s, 7, row->created_at_ms);
	sqlite3_bind_int64(s, 8, row->cpu_millis);
	sqlite3_bind_int64(s, 9, (sqlite3_int64)row->memory_bytes);
	sqlite3_bind_int64(s, 10, (sqlite3_int64)row->disk_bytes);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc == SQLITE_CONSTRAINT)
		return hu_err_set(err, -EEXIST, "a snapshot named '%s' exists already", row->name);
	if (rc != SQLITE_DONE)
		return hu_sqlite_err(db, err, "save snapshot");
	return 0;
}

int hu_sqlite_snapshot_find(struct hu_store *st, const char *team, const char *key, struct hu_snapshot_row *out,
			    hu_err *err)
{
	sqlite3 *db = hu_sqlite_db(st);
	sqlite3_stmt *s = hu_sqlite_kept(st, HU_SQLITE_KEPT_SNAPSHOT_FIND,
					 "SELECT " COLUMNS " FROM snapshots WHERE team = ?1 AND (id = ?2 OR name = ?2)"
					 " ORDER BY id = ?2 DESC LIMIT 1",
					 err);
	int rc;

	if (!s)
		return -1;
	sqlite3_bind_text(s, 1, team, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		row_to_snapshot(s, out);
	else if (rc != SQLITE_DONE)
		hu_sqlite_err(db, err, "find snapshot"); /* before the reset, which clears the message */
	sqlite3_reset(s);
	if (rc == SQLITE_DONE)
		return hu_err_set(err, -ENOENT, "snapshot '%.64s' not found", key);
	return rc == SQLITE_ROW ? 0 : -1;
}

int hu_sqlite_snapshot_each(struct hu_store *st, const char *team,
			    void (*fn)(const struct hu_snapshot_row *row, void *arg), void *arg, hu_err *err)
{
	sqlite3 *db = hu_sqlite_db(st);
	sqlite3_stmt *s;
	struct hu_snapshot_row row;
	int rc;

	if (prepare(db,
		    team ? "SELECT " COLUMNS " FROM snapshots WHERE team = ?1 ORDER BY created_at, id"
			 : "SELECT " COLUMNS " FROM snapshots ORDER BY created_at, id",
		    &s, err) < 0)
		return -1;
	if (team)
		sqlite3_bind_text(s, 1, team, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		row_to_snapshot(s, &row);
		fn(&row, arg);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return hu_sqlite_err(db, err, "list snapshots");
	return 0;
}

int hu_sqlite_snapshot_delete(struct hu_store *st, const char *id, hu_err *err)
{
	sqlite3 *db = hu_sqlite_db(st);
	sqlite3_stmt *s;
	int rc;

	if (prepare(db, "DELETE FROM snapshots WHERE id = ?1", &s, err) < 0)
		return -1;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return hu_sqlite_err(db, err, "delete snapshot");
	return 0;
}
