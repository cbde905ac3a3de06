/*
 * The SQLite store backend (backend.h): WAL mode at <data_dir>/hutch.db.
 *
 * Every statement is prepared once at open with bound parameters; nothing
 * user-supplied is ever pasted into SQL. The schema is versioned with
 * PRAGMA user_version: migrations[i] brings version i to i + 1, each in its
 * own transaction, so a daemon killed mid-upgrade retries cleanly.
 */
#include "daemon/store/sqlite_internal.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fileutil.h"

#define BUSY_TIMEOUT_MS 5000

static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE teams ("
	"  id TEXT PRIMARY KEY,"
	"  created_at INTEGER NOT NULL);"
	"CREATE TABLE api_keys ("
	"  key_hash TEXT PRIMARY KEY,"         /* sha256 hex of the key */
	"  team TEXT NOT NULL REFERENCES teams(id),"
	"  created_at INTEGER NOT NULL);"
	"CREATE TABLE sandboxes ("
	"  id TEXT PRIMARY KEY,"
	"  team TEXT NOT NULL,"
	"  template TEXT NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('running', 'paused')),"
	"  access_token TEXT NOT NULL,"
	"  started_at INTEGER NOT NULL,"       /* unix ms */
	"  end_at INTEGER NOT NULL,"           /* unix ms */
	"  timeout INTEGER NOT NULL,"          /* seconds */
	"  metadata TEXT NOT NULL,"            /* JSON object */
	"  env_vars TEXT NOT NULL,"            /* JSON object */
	"  auto_pause INTEGER NOT NULL,"
	"  auto_resume INTEGER NOT NULL,"
	"  allow_internet INTEGER,"            /* NULL = not given */
	"  cpu INTEGER NOT NULL,"              /* thousandths of a CPU */
	"  memory INTEGER NOT NULL,"           /* bytes */
	"  disk INTEGER NOT NULL);"            /* bytes */
	"CREATE INDEX sandboxes_team ON sandboxes(team);"
	"PRAGMA user_version = 1;",
	/* 1 -> 2: the lifecycle. States written ahead of the runtime's work
	 * (creating, killing), pause bookkeeping, idempotency keys (unique per
	 * team while the sandbox exists), and sandboxes found dead at start. */
	"CREATE TABLE sandboxes2 ("
	"  id TEXT PRIMARY KEY,"
	"  team TEXT NOT NULL,"
	"  template TEXT NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('creating', 'running', 'paused', 'killing')),"
	"  access_token TEXT NOT NULL,"
	"  started_at INTEGER NOT NULL,"
	"  end_at INTEGER NOT NULL,"
	"  timeout INTEGER NOT NULL,"
	"  metadata TEXT NOT NULL,"
	"  env_vars TEXT NOT NULL,"
	"  auto_pause INTEGER NOT NULL,"
	"  auto_resume INTEGER NOT NULL,"
	"  allow_internet INTEGER,"
	"  cpu INTEGER NOT NULL,"
	"  memory INTEGER NOT NULL,"
	"  disk INTEGER NOT NULL,"
	"  auto_pause_memory INTEGER NOT NULL DEFAULT 1,"
	"  paused_at INTEGER NOT NULL DEFAULT 0,"      /* unix ms, 0 when running */
	"  released INTEGER NOT NULL DEFAULT 0,"       /* paused, memory released */
	"  reclaim_after INTEGER NOT NULL DEFAULT 0,"  /* seconds; 0 = server setting, -1 = never */
	"  idem_key TEXT,"
	"  mounts TEXT NOT NULL DEFAULT '[]',"      /* volumes and host mounts (sbx_mounts.h) */
	"  internet INTEGER NOT NULL DEFAULT 0,"    /* it has a veth and NAT */
	"  network TEXT);"                          /* its {allowOut, denyOut}, NULL when none given */
	"INSERT INTO sandboxes2 (id, team, template, state, access_token, started_at, end_at, timeout, metadata,"
	"  env_vars, auto_pause, auto_resume, allow_internet, cpu, memory, disk)"
	"  SELECT id, team, template, state, access_token, started_at, end_at, timeout, metadata, env_vars,"
	"  auto_pause, auto_resume, allow_internet, cpu, memory, disk FROM sandboxes;"
	"DROP TABLE sandboxes;"
	"ALTER TABLE sandboxes2 RENAME TO sandboxes;"
	"CREATE INDEX sandboxes_team ON sandboxes(team);"
	"CREATE UNIQUE INDEX sandboxes_idem ON sandboxes(team, idem_key) WHERE idem_key IS NOT NULL;"
	"CREATE TABLE lost_sandboxes ("
	"  id TEXT PRIMARY KEY,"
	"  team TEXT NOT NULL,"
	"  reason TEXT NOT NULL,"
	"  at INTEGER NOT NULL);"                        /* unix ms */
	"PRAGMA user_version = 2;",
	/* 2 -> 3: named volumes (store_volumes.c); the version is the entry's index + 1 */
	"CREATE TABLE volumes ("
	"  id TEXT PRIMARY KEY,"
	"  team TEXT NOT NULL,"
	"  name TEXT NOT NULL,"
	"  size INTEGER,"                      /* cap in bytes; NULL = no cap */
	"  created_at INTEGER NOT NULL,"       /* unix ms */
	"  UNIQUE (team, name));",
	/* 3 -> 4: snapshots of sandboxes' files (sqlite_snapshots.c), usable
	 * as templateIDs; state 0 = being made, 1 = ready, 2 = a fork's */
	"CREATE TABLE snapshots ("
	"  id TEXT PRIMARY KEY,"
	"  team TEXT NOT NULL,"
	"  name TEXT,"                         /* NULL = unnamed */
	"  sandbox TEXT NOT NULL,"             /* the sandbox it was taken of */
	"  template TEXT NOT NULL,"            /* that sandbox's template: the lower layers */
	"  state INTEGER NOT NULL CHECK (state IN (0, 1, 2)),"
	"  created_at INTEGER NOT NULL,"       /* unix ms */
	"  cpu INTEGER NOT NULL,"
	"  memory INTEGER NOT NULL,"
	"  disk INTEGER NOT NULL,"
	"  UNIQUE (team, name));",
};

