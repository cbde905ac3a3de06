/* What the SQLite store says about templates (store.h): the sandboxes built on
 * one, for `hutch template rm`, which must not remove a template that a
 * running or paused sandbox still stands on. Prepared per call, like
 * sqlite_volumes.c: it is a rare operator command. */
#include <sqlite3.h>

#include "daemon/store/sqlite_internal.h"

int hu_sqlite_template_users(struct hu_store *st, const char *template_id, int *count, hu_err *err)
{
	sqlite3 *db = hu_sqlite_db(st);
	sqlite3_stmt *s;

	/* every state counts: creating and killing rows are sandboxes whose
	 * runtime work may still touch the template's files; a snapshot's
	 * sandboxes-to-be stand on it too */
	if (sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM sandboxes WHERE template = ?1) + (SELECT count(*) FROM snapshots WHERE template = ?1)", -1, &s, NULL) != SQLITE_OK)
		return hu_err_set(err, -EIO, "store: prepare: %s", sqlite3_errmsg(db));
	sqlite3_bind_text(s, 1, template_id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*count = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW)
		return hu_err_set(err, -EIO, "store: count the sandboxes of template %s: %s", template_id,
				  sqlite3_errmsg(db));
	return 0;
}
