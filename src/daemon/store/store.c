/*
 * The store (store.h): SQLite in WAL mode at <data_dir>/hutch.db.
 *
 * Every statement is prepared once at open with bound parameters; nothing
 * user-supplied is ever pasted into SQL. The schema is versioned with
 * PRAGMA user_version: migrations[i] brings version i to i + 1, each in its
 * own transaction, so a daemon killed mid-upgrade retries cleanly.
 */
#include "util/clock.h"
#include "util/hex.h"
#include "daemon/store/store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/api/api_json.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/sbx_network.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

#define KEY_PREFIX "hutch_"
#define KEY_RANDOM_BYTES 24 /* 48 hex chars */
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
};

struct hu_store {
	sqlite3 *db;
	sqlite3_stmt *stmt[ST_COUNT];
};

static int db_err(struct hu_store *st, hu_err *err, const char *what)
{
	/* A full disk is the one cause a client can be told apart (507);
	 * anything else, including a lock held past busy_timeout, is ours. */
	int code = sqlite3_errcode(st->db) == SQLITE_FULL ? ENOSPC : EIO;
	return hu_err_set(err, -code, "store: %s: %s", what, sqlite3_errmsg(st->db));
}

static int exec_sql(struct hu_store *st, const char *sql, hu_err *err)
{
	if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_err(st, err, sql);
	return 0;
}

/* A prepared statement, reset and unbound, ready for its parameters. */
static sqlite3_stmt *stmt(struct hu_store *st, enum stmt_id id)
{
	sqlite3_stmt *s = st->stmt[id];
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return s;
}

/* Run a statement that returns no rows. */
static int step_done(struct hu_store *st, sqlite3_stmt *s, const char *what, hu_err *err)
{
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return db_err(st, err, what);
	return 0;
}

static int migrate(struct hu_store *st, hu_err *err)
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

int hu_store_open(const char *data_dir, struct hu_store **out, hu_err *err)
{
	char path[4096];
	struct hu_store *st;

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
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		hu_err_set(err, -EIO, "store: open %s: %s", path, st->db ? sqlite3_errmsg(st->db) : "out of memory");
		hu_store_close(st);
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
	*out = st;
	return 0;
fail:
	hu_err_prefix(err, "open %s", path);
	hu_store_close(st);
	return -1;
}

sqlite3 *hu_store_sqlite(struct hu_store *st)
{
	return st->db;
}

void hu_store_close(struct hu_store *st)
{
	if (!st)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_close(st->db);
	free(st);
}

/* sha256 hex of the key: the only form in which a key is stored. */
static int key_hash(const char *key, char out[65], hu_err *err)
{
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (!EVP_Digest(key, strlen(key), md, &len, EVP_sha256(), NULL) || len != 32)
		return hu_err_set(err, -EIO, "store: sha256 failed");
	hu_hex_encode(md, len, out);
	return 0;
}