enum stmt_id {
	ST_TEAM_ADD,
	ST_KEY_ADD,
	ST_KEY_TEAM,
	ST_KEY_COUNT,
	ST_SBX_PUT,
	ST_SBX_DELETE,
	ST_SBX_STATE,
	ST_LOST_ADD,
	ST_LOST_GET,
	ST_LOST_PURGE,
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_COUNT,
};

static const char *const stmt_sql[ST_COUNT] = {
	[ST_TEAM_ADD] = "INSERT OR IGNORE INTO teams (id, created_at) VALUES (?1, ?2)",
	[ST_KEY_ADD] = "INSERT INTO api_keys (key_hash, team, created_at) VALUES (?1, ?2, ?3)",
	[ST_KEY_TEAM] = "SELECT team FROM api_keys WHERE key_hash = ?1",
	[ST_KEY_COUNT] = "SELECT count(*) FROM api_keys",
	/* an upsert, not INSERT OR REPLACE: REPLACE would delete whichever row
	 * holds the same idempotency key instead of failing */
	[ST_SBX_PUT] = "INSERT INTO sandboxes (id, team, template, state, access_token, started_at,"
		       " end_at, timeout, metadata, env_vars, auto_pause, auto_resume, allow_internet, cpu, memory,"
		       " disk, auto_pause_memory, paused_at, released, reclaim_after, idem_key, mounts, internet, network)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,"
		       " ?21, ?22, ?23, ?24)"
		       " ON CONFLICT(id) DO UPDATE SET state = ?4, end_at = ?7, timeout = ?8, metadata = ?9,"
		       " env_vars = ?10, auto_pause = ?11, auto_resume = ?12, auto_pause_memory = ?17,"
		       " paused_at = ?18, released = ?19, reclaim_after = ?20, network = ?24",
	[ST_SBX_DELETE] = "DELETE FROM sandboxes WHERE id = ?1",
	[ST_SBX_STATE] = "UPDATE sandboxes SET state = ?2 WHERE id = ?1",
	[ST_LOST_ADD] = "INSERT OR REPLACE INTO lost_sandboxes (id, team, reason, at) VALUES (?1, ?2, ?3, ?4)",
	[ST_LOST_GET] = "SELECT reason FROM lost_sandboxes WHERE id = ?1 AND team = ?2",
	[ST_LOST_PURGE] = "DELETE FROM lost_sandboxes WHERE at < ?1",
	/* a create from the warm pool is one transaction: parsed once, not per create */
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
};

