/*
 * The PostgreSQL store backend (backend.h): the store that several hutch
 * nodes share. The semantics are the SQLite backend's, call for call:
 * every value is a bound parameter (text format), a sandbox put is an
 * upsert that fails with EEXIST when another sandbox of the team holds the
 * idempotency key (the unique index decides, across nodes), and a group
 * of writes is one transaction in which a failed row leaves the others.
 */
#include "daemon/store/pg_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

int hu_store_pg_location(const char *location)
{
	return !strncmp(location, "postgresql://", 13) || !strncmp(location, "postgres://", 11);
}

/* A number as a text parameter. */
struct num {
	char s[24];
};

static const char *i64(struct num *n, int64_t v)
{
	snprintf(n->s, sizeof(n->s), "%" PRId64, v);
	return n->s;
}

static const char *boolean(int v)
{
	return v ? "true" : "false";
}

static const struct hu_store_ops pg_ops;

static void pg_close(struct hu_store *base)
{
	struct pg_store *st = hu_pg(base);

	PQfinish(st->conn);
	free(st->uri);
	free(st);
}

static int pg_open(const char *uri, int migrate, struct hu_store **out, hu_err *err)
{
	struct pg_store *st;

	*out = NULL;
	if (hu_pq_lib_load(err) < 0) {
		hu_err_prefix(err, "open the postgresql store");
		return -1;
	}
	st = calloc(1, sizeof(*st));
	if (!st || !(st->uri = strdup(uri))) {
		free(st);
		return hu_err_set(err, ENOMEM, "store");
	}
	st->base.ops = &pg_ops;
	if (hu_pg_connect(st, err) < 0 || (migrate && hu_pg_migrate(st, err) < 0)) {
		hu_err_prefix(err, "open the postgresql store");
		pg_close(&st->base);
		return -1;
	}
	*out = &st->base;
	return 0;
}

int hu_store_pg_open(const char *uri, struct hu_store **out, hu_err *err)
{
	return pg_open(uri, 1, out, err);
}

int hu_store_pg_open_to_inspect(const char *uri, struct hu_store **out, hu_err *err)
{
	return pg_open(uri, 0, out, err);
}

static int pg_key_add(struct hu_store *base, const char *team, const char *hash, hu_err *err)
{
	struct num now;
	const char *p[] = {team, hash, i64(&now, hu_wall_ms())};

	/* the team and its key in one statement, so one round trip and atomic */
	return hu_pg_exec(hu_pg(base), "add key",
			  "WITH t AS (INSERT INTO teams (id, created_at) VALUES ($1, $3) ON CONFLICT DO NOTHING)"
			  " INSERT INTO api_keys (key_hash, team, created_at) VALUES ($2, $1, $3)",
			  3, p, NULL, err);
}

static int pg_key_team(struct hu_store *base, const char *hash, char *team_out, size_t n, hu_err *err)
{
	const char *p[] = {hash};
	PGresult *res;
	int rc = 0;

	if (hu_pg_exec(hu_pg(base), "look up key", "SELECT team FROM api_keys WHERE key_hash = $1", 1, p, &res,
		       err) < 0)
		return -1;
	if (PQntuples(res) != 1)
		rc = hu_err_set(err, -ENOENT, "unknown API key");
	else if ((size_t)snprintf(team_out, n, "%s", PQgetvalue(res, 0, 0)) >= n)
		rc = hu_err_set(err, -ENAMETOOLONG, "store: team name too long");
	PQclear(res);
	return rc;
}

