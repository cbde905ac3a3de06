/* The snapshots table of the PostgreSQL store (backend.h), as in
 * sqlite_snapshots.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/pg_internal.h"

#define COLUMNS "id, team, name, sandbox, template, state, created_at, cpu, memory, disk"

int hu_pg_snapshot_put(struct hu_store *st, const struct hu_snapshot_row *row, hu_err *err)
{
	char state[8], at[24], cpu[16], mem[24], disk[24];
	const char *p[] = {row->id, row->team, row->name[0] ? row->name : NULL, row->sandbox_id, row->template_id,
			   state, at, cpu, mem, disk};

	snprintf(state, sizeof(state), "%d", (int)row->state);
	snprintf(at, sizeof(at), "%" PRId64, row->created_at_ms);
	snprintf(cpu, sizeof(cpu), "%" PRIu32, row->cpu_millis);
	snprintf(mem, sizeof(mem), "%" PRIu64, row->memory_bytes);
	snprintf(disk, sizeof(disk), "%" PRIu64, row->disk_bytes);
	if (hu_pg_exec(hu_pg(st), "save snapshot",
		       "INSERT INTO snapshots (" COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
		       " ON CONFLICT (id) DO UPDATE SET name = $3, state = $6",
		       10, p, NULL, err) < 0) {
		if (err->code == EEXIST)
			hu_err_set(err, -EEXIST, "a snapshot named '%s' exists already", row->name);
		return -1;
	}
	return 0;
}

static void row_to_snapshot(PGresult *res, int r, struct hu_snapshot_row *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "%s", PQgetvalue(res, r, 0));
	snprintf(s->team, sizeof(s->team), "%s", PQgetvalue(res, r, 1));
	snprintf(s->name, sizeof(s->name), "%s", PQgetisnull(res, r, 2) ? "" : PQgetvalue(res, r, 2));
	snprintf(s->sandbox_id, sizeof(s->sandbox_id), "%s", PQgetvalue(res, r, 3));
	snprintf(s->template_id, sizeof(s->template_id), "%s", PQgetvalue(res, r, 4));
	s->state = (enum hu_snapshot_state)atoi(PQgetvalue(res, r, 5));
	s->created_at_ms = strtoll(PQgetvalue(res, r, 6), NULL, 10);
	s->cpu_millis = (uint32_t)strtoul(PQgetvalue(res, r, 7), NULL, 10);
	s->memory_bytes = strtoull(PQgetvalue(res, r, 8), NULL, 10);
	s->disk_bytes = strtoull(PQgetvalue(res, r, 9), NULL, 10);
}

int hu_pg_snapshot_find(struct hu_store *st, const char *team, const char *key, struct hu_snapshot_row *out,
			hu_err *err)
{
	const char *p[] = {team, key};
	PGresult *res;
	int rc = 0;

	if (hu_pg_exec(hu_pg(st), "find snapshot",
		       "SELECT " COLUMNS " FROM snapshots WHERE team = $1 AND (id = $2 OR name = $2)"
		       " ORDER BY id = $2 DESC LIMIT 1",
		       2, p, &res, err) < 0)
		return -1;
	if (PQntuples(res) == 1)
		row_to_snapshot(res, 0, out);
	else
		rc = hu_err_set(err, -ENOENT, "snapshot '%.64s' not found", key);
	PQclear(res);
	return rc;
}

int hu_pg_snapshot_each(struct hu_store *st, const char *team,
			void (*fn)(const struct hu_snapshot_row *row, void *arg), void *arg, hu_err *err)
{
	const char *p[] = {team};
	struct hu_snapshot_row row;
	PGresult *res;

	if (hu_pg_exec(hu_pg(st), "list snapshots",
		       team ? "SELECT " COLUMNS " FROM snapshots WHERE team = $1 ORDER BY created_at, id"
			    : "SELECT " COLUMNS " FROM snapshots ORDER BY created_at, id",
		       team ? 1 : 0, p, &res, err) < 0)
		return -1;
	for (int r = 0; r < PQntuples(res); r++) {
		row_to_snapshot(res, r, &row);
		fn(&row, arg);
	}
	PQclear(res);
	return 0;
}

int hu_pg_snapshot_delete(struct hu_store *st, const char *id, hu_err *err)
{
	const char *p[] = {id};

	return hu_pg_exec(hu_pg(st), "delete snapshot", "DELETE FROM snapshots WHERE id = $1", 1, p, NULL, err);
}