int hu_store_key_create(struct hu_store *st, const char *team, char *key_out, size_t n, hu_err *err)
{
	char key[sizeof(KEY_PREFIX) + 2 * KEY_RANDOM_BYTES];
	char hash[65];
	int64_t now = hu_wall_ms();
	sqlite3_stmt *s;

	if (n < sizeof(key))
		return hu_err_set(err, ENOBUFS, "store: key buffer too small");
	memcpy(key, KEY_PREFIX, sizeof(KEY_PREFIX) - 1);
	if (hu_random_hex(key + sizeof(KEY_PREFIX) - 1, KEY_RANDOM_BYTES, err) < 0) {
		hu_err_prefix(err, "store");
		return -1;
	}
	if (key_hash(key, hash, err) < 0 || exec_sql(st, "BEGIN IMMEDIATE", err) < 0)
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
	memcpy(key_out, key, sizeof(key));
	return 0;
fail:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

int hu_store_key_team(struct hu_store *st, const char *key, char *team_out, size_t n, hu_err *err)
{
	char hash[65];
	sqlite3_stmt *s;
	int rc;

	if (key_hash(key, hash, err) < 0)
		return -1;
	s = stmt(st, ST_KEY_TEAM);
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

int hu_store_key_count(struct hu_store *st, int *count, hu_err *err)
{
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

static const char *state_name(enum hu_sbx_state state)
{
	switch (state) {
	case HU_SBX_PAUSED: return "paused";
	case HU_SBX_CREATING: return "creating";
	case HU_SBX_KILLING: return "killing";
	case HU_SBX_RUNNING: break;
	}
	return "running";
}

static enum hu_sbx_state state_parse(const char *name)
{
	if (!strcmp(name, "paused"))
		return HU_SBX_PAUSED;
	if (!strcmp(name, "creating"))
		return HU_SBX_CREATING;
	if (!strcmp(name, "killing"))
		return HU_SBX_KILLING;
	return HU_SBX_RUNNING;
}

/* A JSON object as compact text bound to parameter i (freed by SQLite). */
static int bind_json(struct hu_store *st, sqlite3_stmt *s, int i, const json_t *v, hu_err *err)
{
	char *text = v ? json_dumps(v, JSON_COMPACT) : strdup("{}");
	if (!text)
		return hu_err_set(err, ENOMEM, "store: encode JSON");
	if (sqlite3_bind_text(s, i, text, -1, free) != SQLITE_OK)
		return db_err(st, err, "bind JSON");
	return 0;
}

int hu_store_sandbox_put(struct hu_store *st, const struct hu_sbx *sbx, hu_err *err)
{
	sqlite3_stmt *s = stmt(st, ST_SBX_PUT);

	sqlite3_bind_text(s, 1, sbx->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, sbx->team, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, sbx->template_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, state_name(sbx->state), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 5, sbx->access_token, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 6, sbx->started_at_ms);
	sqlite3_bind_int64(s, 7, sbx->end_at_ms);
	sqlite3_bind_int(s, 8, sbx->timeout_s);
	if (bind_json(st, s, 9, sbx->metadata, err) < 0 || bind_json(st, s, 10, sbx->env_vars, err) < 0) {
		sqlite3_clear_bindings(s);
		return -1;
	}
	sqlite3_bind_int(s, 11, !!sbx->auto_pause);
	sqlite3_bind_int(s, 12, !!sbx->auto_resume);
	if (sbx->allow_internet < 0)
		sqlite3_bind_null(s, 13);
	else
		sqlite3_bind_int(s, 13, !!sbx->allow_internet);
	sqlite3_bind_int64(s, 14, sbx->cpu_millis);
	sqlite3_bind_int64(s, 15, (sqlite3_int64)sbx->memory_bytes);
	sqlite3_bind_int64(s, 16, (sqlite3_int64)sbx->disk_bytes);
	sqlite3_bind_int(s, 17, !!sbx->auto_pause_memory);
	sqlite3_bind_int64(s, 18, sbx->paused_at_ms);
	sqlite3_bind_int(s, 19, !!sbx->released);
	sqlite3_bind_int(s, 20, sbx->reclaim_after_s);
	if (sbx->idem_key[0])
		sqlite3_bind_text(s, 21, sbx->idem_key, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 21);
	/* the mounts, so that a restart (memory release, daemon restart) can
	 * mount the same volumes again */
	char *mounts = sbx->mounts ? json_dumps(sbx->mounts, JSON_COMPACT) : strdup("[]");
	if (!mounts || sqlite3_bind_text(s, 22, mounts, -1, free) != SQLITE_OK) {
		sqlite3_clear_bindings(s);
		return hu_err_set(err, ENOMEM, "store: encode mounts");
	}
	/* and the network, so that a restart sets up the same one */
	sqlite3_bind_int(s, 23, !!sbx->internet);
	json_t *net = hu_sbx_json_network(sbx);
	char *net_text = net ? json_dumps(net, JSON_COMPACT) : NULL;
	json_decref(net);
	if (net_text && sqlite3_bind_text(s, 24, net_text, -1, free) != SQLITE_OK) {
		sqlite3_clear_bindings(s);
		return hu_err_set(err, ENOMEM, "store: encode network");
	}
	int rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc == SQLITE_CONSTRAINT)
		rc = hu_err_set(err, -EEXIST, "store: another sandbox of team %s has idempotency key '%s'", sbx->team,
				sbx->idem_key);
	else
		rc = rc == SQLITE_DONE ? 0 : db_err(st, err, "save sandbox");
	sqlite3_clear_bindings(s); /* free the JSON texts now, not at the next use */
	if (rc < 0)
		hu_err_prefix(err, "sandbox %s", sbx->id);
	return rc;
}

int hu_store_sandbox_delete(struct hu_store *st, const char *id, hu_err *err)
{
	sqlite3_stmt *s = stmt(st, ST_SBX_DELETE);
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (step_done(st, s, "delete sandbox", err) < 0) {
		hu_err_prefix(err, "sandbox %s", id);
		return -1;
	}
	return 0;
}

int hu_store_sandbox_set_state(struct hu_store *st, const char *id, enum hu_sbx_state state, hu_err *err)
{
	sqlite3_stmt *s = stmt(st, ST_SBX_STATE);
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, state_name(state), -1, SQLITE_STATIC);
	if (step_done(st, s, "set sandbox state", err) < 0) {
		hu_err_prefix(err, "sandbox %s", id);
		return -1;
	}
	return 0;
}

static json_t *column_json(sqlite3_stmt *q, int i)
{
	const char *text = (const char *)sqlite3_column_text(q, i);
	json_t *v = text ? json_loads(text, 0, NULL) : NULL;
	if (v && !json_is_object(v)) {
		json_decref(v);
		v = NULL;
	}
	return v ? v : json_object();
}

static void column_text(sqlite3_stmt *q, int i, char *out, size_t n)
{
	const char *text = (const char *)sqlite3_column_text(q, i);
	snprintf(out, n, "%s", text ? text : "");
}

/* One row as a new hu_sbx (no runtime handle, no timers). */
static struct hu_sbx *row_sandbox(sqlite3_stmt *q)
{
	struct hu_sbx *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	column_text(q, 0, s->id, sizeof(s->id));
	column_text(q, 1, s->team, sizeof(s->team));
	column_text(q, 2, s->template_id, sizeof(s->template_id));
	s->state = state_parse((const char *)sqlite3_column_text(q, 3) ? (const char *)sqlite3_column_text(q, 3) : "");
	column_text(q, 4, s->access_token, sizeof(s->access_token));
	s->started_at_ms = sqlite3_column_int64(q, 5);
	s->end_at_ms = sqlite3_column_int64(q, 6);
	s->timeout_s = sqlite3_column_int(q, 7);
	s->metadata = column_json(q, 8);
	s->env_vars = column_json(q, 9);
	s->auto_pause = sqlite3_column_int(q, 10);
	s->auto_resume = sqlite3_column_int(q, 11);
	s->allow_internet = sqlite3_column_type(q, 12) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 12);
	s->cpu_millis = (uint32_t)sqlite3_column_int64(q, 13);
	s->memory_bytes = (uint64_t)sqlite3_column_int64(q, 14);
	s->disk_bytes = (uint64_t)sqlite3_column_int64(q, 15);
	s->auto_pause_memory = sqlite3_column_int(q, 16);
	s->paused_at_ms = sqlite3_column_int64(q, 17);
	s->released = sqlite3_column_int(q, 18);
	s->reclaim_after_s = sqlite3_column_int(q, 19);
	column_text(q, 20, s->idem_key, sizeof(s->idem_key));
	const char *mounts = (const char *)sqlite3_column_text(q, 21);
	s->mounts = mounts ? json_loads(mounts, 0, NULL) : NULL;
	if (s->mounts && !json_is_array(s->mounts)) {
		json_decref(s->mounts);
		s->mounts = NULL;
	}
	if (!s->mounts)
		s->mounts = json_array();
	s->internet = sqlite3_column_int(q, 22);
	const char *net = (const char *)sqlite3_column_text(q, 23);
	json_t *nj = net ? json_loads(net, 0, NULL) : NULL;
	hu_err ignored;
	/* rules the store holds were valid when written; a row that no longer
	 * decodes gets none rather than wrong ones */
	if (nj && hu_api_decode_network(nj, &s->net_rules, &ignored) == 0)
		s->has_network = 1;
	json_decref(nj);
	s->last_active_ms = s->paused_at_ms ? s->paused_at_ms : s->started_at_ms;
	return s;
}