static int pg_key_count(struct hu_store *base, int *count, hu_err *err)
{
	PGresult *res;

	if (hu_pg_exec(hu_pg(base), "count keys", "SELECT count(*) FROM api_keys", 0, NULL, &res, err) < 0)
		return -1;
	*count = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

/* A JSON value as compact text (to free), `none` when v is NULL (NULL:
 * SQL NULL, then *text stays NULL and 0 is returned). */
static int json_param(const json_t *v, const char *none, char **text, hu_err *err)
{
	*text = v ? json_dumps(v, JSON_COMPACT) : none ? strdup(none) : NULL;
	if (!*text && (v || none))
		return hu_err_set(err, ENOMEM, "store: encode JSON");
	return 0;
}

#define ROW_COLUMNS                                                                                                  \
	"id, team, template, state, access_token, started_at, end_at, timeout, metadata, env_vars, auto_pause,"      \
	" auto_resume, allow_internet, cpu, memory, disk, auto_pause_memory, paused_at, released, reclaim_after,"     \
	" idem_key, mounts, internet, network"

#define UPSERT_SET                                                                                                   \
	"state = $4, end_at = $7, timeout = $8, metadata = $9, env_vars = $10, auto_pause = $11, auto_resume = $12,"  \
	" auto_pause_memory = $17, paused_at = $18, released = $19, reclaim_after = $20, network = $24"

static int pg_sandbox_put(struct hu_store *base, const struct hu_sandbox_row *row, hu_err *err)
{
	struct pg_store *st = hu_pg(base);
	struct num started, end_at, timeout, cpu, memory, disk, paused_at, reclaim;
	char *metadata = NULL, *env = NULL, *mounts = NULL, *network = NULL;
	int rc = -1;

	if (json_param(row->metadata, "{}", &metadata, err) < 0 || json_param(row->env_vars, "{}", &env, err) < 0 ||
	    json_param(row->mounts, "[]", &mounts, err) < 0 || json_param(row->network, NULL, &network, err) < 0)
		goto out;
	const char *p[] = {
		row->id,
		row->team,
		row->template_id,
		hu_store_state_name(row->state),
		row->access_token,
		i64(&started, row->started_at_ms),
		i64(&end_at, row->end_at_ms),
		i64(&timeout, row->timeout_s),
		metadata,
		env,
		boolean(row->auto_pause),
		boolean(row->auto_resume),
		row->allow_internet < 0 ? NULL : boolean(row->allow_internet),
		i64(&cpu, row->cpu_millis),
		i64(&memory, (int64_t)row->memory_bytes),
		i64(&disk, (int64_t)row->disk_bytes),
		boolean(row->auto_pause_memory),
		i64(&paused_at, row->paused_at_ms),
		boolean(row->released),
		i64(&reclaim, row->reclaim_after_s),
		row->idem_key[0] ? row->idem_key : NULL,
		mounts,
		boolean(row->internet),
		network,
	};
	/* an upsert on the id: a row holding the same idempotency key under
	 * another id fails the unique index instead of being replaced. A node
	 * writes only while the database agrees that its lease (name and
	 * generation) is live, and never another node's row. */
	if (!st->node[0]) {
		rc = hu_pg_exec(st, "save sandbox",
				"INSERT INTO sandboxes (" ROW_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,"
				" $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)"
				" ON CONFLICT (id) DO UPDATE SET " UPSERT_SET,
				24, p, NULL, err);
	} else if ((rc = hu_pg_node_live(st, err)) == 0) {
		const char *pn[26];
		PGresult *res;
		memcpy(pn, p, sizeof(p));
		pn[24] = st->node;
		pn[25] = st->generation;
		rc = hu_pg_exec(st, "save sandbox",
				"INSERT INTO sandboxes (" ROW_COLUMNS ", owner) SELECT $1, $2, $3, $4, $5, $6::bigint,"
				" $7::bigint, $8::integer, $9::jsonb, $10::jsonb, $11::boolean, $12::boolean, $13::boolean,"
				" $14::bigint, $15::bigint, $16::bigint, $17::boolean, $18::bigint, $19::boolean,"
				" $20::integer, $21, $22::jsonb, $23::boolean, $24::jsonb, $25 FROM nodes"
				" WHERE name = $25 AND generation = $26::bigint AND lease_until > now()"
				" ON CONFLICT (id) DO UPDATE SET " UPSERT_SET " WHERE sandboxes.owner = $25",
				26, pn, &res, err);
		if (rc == 0) {
			if (strcmp(PQcmdTuples(res), "1"))
				rc = hu_err_set(err, -ENOTCONN,
						"store: node %s (generation %s) has no live lease, or the sandbox is"
						" another node's",
						st->node, st->generation);
			PQclear(res);
		}
	}
	if (rc < 0 && err->code == EEXIST)
		hu_err_set(err, -EEXIST, "store: another sandbox of team %s has idempotency key '%s'", row->team,
			   row->idem_key);
out:
	free(metadata);
	free(env);
	free(mounts);
	free(network);
	if (rc < 0)
		hu_err_prefix(err, "sandbox %s", row->id);
	return rc;
}

static int pg_sandbox_delete(struct hu_store *base, const char *id, hu_err *err)
{
	const char *p[] = {id};

	if (hu_pg_exec(hu_pg(base), "delete sandbox", "DELETE FROM sandboxes WHERE id = $1", 1, p, NULL, err) < 0) {
		hu_err_prefix(err, "sandbox %s", id);
		return -1;
	}
	return 0;
}

static int pg_sandbox_set_state(struct hu_store *base, const char *id, enum hu_sbx_state state, hu_err *err)
{
	const char *p[] = {id, hu_store_state_name(state)};

	if (hu_pg_exec(hu_pg(base), "set sandbox state", "UPDATE sandboxes SET state = $2 WHERE id = $1", 2, p, NULL,
		       err) < 0) {
		hu_err_prefix(err, "sandbox %s", id);
		return -1;
	}
	return 0;
}

/* Column i as JSON of the given type; NULL when absent or of another type. */
static json_t *column_json(PGresult *res, int r, int i, int want_array)
{
	json_t *v = PQgetisnull(res, r, i) ? NULL : json_loads(PQgetvalue(res, r, i), 0, NULL);
	if (v && (want_array ? !json_is_array(v) : !json_is_object(v))) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

static void column_text(PGresult *res, int r, int i, char *out, size_t n)
{
	snprintf(out, n, "%s", PQgetvalue(res, r, i));
}

static int64_t column_i64(PGresult *res, int r, int i)
{
	return strtoll(PQgetvalue(res, r, i), NULL, 10);
}

static int column_bool(PGresult *res, int r, int i)
{
	return PQgetvalue(res, r, i)[0] == 't';
}

/* One row; -1 when out of memory (the row then holds nothing). */
static int row_read(PGresult *res, int r, struct hu_sandbox_row *row)
{
	memset(row, 0, sizeof(*row));
	column_text(res, r, 0, row->id, sizeof(row->id));
	column_text(res, r, 1, row->team, sizeof(row->team));
	column_text(res, r, 2, row->template_id, sizeof(row->template_id));
	row->state = hu_store_state_parse(PQgetvalue(res, r, 3));
	column_text(res, r, 4, row->access_token, sizeof(row->access_token));
	row->started_at_ms = column_i64(res, r, 5);
	row->end_at_ms = column_i64(res, r, 6);
	row->timeout_s = (int32_t)column_i64(res, r, 7);
	row->metadata = column_json(res, r, 8, 0);
	row->env_vars = column_json(res, r, 9, 0);
	row->auto_pause = column_bool(res, r, 10);
	row->auto_resume = column_bool(res, r, 11);
	row->allow_internet = PQgetisnull(res, r, 12) ? -1 : column_bool(res, r, 12);
	row->cpu_millis = (uint32_t)column_i64(res, r, 13);
	row->memory_bytes = (uint64_t)column_i64(res, r, 14);
	row->disk_bytes = (uint64_t)column_i64(res, r, 15);
	row->auto_pause_memory = column_bool(res, r, 16);
	row->paused_at_ms = column_i64(res, r, 17);
	row->released = column_bool(res, r, 18);
	row->reclaim_after_s = (int32_t)column_i64(res, r, 19);
	column_text(res, r, 20, row->idem_key, sizeof(row->idem_key));
	row->mounts = column_json(res, r, 21, 1);
	row->internet = column_bool(res, r, 22);
	row->network = column_json(res, r, 23, 0);
	column_text(res, r, 24, row->owner, sizeof(row->owner));
	if (!row->metadata)
		row->metadata = json_object();
	if (!row->env_vars)
		row->env_vars = json_object();
	if (!row->mounts)
		row->mounts = json_array();
	if (!row->metadata || !row->env_vars || !row->mounts) {
		hu_sandbox_row_clear(row);
		return -1;
	}
	return 0;
}

static int pg_sandbox_load(struct hu_store *base, void (*fn)(struct hu_sandbox_row *row, void *arg), void *arg,
			   hu_err *err)
{
	struct hu_sandbox_row row;
	PGresult *res;

	struct pg_store *st = hu_pg(base);
	const char *p[] = {st->node};

	/* a node adopts its own sandboxes, never another node's */
	if (hu_pg_exec(st, "load sandboxes",
		       st->node[0] ? "SELECT " ROW_COLUMNS ", owner FROM sandboxes WHERE owner = $1"
				   : "SELECT " ROW_COLUMNS ", owner FROM sandboxes",
		       st->node[0] ? 1 : 0, p, &res, err) < 0)
		return -1;
	for (int r = 0; r < PQntuples(res); r++) {
		if (row_read(res, r, &row) < 0) {
			PQclear(res);
			return hu_err_set(err, ENOMEM, "store: load sandboxes");
		}
		fn(&row, arg);
		hu_sandbox_row_clear(&row);
	}
	PQclear(res);
	return 0;
}

static int pg_lost_add(struct hu_store *base, const char *id, const char *team, const char *reason, hu_err *err)
{
	struct num now;
	const char *p[] = {id, team, reason, i64(&now, hu_wall_ms())};

	return hu_pg_exec(hu_pg(base), "record a lost sandbox",
			  "INSERT INTO lost_sandboxes (id, team, reason, at) VALUES ($1, $2, $3, $4)"
			  " ON CONFLICT (id) DO UPDATE SET team = $2, reason = $3, at = $4",
			  4, p, NULL, err);
}

static int pg_lost_reason(struct hu_store *base, const char *id, const char *team, char *reason, size_t n)
{
	const char *p[] = {id, team};
	PGresult *res;
	hu_err err;
	int found = 0;

	if (hu_pg_exec(hu_pg(base), "lost sandbox", "SELECT reason FROM lost_sandboxes WHERE id = $1 AND team = $2",
		       2, p, &res, &err) < 0)
		return 0;
	if (PQntuples(res) == 1) {
		column_text(res, 0, 0, reason, n);
		found = 1;
	}
	PQclear(res);
	return found;
}

static int pg_lost_purge(struct hu_store *base, int64_t before_ms, hu_err *err)
{
	struct num before;
	const char *p[] = {i64(&before, before_ms)};

	return hu_pg_exec(hu_pg(base), "purge lost sandboxes", "DELETE FROM lost_sandboxes WHERE at < $1", 1, p, NULL,
			  err);
}

static int pg_begin(struct hu_store *base, hu_err *err)
{
	struct pg_store *st = hu_pg(base);

	if (hu_pg_simple(st, "begin", "BEGIN", err) < 0)
		return -1;
	st->in_tx = 1;
	st->tx_lost = 0;
	st->savepoint = 0;
	return 0;
}

/* The end of a group, whatever happened in it: a transaction lost with
 * its connection is ENOTCONN (nothing of it was written). */
static int pg_commit(struct hu_store *base, hu_err *err)
{
	struct pg_store *st = hu_pg(base);
	int lost = st->tx_lost || !st->conn;
	int rc;

	st->in_tx = 0;
	st->savepoint = 0;
	st->tx_lost = 0;
	if (lost)
		return hu_err_set(err, -ENOTCONN, "store: the connection to postgresql was lost in a transaction");
	if (hu_pg_connect(st, err) < 0)
		return -1;
	PGresult *res = PQexec(st->conn, "COMMIT");
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = hu_pg_fail(st, res, "commit", err);
	else if (strcmp(PQcmdStatus(res), "COMMIT"))
		/* a transaction that an error aborted ends in a rollback */
		rc = hu_err_set(err, -EIO, "store: commit: the transaction was rolled back");
	else
		rc = 0;
	PQclear(res);
	if (rc < 0 && st->conn) {
		hu_err ignored;
		hu_pg_simple(st, "rollback", "ROLLBACK", &ignored);
	}
	return rc;
}

static const struct hu_store_ops pg_ops = {
	.name = "postgresql",
	.close = pg_close,
	.key_add = pg_key_add,
	.key_team = pg_key_team,
	.key_count = pg_key_count,
	.sandbox_put = pg_sandbox_put,
	.sandbox_delete = pg_sandbox_delete,
	.sandbox_set_state = pg_sandbox_set_state,
	.sandbox_load = pg_sandbox_load,
	.template_users = hu_pg_template_users,
	.lost_add = pg_lost_add,
	.lost_reason = pg_lost_reason,
	.lost_purge = pg_lost_purge,
	.begin = pg_begin,
	.commit = pg_commit,
	.volume_add = hu_pg_volume_add,
	.volume_find = hu_pg_volume_find,
	.volume_each = hu_pg_volume_each,
	.volume_delete = hu_pg_volume_delete,
	.volume_by_id = hu_pg_volume_by_id,
	.snapshot_put = hu_pg_snapshot_put,
	.snapshot_find = hu_pg_snapshot_find,
	.snapshot_each = hu_pg_snapshot_each,
	.snapshot_delete = hu_pg_snapshot_delete,
	.node_register = hu_pg_node_register,
	.node_renew = hu_pg_node_renew,
	.place = hu_pg_place,
	.placement_done = hu_pg_placement_done,
	.node_each = hu_pg_node_each,
	.template_record = hu_pg_template_record,
	.template_find = hu_pg_template_find,
	.node_set_draining = hu_pg_node_set_draining,
	.node_remove = hu_pg_node_remove,
	.sandbox_owner = hu_pg_sandbox_owner,
	.health = hu_pg_health,
};
