/* The volumes table of the SQLite store (backend.h). These statements are
 * prepared per call: volume operations are rare control-plane requests,
 * and keeping them here leaves sqlite.c's statement table alone. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "daemon/store/sqlite_internal.h"

static int vol_err(sqlite3 *db, hu_err *err, const char *what)
{
	return hu_sqlite_err(db, err, what);
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **s, hu_err *err)
{
	if (sqlite3_prepare_v2(db, sql, -1, s, NULL) != SQLITE_OK)
		return vol_err(db, err, "prepare");
	return 0;
}

int hu_sqlite_volume_add(struct hu_store *st, const struct hu_volume *v, hu_err *err)
{
	sqlite3 *db = hu_sqlite_db(st);
	sqlite3_stmt *s;
	int rc;

	if (prepare(db, "INSERT INTO volumes (id, team, name, size, created_at) VALUES (?1, ?2, ?3, ?4, ?5)", &s,
		    err) < 0)
		return -1;
	sqlite3_bind_text(s, 1, v->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, v->team, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, v->name, -1, SQLITE_STATIC);
	if (v->size)
		sqlite3_bind_int64(s, 4, (sqlite3_int64)v->size);
	else
		sqlite3_bind_null(s, 4);
	sqlite3_bind_int64(s, 5, v->created_at_ms);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc == SQLITE_CONSTRAINT)
		return hu_err_set(err, -EEXIST, "a volume named '%s' exists already", v->name);
	if (rc != SQLITE_DONE)
		return vol_err(db, err, "add volume");
	return 0;
}

static void row_to_volume(sqlite3_stmt *s, struct hu_volume *v)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->id, sizeof(v->id), "%s", (const char *)sqlite3_column_text(s, 0));
	snprintf(v->team, sizeof(v->team), "%s", (const char *)sqlite3_column_text(s, 1));
	snprintf(v->name, sizeof(v->name), "%s", (const char *)sqlite3_column_text(s, 2));
	v->size = sqlite3_column_type(s, 3) == SQLITE_NULL ? 0 : (uint64_t)sqlite3_column_int64(s, 3);
	v->created_at_ms = sqlite3_column_int64(s, 4);
}

int hu_sqlite_volume_find(struct hu_store *st, const char *team, const char *key, struct hu_volume *out, hu_err *err)
{
	sqlite3 *db = hu_sqlite_db(st);
	sqlite3_stmt *s;
	int rc;

	/* the id first: a name cannot look like another volume's id, both
	 * are team-scoped */
	if (prepare(db,
		    "SELECT id, team, name, size, created_at FROM volumes WHERE team = ?1 AND (id = ?2 OR name = ?2)"
		    " ORDER BY id = ?2 DESC LIMIT 1",
		    &s, err) < 0)
		return -1;
	sqlite3_bind_text(s, 1, team, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		row_to_volume(s, out);
	sqlite3_finalize(s);
	if (rc == SQLITE_DONE)
		return hu_err_set(err, -ENOENT, "volume '%.64s' not found", key);
	if (rc != SQLITE_ROW)
		return vol_err(db, err, "find volume");
	return 0;
}

int hu_sqlite_volume_each(struct hu_store *st, const char *team, void (*fn)(const struct hu_volume *v, void *arg),
			 void *arg, hu_err *err)
{
	sqlite3 *db = hu_sqlite_db(st);
	sqlite3_stmt *s;
	struct hu_volume v;
	int rc;

	if (prepare(db,
		    "SELECT id, team, name, size, created_at FROM volumes WHERE team = ?1 ORDER BY created_at, id", &s,
		    err) < 0)
		return -1;
	sqlite3_bind_text(s, 1, team, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		row_to_volume(s, &v);
		fn(&v, arg);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return vol_err(db, err, "list volumes");
	return 0;
}

int hu_sqlite_volume_delete(struct hu_store *st, const char *id, hu_err *err)
{
	sqlite3 *db = hu_sqlite_db(st);
	sqlite3_stmt *s;
	int rc;

	if (prepare(db, "DELETE FROM volumes WHERE id = ?1", &s, err) < 0)
		return -1;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return vol_err(db, err, "delete volume");
	return 0;
}

int hu_sqlite_volume_by_id(struct hu_store *st, const char *id, struct hu_volume *out, hu_err *err)
{
	sqlite3 *db = hu_sqlite_db(st);
	sqlite3_stmt *s;
	int rc;

	if (prepare(db, "SELECT id, team, name, size, created_at FROM volumes WHERE id = ?1", &s, err) < 0)
		return -1;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		row_to_volume(s, out);
	sqlite3_finalize(s);
	if (rc == SQLITE_DONE)
		return hu_err_set(err, -ENOENT, "volume %.64s not found", id);
	if (rc != SQLITE_ROW)
		return vol_err(db, err, "find volume");
	return 0;
}