struct sqlite_store {
	struct hu_store base;
	sqlite3 *db;
	sqlite3_stmt *stmt[ST_COUNT];
	sqlite3_stmt *kept[HU_SQLITE_KEPT_COUNT]; /* the side files' (hu_sqlite_kept), NULL until first used */
};

static struct sqlite_store *sq(struct hu_store *st)
{
	return HU_CONTAINER_OF(st, struct sqlite_store, base);
}

sqlite3 *hu_sqlite_db(struct hu_store *st)
{
	return sq(st)->db;
}

int hu_sqlite_err(sqlite3 *db, hu_err *err, const char *what)
{
	/* A full disk is the one cause a client can be told apart (507);
	 * anything else, including a lock held past busy_timeout, is ours. */
	int code = sqlite3_errcode(db) == SQLITE_FULL ? ENOSPC : EIO;
	return hu_err_set(err, -code, "store: %s: %s", what, sqlite3_errmsg(db));
}

sqlite3_stmt *hu_sqlite_kept(struct hu_store *base, enum hu_sqlite_kept id, const char *sql, hu_err *err)
{
	struct sqlite_store *st = sq(base);

	if (!st->kept[id] &&
	    sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->kept[id], NULL) != SQLITE_OK) {
		hu_sqlite_err(st->db, err, "prepare");
		return NULL;
	}
	sqlite3_reset(st->kept[id]);
	sqlite3_clear_bindings(st->kept[id]);
	return st->kept[id];
}

static int db_err(struct sqlite_store *st, hu_err *err, const char *what)
{
	return hu_sqlite_err(st->db, err, what);
}

static int exec_sql(struct sqlite_store *st, const char *sql, hu_err *err)
{
	if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_err(st, err, sql);
	return 0;
}

/* A prepared statement, reset and unbound, ready for its parameters. */
static sqlite3_stmt *stmt(struct sqlite_store *st, enum stmt_id id)
{
	sqlite3_stmt *s = st->stmt[id];
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return s;
}

/* Run a statement that returns no rows. */
static int step_done(struct sqlite_store *st, sqlite3_stmt *s, const char *what, hu_err *err)
{
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return db_err(st, err, what);
	return 0;
}

static int migrate(struct sqlite_store *st, hu_err *err)
{
	sqlite3_stmt *q;
	int version;

	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &q, NULL) != SQLITE_OK)
		return db_err(st, err, "read schema version");
	version = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : -1;
	sqlite3_finalize(q);
	if (version < 0)
		return db_err(st, err, "read schema version");
	if ((size_t)version > HU_ARRAY_LEN(migrations))
		return hu_err_set(err, -EPROTO, "store: schema version %d is newer than this hutch (%zu): upgrade hutch",
				  version, HU_ARRAY_LEN(migrations));
	for (size_t v = (size_t)version; v < HU_ARRAY_LEN(migrations); v++) {
		char bump[48];
		snprintf(bump, sizeof(bump), "PRAGMA user_version = %zu", v + 1);
		if (exec_sql(st, "BEGIN IMMEDIATE", err) < 0)
			return -1;
		/* the version bump is done here, in the same transaction, so an
		 * entry cannot forget it */
		if (exec_sql(st, migrations[v], err) < 0 || exec_sql(st, bump, err) < 0 ||
		    exec_sql(st, "COMMIT", err) < 0) {
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
			hu_err_prefix(err, "migrate schema %zu -> %zu", v, v + 1);
			return -1;
		}
	}
	return 0;
}