int hu_store_sandbox_load(struct hu_store *st, void (*fn)(struct hu_sbx *s, void *arg), void *arg, hu_err *err)
{
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT id, team, template, state, access_token, started_at, end_at, timeout, metadata,"
			       " env_vars, auto_pause, auto_resume, allow_internet, cpu, memory, disk, auto_pause_memory,"
			       " paused_at, released, reclaim_after, idem_key, mounts, internet, network FROM sandboxes",
			       -1, &q, NULL) != SQLITE_OK)
		return db_err(st, err, "load sandboxes");
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct hu_sbx *s = row_sandbox(q);
		if (!s || !s->metadata || !s->env_vars || !s->mounts) {
			hu_sbx_free(s);
			sqlite3_finalize(q);
			return hu_err_set(err, ENOMEM, "store: load sandboxes");
		}
		fn(s, arg);
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE)
		return db_err(st, err, "load sandboxes");
	return 0;
}

int hu_store_lost_add(struct hu_store *st, const char *id, const char *team, const char *reason, hu_err *err)
{
	sqlite3_stmt *s = stmt(st, ST_LOST_ADD);
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, team, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, reason, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, hu_wall_ms());
	return step_done(st, s, "record a lost sandbox", err);
}

int hu_store_lost_reason(struct hu_store *st, const char *id, const char *team, char *reason, size_t n)
{
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

int hu_store_lost_purge(struct hu_store *st, int64_t before_ms, hu_err *err)
{
	sqlite3_stmt *s = stmt(st, ST_LOST_PURGE);
	sqlite3_bind_int64(s, 1, before_ms);
	return step_done(st, s, "purge lost sandboxes", err);
}

int hu_store_begin(struct hu_store *st, hu_err *err)
{
	return exec_sql(st, "BEGIN IMMEDIATE", err);
}

int hu_store_commit(struct hu_store *st, hu_err *err)
{
	if (exec_sql(st, "COMMIT", err) < 0) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	return 0;
}
