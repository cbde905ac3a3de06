/* The volumes table and the template count of the PostgreSQL store
 * (backend.h), as in sqlite_volumes.c and sqlite_templates.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/pg_internal.h"

int hu_pg_template_users(struct hu_store *st, const char *template_id, int *count, hu_err *err)
{
	const char *p[] = {template_id};
	PGresult *res;

	/* every state counts: creating and killing rows are sandboxes whose
	 * runtime work may still touch the template's files; a snapshot's
	 * sandboxes-to-be stand on it too */
	if (hu_pg_exec(hu_pg(st), "count the sandboxes of a template", "SELECT (SELECT count(*) FROM sandboxes WHERE template = $1) + (SELECT count(*) FROM snapshots WHERE template = $1)",
		       1, p, &res, err) < 0)
		return -1;
	*count = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int hu_pg_volume_add(struct hu_store *st, const struct hu_volume *v, hu_err *err)
{
	char size[24], at[24];
	struct pg_store *pg = hu_pg(st);
	/* the volume's files are on this node's disk: placement sends the
	 * creates that mount it here (pg_place.c) */
	const char *p[] = {v->id, v->team, v->name, v->size ? size : NULL, at, pg->node[0] ? pg->node : NULL};

	snprintf(size, sizeof(size), "%" PRIu64, v->size);
	snprintf(at, sizeof(at), "%" PRId64, v->created_at_ms);
	if (hu_pg_exec(hu_pg(st), "add volume",
		       "INSERT INTO volumes (id, team, name, size, created_at, node) VALUES ($1, $2, $3, $4, $5, $6)", 6, p, NULL,
		       err) < 0) {
		if (err->code == EEXIST)
			hu_err_set(err, -EEXIST, "a volume named '%s' exists already", v->name);
		return -1;
	}
	return 0;
}

static void row_to_volume(PGresult *res, int r, struct hu_volume *v)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->id, sizeof(v->id), "%s", PQgetvalue(res, r, 0));
	snprintf(v->team, sizeof(v->team), "%s", PQgetvalue(res, r, 1));
	snprintf(v->name, sizeof(v->name), "%s", PQgetvalue(res, r, 2));
	v->size = PQgetisnull(res, r, 3) ? 0 : strtoull(PQgetvalue(res, r, 3), NULL, 10);
	v->created_at_ms = strtoll(PQgetvalue(res, r, 4), NULL, 10);
	snprintf(v->node, sizeof(v->node), "%s", PQgetvalue(res, r, 5));
}

/* The one volume a query finds, or ENOENT naming `key`. */
static int one_volume(struct hu_store *st, const char *sql, int n, const char *const *p, const char *key,
		      struct hu_volume *out, hu_err *err)
{
	PGresult *res;
	int rc = 0;

	if (hu_pg_exec(hu_pg(st), "find volume", sql, n, p, &res, err) < 0)
		return -1;
	if (PQntuples(res) == 1)
		row_to_volume(res, 0, out);
	else
		rc = hu_err_set(err, -ENOENT, "volume '%.64s' not found", key);
	PQclear(res);
	return rc;
}

int hu_pg_volume_find(struct hu_store *st, const char *team, const char *key, struct hu_volume *out, hu_err *err)
{
	const char *p[] = {team, key};

	/* the id first: a name cannot look like another volume's id, both
	 * are team-scoped */
	return one_volume(st,
			  "SELECT id, team, name, size, created_at, coalesce(node, '') FROM volumes WHERE team = $1 AND (id = $2 OR name = $2)"
			  " ORDER BY id = $2 DESC LIMIT 1",
			  2, p, key, out, err);
}

int hu_pg_volume_each(struct hu_store *st, const char *team, void (*fn)(const struct hu_volume *v, void *arg),
		      void *arg, hu_err *err)
{
	const char *p[] = {team};
	struct hu_volume v;
	PGresult *res;

	if (hu_pg_exec(hu_pg(st), "list volumes",
		       "SELECT id, team, name, size, created_at, coalesce(node, '') FROM volumes WHERE team = $1 ORDER BY created_at, id", 1,
		       p, &res, err) < 0)
		return -1;
	for (int r = 0; r < PQntuples(res); r++) {
		row_to_volume(res, r, &v);
		fn(&v, arg);
	}
	PQclear(res);
	return 0;
}

int hu_pg_volume_delete(struct hu_store *st, const char *id, hu_err *err)
{
	const char *p[] = {id};

	return hu_pg_exec(hu_pg(st), "delete volume", "DELETE FROM volumes WHERE id = $1", 1, p, NULL, err);
}

int hu_pg_volume_by_id(struct hu_store *st, const char *id, struct hu_volume *out, hu_err *err)
{
	const char *p[] = {id};

	return one_volume(st, "SELECT id, team, name, size, created_at, coalesce(node, '') FROM volumes WHERE id = $1", 1, p, id, out, err);
}