/* Create the database file 0600 before SQLite does (it would use 0644);
 * the -wal and -shm files inherit its mode. */
static int create_private(const char *path, hu_err *err)
{
	_cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return hu_err_sys(err, "store: create %s", path);
	return 0;
}

static const struct hu_store_ops sqlite_ops;

static void sqlite_close(struct hu_store *base)
{
	struct sqlite_store *st = sq(base);

	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	for (int i = 0; i < HU_SQLITE_KEPT_COUNT; i++)
		sqlite3_finalize(st->kept[i]);
	sqlite3_close(st->db);
	free(st);
}

int hu_store_sqlite_open(const char *data_dir, struct hu_store **out, hu_err *err)
{
	char path[4096];
	struct sqlite_store *st;

	*out = NULL;
	if (hu_mkdir_p(data_dir, 0700, err) < 0)
		return -1;
	if ((size_t)snprintf(path, sizeof(path), "%s/hutch.db", data_dir) >= sizeof(path))
		return hu_err_set(err, ENAMETOOLONG, "store: %s", data_dir);
	if (create_private(path, err) < 0)
		return -1;
	st = calloc(1, sizeof(*st));
	if (!st)
		return hu_err_set(err, ENOMEM, "store");
	st->base.ops = &sqlite_ops;
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		hu_err_set(err, -EIO, "store: open %s: %s", path, st->db ? sqlite3_errmsg(st->db) : "out of memory");
		sqlite_close(&st->base);
		return -1;
	}
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	sqlite3_extended_result_codes(st->db, 0);
	if (exec_sql(st, "PRAGMA journal_mode = WAL", err) < 0 || exec_sql(st, "PRAGMA synchronous = NORMAL", err) < 0 ||
	    exec_sql(st, "PRAGMA foreign_keys = ON", err) < 0 || migrate(st, err) < 0)
		goto fail;
	for (int i = 0; i < ST_COUNT; i++)
		if (sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[i], NULL) !=
		    SQLITE_OK) {
			db_err(st, err, stmt_sql[i]);
			goto fail;
		}
	*out = &st->base;
	return 0;
fail:
	hu_err_prefix(err, "open %s", path);
	sqlite_close(&st->base);
	return -1;
}

static int sqlite_key_add(struct hu_store *base, const char *team, const char *hash, hu_err *err)
{
	struct sqlite_store *st = sq(base);
	int64_t now = hu_wall_ms();
	sqlite3_stmt *s;

	if (exec_sql(st, "BEGIN IMMEDIATE", err) < 0)
		return -1;
	s = stmt(st, ST_TEAM_ADD);
	sqlite3_bind_text(s, 1, team, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, now);
	if (step_done(st, s, "add team", err) < 0)
		goto fail;
	s = stmt(st, ST_KEY_ADD);
	sqlite3_bind_text(s, 1, hash, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, team, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, now);
	if (step_done(st, s, "add key", err) < 0 || exec_sql(st, "COMMIT", err) < 0)
		goto fail;
	return 0;
fail:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

static int sqlite_key_team(struct hu_store *base, const char *hash, char *team_out, size_t n, hu_err *err)
{
	struct sqlite_store *st = sq(base);
	sqlite3_stmt *s = stmt(st, ST_KEY_TEAM);
	int rc;

	sqlite3_bind_text(s, 1, hash, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE) {
		sqlite3_reset(s);
		return hu_err_set(err, -ENOENT, "unknown API key");
	}
	if (rc != SQLITE_ROW) {
		db_err(st, err, "look up key");
		sqlite3_reset(s);
		return -1;
	}
	const char *team = (const char *)sqlite3_column_text(s, 0);
	if (!team || (size_t)snprintf(team_out, n, "%s", team) >= n) {
		sqlite3_reset(s);
		return hu_err_set(err, -ENAMETOOLONG, "store: team name too long");
	}
	sqlite3_reset(s);
	return 0;
}

static int sqlite_key_count(struct hu_store *base, int *count, hu_err *err)
{
	struct sqlite_store *st = sq(base);
	sqlite3_stmt *s = stmt(st, ST_KEY_COUNT);
	if (sqlite3_step(s) != SQLITE_ROW) {
		db_err(st, err, "count keys");
		sqlite3_reset(s);
		return -1;
	}
	*count = sqlite3_column_int(s, 0);
	sqlite3_reset(s);
	return 0;
}

/* A JSON value as compact text bound to parameter i (freed by SQLite);
 * `none` is bound when v is NULL (NULL: SQL NULL). */
static int bind_json(struct sqlite_store *st, sqlite3_stmt *s, int i, const json_t *v, const char *none, hu_err *err)
{
	char *text = v ? json_dumps(v, JSON_COMPACT) : none ? strdup(none) : NULL;
	if (!v && !none)
		return sqlite3_bind_null(s, i) == SQLITE_OK ? 0 : db_err(st, err, "bind JSON");
	if (!text)
		return hu_err_set(err, ENOMEM, "store: encode JSON");
	if (sqlite3_bind_text(s, i, text, -1, free) != SQLITE_OK)
		return db_err(st, err, "bind JSON");
	return 0;
}

static int bind_row(struct sqlite_store *st, sqlite3_stmt *s, const struct hu_sandbox_row *row, hu_err *err)
{
	sqlite3_bind_text(s, 1, row->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, row->team, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, row->template_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, hu_store_state_name(row->state), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, row->access_token, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 6, row->started_at_ms);
	sqlite3_bind_int64(s, 7, row->end_at_ms);
	sqlite3_bind_int(s, 8, row->timeout_s);
	if (bind_json(st, s, 9, row->metadata, "{}", err) < 0 || bind_json(st, s, 10, row->env_vars, "{}", err) < 0)
		return -1;
	sqlite3_bind_int(s, 11, !!row->auto_pause);
	sqlite3_bind_int(s, 12, !!row->auto_resume);
	if (row->allow_internet < 0)
		sqlite3_bind_null(s, 13);
	else
		sqlite3_bind_int(s, 13, !!row->allow_internet);
	sqlite3_bind_int64(s, 14, row->cpu_millis);
	sqlite3_bind_int64(s, 15, (sqlite3_int64)row->memory_bytes);
	sqlite3_bind_int64(s, 16, (sqlite3_int64)row->disk_bytes);
	sqlite3_bind_int(s, 17, !!row->auto_pause_memory);
	sqlite3_bind_int64(s, 18, row->paused_at_ms);
	sqlite3_bind_int(s, 19, !!row->released);
	sqlite3_bind_int(s, 20, row->reclaim_after_s);
	if (row->idem_key[0])
		sqlite3_bind_text(s, 21, row->idem_key, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 21);
	/* the mounts and the network, so that a restart (memory release,
	 * daemon restart) mounts the same volumes and sets up the same rules */
	if (bind_json(st, s, 22, row->mounts, "[]", err) < 0)
		return -1;
	sqlite3_bind_int(s, 23, !!row->internet);
	return bind_json(st, s, 24, row->network, NULL, err);
}

static int sqlite_sandbox_put(struct hu_store *base, const struct hu_sandbox_row *row, hu_err *err)
{
	struct sqlite_store *st = sq(base);
	sqlite3_stmt *s = stmt(st, ST_SBX_PUT);
	int rc;

	if (bind_row(st, s, row, err) < 0) {
		sqlite3_clear_bindings(s);
		hu_err_prefix(err, "sandbox %s", row->id);
		return -1;
	}
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc == SQLITE_CONSTRAINT)
		rc = hu_err_set(err, -EEXIST, "store: another sandbox of team %s has idempotency key '%s'", row->team,
				row->idem_key);
	else
		rc = rc == SQLITE_DONE ? 0 : db_err(st, err, "save sandbox");
	sqlite3_clear_bindings(s); /* free the JSON texts now, not at the next use */
	if (rc < 0)
		hu_err_prefix(err, "sandbox %s", row->id);
	return rc;
}

static int sqlite_sandbox_delete(struct hu_store *base, const char *id, hu_err *err)
{
	struct sqlite_store *st = sq(base);
	sqlite3_stmt *s = stmt(st, ST_SBX_DELETE);
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (step_done(st, s, "delete sandbox", err) < 0) {
		hu_err_prefix(err, "sandbox %s", id);
		return -1;
	}
	return 0;
}

static int sqlite_sandbox_set_state(struct hu_store *base, const char *id, enum hu_sbx_state state, hu_err *err)
{
	struct sqlite_store *st = sq(base);
	sqlite3_stmt *s = stmt(st, ST_SBX_STATE);
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, hu_store_state_name(state), -1, SQLITE_STATIC);
	if (step_done(st, s, "set sandbox state", err) < 0) {
		hu_err_prefix(err, "sandbox %s", id);
		return -1;
	}
	return 0;
}

/* Column i as JSON of the given type (json_is_object or json_is_array);
 * NULL when absent or of another type. */
static json_t *column_json(sqlite3_stmt *q, int i, int want_array)
{
	const char *text = (const char *)sqlite3_column_text(q, i);
	json_t *v = text ? json_loads(text, 0, NULL) : NULL;
	if (v && (want_array ? !json_is_array(v) : !json_is_object(v))) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

static void column_text(sqlite3_stmt *q, int i, char *out, size_t n)
{
	const char *text = (const char *)sqlite3_column_text(q, i);
	snprintf(out, n, "%s", text ? text : "");
}

/* One row; -1 when out of memory (the row then holds nothing). */
static int row_read(sqlite3_stmt *q, struct hu_sandbox_row *row)
{
	char state[16];

	memset(row, 0, sizeof(*row));
	column_text(q, 0, row->id, sizeof(row->id));
	column_text(q, 1, row->team, sizeof(row->team));
	column_text(q, 2, row->template_id, sizeof(row->template_id));
	column_text(q, 3, state, sizeof(state));
	row->state = hu_store_state_parse(state);
	column_text(q, 4, row->access_token, sizeof(row->access_token));
	row->started_at_ms = sqlite3_column_int64(q, 5);
	row->end_at_ms = sqlite3_column_int64(q, 6);
	row->timeout_s = sqlite3_column_int(q, 7);
	row->metadata = column_json(q, 8, 0);
	row->env_vars = column_json(q, 9, 0);
	row->auto_pause = sqlite3_column_int(q, 10);
	row->auto_resume = sqlite3_column_int(q, 11);
	row->allow_internet = sqlite3_column_type(q, 12) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 12);
	row->cpu_millis = (uint32_t)sqlite3_column_int64(q, 13);
	row->memory_bytes = (uint64_t)sqlite3_column_int64(q, 14);
	row->disk_bytes = (uint64_t)sqlite3_column_int64(q, 15);
	row->auto_pause_memory = sqlite3_column_int(q, 16);
	row->paused_at_ms = sqlite3_column_int64(q, 17);
	row->released = sqlite3_column_int(q, 18);
	row->reclaim_after_s = sqlite3_column_int(q, 19);
	column_text(q, 20, row->idem_key, sizeof(row->idem_key));
	row->mounts = column_json(q, 21, 1);
	row->internet = sqlite3_column_int(q, 22);
	row->network = column_json(q, 23, 0);
	/* a column that no longer decodes reads as empty, never as garbage */
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

static int sqlite_sandbox_load(struct hu_store *base, void (*fn)(struct hu_sandbox_row *row, void *arg), void *arg,
			       hu_err *err)
{
	struct sqlite_store *st = sq(base);
	struct hu_sandbox_row row;
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT id, team, template, state, access_token, started_at, end_at, timeout, metadata,"
			       " env_vars, auto_pause, auto_resume, allow_internet, cpu, memory, disk, auto_pause_memory,"
			       " paused_at, released, reclaim_after, idem_key, mounts, internet, network FROM sandboxes",
			       -1, &q, NULL) != SQLITE_OK)
		return db_err(st, err, "load sandboxes");
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (row_read(q, &row) < 0) {
			sqlite3_finalize(q);
			return hu_err_set(err, ENOMEM, "store: load sandboxes");
		}
		fn(&row, arg);
		hu_sandbox_row_clear(&row);
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE)
		return db_err(st, err, "load sandboxes");
	return 0;
}

static int sqlite_lost_add(struct hu_store *base, const char *id, const char *team, const char *reason, hu_err *err)
{
	struct sqlite_store *st = sq(base);
	sqlite3_stmt *s = stmt(st, ST_LOST_ADD);
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, team, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, reason, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, hu_wall_ms());
	return step_done(st, s, "record a lost sandbox", err);
}

static int sqlite_lost_reason(struct hu_store *base, const char *id, const char *team, char *reason, size_t n)
{
	struct sqlite_store *st = sq(base);
	sqlite3_stmt *s = stmt(st, ST_LOST_GET);
	int found = 0;

	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, team, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		column_text(s, 0, reason, n);
		found = 1;
	}
	sqlite3_reset(s);
	return found;
}

static int sqlite_lost_purge(struct hu_store *base, int64_t before_ms, hu_err *err)
{
	struct sqlite_store *st = sq(base);
	sqlite3_stmt *s = stmt(st, ST_LOST_PURGE);
	sqlite3_bind_int64(s, 1, before_ms);
	return step_done(st, s, "purge lost sandboxes", err);
}

static int sqlite_begin(struct hu_store *base, hu_err *err)
{
	struct sqlite_store *st = sq(base);
	return step_done(st, stmt(st, ST_BEGIN), "BEGIN IMMEDIATE", err);
}

static int sqlite_commit(struct hu_store *base, hu_err *err)
{
	struct sqlite_store *st = sq(base);
	hu_err ignored;

	if (step_done(st, stmt(st, ST_COMMIT), "COMMIT", err) < 0) {
		step_done(st, stmt(st, ST_ROLLBACK), "ROLLBACK", &ignored);
		return -1;
	}
	return 0;
}

static const struct hu_store_ops sqlite_ops = {
	.name = "sqlite",
	.close = sqlite_close,
	.key_add = sqlite_key_add,
	.key_team = sqlite_key_team,
	.key_count = sqlite_key_count,
	.sandbox_put = sqlite_sandbox_put,
	.sandbox_delete = sqlite_sandbox_delete,
	.sandbox_set_state = sqlite_sandbox_set_state,
	.sandbox_load = sqlite_sandbox_load,
	.template_users = hu_sqlite_template_users,
	.lost_add = sqlite_lost_add,
	.lost_reason = sqlite_lost_reason,
	.lost_purge = sqlite_lost_purge,
	.begin = sqlite_begin,
	.commit = sqlite_commit,
	.volume_add = hu_sqlite_volume_add,
	.volume_find = hu_sqlite_volume_find,
	.volume_each = hu_sqlite_volume_each,
	.volume_delete = hu_sqlite_volume_delete,
	.volume_by_id = hu_sqlite_volume_by_id,
	.snapshot_put = hu_sqlite_snapshot_put,
	.snapshot_find = hu_sqlite_snapshot_find,
	.snapshot_each = hu_sqlite_snapshot_each,
	.snapshot_delete = hu_sqlite_snapshot_delete,
};
