/* The store, against each backend: keys, teams, sandbox rows, schema
 * version, write groups. SQLite always; PostgreSQL when HUTCH_TEST_PG holds
 * the connection URI of a database the tests may wipe (tests/pg.sh starts
 * one), else those runs are skipped with a message. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <libpq-fe.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/store/backend.h"
#include "daemon/store/store.h"
#include "util/fileutil.h"

static const char *pg_uri; /* NULL while the SQLite group runs */

struct fixture {
	char dir[64];
	char db[128];
	const char *location;
	PGconn *admin; /* PostgreSQL: the test's own connection */
	struct hu_store *st;
};

/* An empty database: the schema the store migrates goes with the test. */
static int pg_wipe(PGconn *c)
{
	PGresult *r = PQexec(c, "DROP SCHEMA public CASCADE; CREATE SCHEMA public");
	int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	if (!ok)
		fprintf(stderr, "wipe: %s\n", PQerrorMessage(c));
	PQclear(r);
	return ok ? 0 : -1;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	hu_err err;

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-store-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->db, sizeof(f->db), "%s/hutch.db", f->dir);
	f->location = f->dir;
	if (pg_uri) {
		f->location = pg_uri;
		f->admin = PQconnectdb(pg_uri);
		PQclear(PQexec(f->admin, "SET client_min_messages = warning"));
		if (PQstatus(f->admin) != CONNECTION_OK || pg_wipe(f->admin) < 0) {
			fprintf(stderr, "%s\n", PQerrorMessage(f->admin));
			return -1;
		}
	}
	if (hu_store_open(f->location, &f->st, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	hu_err err;

	hu_store_close(f->st);
	if (f->admin) {
		pg_wipe(f->admin);
		PQfinish(f->admin);
	}
	hu_rm_rf(f->dir, &err);
	free(f);
	return 0;
}

/* Query one integer (a boolean is 0 or 1) from the backend directly, with
 * at most one text parameter ($1). */
static long long sql_int(struct fixture *f, const char *sql, const char *arg)
{
	long long v = -1;

	if (f->admin) {
		const char *p[] = {arg};
		PGresult *r = PQexecParams(f->admin, sql, arg ? 1 : 0, NULL, p, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_TUPLES_OK)
			fail_msg("%s: %s", sql, PQerrorMessage(f->admin));
		if (PQntuples(r) == 1) {
			const char *t = PQgetvalue(r, 0, 0);
			v = !strcmp(t, "t") ? 1 : !strcmp(t, "f") ? 0 : strtoll(t, NULL, 10);
		}
		PQclear(r);
		return v;
	}
	sqlite3 *h;
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_open_v2(f->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &s, NULL), SQLITE_OK);
	if (arg)
		sqlite3_bind_text(s, 1, arg, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(h);
	return v;
}

/* A statement of the test's own on the PostgreSQL database. */
static void pg_exec(struct fixture *f, const char *sql)
{
	PGresult *r = PQexec(f->admin, sql);
	ExecStatusType st = PQresultStatus(r);
	PQclear(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(f->admin));
}

static void test_keys(void **state)
{
	struct fixture *f = *state;
	char key[128], key2[128], team[64];
	int count = -1;
	hu_err err;

	assert_int_equal(hu_store_key_count(f->st, &count, &err), 0);
	assert_int_equal(count, 0);
	assert_int_equal(hu_store_key_create(f->st, "default", key, sizeof(key), &err), 0);
	/* E2B's SDKs refuse any key that is not e2b_ + lowercase hex. */
	assert_int_equal(strlen(key), 4 + 40);
	assert_memory_equal(key, "e2b_", 4);
	assert_int_equal(strspn(key + 4, "0123456789abcdef"), 40);
	assert_true(hu_store_key_well_formed(key));
	assert_int_equal(hu_store_key_create(f->st, "other", key2, sizeof(key2), &err), 0);
	assert_string_not_equal(key, key2);
	assert_int_equal(hu_store_key_count(f->st, &count, &err), 0);
	assert_int_equal(count, 2);

	assert_int_equal(hu_store_key_team(f->st, key, team, sizeof(team), &err), 0);
	assert_string_equal(team, "default");
	assert_int_equal(hu_store_key_team(f->st, key2, team, sizeof(team), &err), 0);
	assert_string_equal(team, "other");

	/* The key itself is never stored, only its hash. */
	assert_int_equal(sql_int(f, "SELECT count(*) FROM api_keys WHERE key_hash = $1", key), 0);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM api_keys WHERE length(key_hash) = 64", NULL), 2);
}

static void test_unknown_key(void **state)
{
	struct fixture *f = *state;
	char team[64] = "unchanged";
	hu_err err;

	assert_int_equal(hu_store_key_team(f->st, "hutch_nope", team, sizeof(team), &err), -1);
	assert_int_equal(err.code, ENOENT);
	assert_int_equal(hu_store_key_team(f->st, "e2b_0123abcd", team, sizeof(team), &err), -1);
	assert_int_equal(err.code, ENOENT);
	assert_int_equal(hu_store_key_team(f->st, "", team, sizeof(team), &err), -1);
	assert_int_equal(err.code, ENOENT);
	assert_string_equal(team, "unchanged");
}

/* A key issued before the e2b_ shape ("hutch_" + 48 hex) is stored as the
 * sha256 of the whole key, exactly like a new one: it keeps working with
 * nothing to migrate. */
static void test_legacy_key(void **state)
{
	struct fixture *f = *state;
	const char *legacy = "hutch_0123456789abcdef0123456789abcdef0123456789abcdef";
	/* sha256 of the string above (printf %s KEY | sha256sum) */
	const char *hash = "90ae9dd7031ec319a48ab68a5a60b4b1c7e325d0644b96cc51d4f81b6a8f8911";
	char team[64];
	hu_err err;

	/* stored the way every key is: by its hash, through the backend */
	assert_int_equal(f->st->ops->key_add(f->st, "old", hash, &err), 0);
	assert_true(hu_store_key_well_formed(legacy));
	assert_int_equal(hu_store_key_team(f->st, legacy, team, sizeof(team), &err), 0);
	assert_string_equal(team, "old");
}

/* Only the two shapes this store ever issued reach the backend. */
static void test_key_shape(void **state)
{
	char longkey[200];

	(void)state;
	assert_true(hu_store_key_well_formed("e2b_0a"));
	assert_true(hu_store_key_well_formed("hutch_0a"));
	assert_false(hu_store_key_well_formed(NULL));
	assert_false(hu_store_key_well_formed(""));
	assert_false(hu_store_key_well_formed("e2b_"));
	assert_false(hu_store_key_well_formed("e2b_0A"));
	assert_false(hu_store_key_well_formed("e2b_0a "));
	assert_false(hu_store_key_well_formed("E2B_0a"));
	assert_false(hu_store_key_well_formed("sk_0a"));
	assert_false(hu_store_key_well_formed("hutch_xyz"));
	memset(longkey, 'a', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	memcpy(longkey, "e2b_", 4);
	assert_false(hu_store_key_well_formed(longkey));
}

static void test_key_buffer_too_small(void **state)
{
	struct fixture *f = *state;
	char key[16];
	int count;
	hu_err err;

	assert_int_equal(hu_store_key_create(f->st, "t", key, sizeof(key), &err), -1);
	assert_int_equal(hu_store_key_count(f->st, &count, &err), 0);
	assert_int_equal(count, 0);
}

static struct hu_sandbox_row *sample_row(void)
{
	struct hu_sandbox_row *s = calloc(1, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "iabc123");
	snprintf(s->team, sizeof(s->team), "default");
	snprintf(s->template_id, sizeof(s->template_id), "base");
	snprintf(s->access_token, sizeof(s->access_token), "%064d", 7);
	s->state = HU_SBX_RUNNING;
	s->started_at_ms = 1700000000000;
	s->end_at_ms = 1700000300000;
	s->timeout_s = 300;
	s->metadata = json_pack("{s:s}", "lea.session_id", "s-1");
	s->env_vars = json_pack("{s:s}", "FOO", "bar'); DROP TABLE sandboxes; --");
	s->allow_internet = -1;
	s->cpu_millis = 1000;
	s->memory_bytes = 512u << 20;
	s->disk_bytes = 1u << 30;
	return s;
}

static void free_row(struct hu_sandbox_row *s)
{
	hu_sandbox_row_clear(s);
	free(s);
}

static void test_sandbox_put_update_delete(void **state)
{
	struct fixture *f = *state;
	struct hu_sandbox_row *s = sample_row();
	hu_err err;

	assert_int_equal(hu_store_sandbox_put(f->st, s, &err), 0);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes WHERE id = $1", "iabc123"), 1);
	assert_int_equal(sql_int(f, "SELECT allow_internet IS NULL FROM sandboxes WHERE id = $1", "iabc123"), 1);

	/* Update in place: pause and a new deadline. */
	s->state = HU_SBX_PAUSED;
	s->end_at_ms = 1700000600000;
	s->allow_internet = 0;
	assert_int_equal(hu_store_sandbox_put(f->st, s, &err), 0);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes", NULL), 1);
	assert_int_equal(sql_int(f, "SELECT end_at FROM sandboxes WHERE id = $1", "iabc123"), 1700000600000);
	assert_int_equal(sql_int(f, "SELECT state = 'paused' FROM sandboxes WHERE id = $1", "iabc123"), 1);
	assert_int_equal(sql_int(f, f->admin ? "SELECT env_vars->>'FOO' LIKE 'bar%' FROM sandboxes"
					     : "SELECT json_extract(env_vars, '$.FOO') LIKE 'bar%' FROM sandboxes",
				 NULL),
			 1);

	assert_int_equal(hu_store_sandbox_delete(f->st, "iabc123", &err), 0);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes", NULL), 0);
	/* Deleting what is not there is not an error (kill is idempotent). */
	assert_int_equal(hu_store_sandbox_delete(f->st, "iabc123", &err), 0);
	free_row(s);
}

/* Keep a copy of the row of iabc123, taking its JSON values. */
static void keep_loaded(struct hu_sandbox_row *s, void *arg)
{
	struct hu_sandbox_row **slot = arg;
	if (strcmp(s->id, "iabc123"))
		return;
	*slot = calloc(1, sizeof(**slot));
	**slot = *s;
	s->metadata = s->env_vars = s->mounts = s->network = NULL;
}

/* The lifecycle's rows: an Idempotency-Key is unique per team (a second
 * sandbox with it is refused, never replacing the first), states written
 * ahead, everything read back at start, lost sandboxes remembered. */
static void test_lifecycle_rows(void **state)
{
	struct fixture *f = *state;
	struct hu_sandbox_row *a = sample_row(), *b = sample_row(), *loaded = NULL;
	char reason[64];
	hu_err err;

	snprintf(a->idem_key, sizeof(a->idem_key), "session-1");
	a->state = HU_SBX_PAUSED;
	a->paused_at_ms = 1700000100000;
	a->released = 1;
	a->reclaim_after_s = -1;
	a->auto_pause_memory = 1;
	json_decref(a->mounts);
	a->mounts = json_pack("[{s:s, s:s, s:b}]", "kind", "volume", "path", "/data", "readOnly", 0);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	snprintf(b->id, sizeof(b->id), "iother");
	snprintf(b->idem_key, sizeof(b->idem_key), "session-1");
	assert_int_equal(hu_store_sandbox_put(f->st, b, &err), -1);
	assert_int_equal(err.code, EEXIST);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes WHERE id = $1", "iabc123"), 1);
	snprintf(b->team, sizeof(b->team), "team-b");
	assert_int_equal(hu_store_sandbox_put(f->st, b, &err), 0);
	/* the same key in another team is another sandbox's */
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes WHERE idem_key = $1", "session-1"), 2);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes WHERE idem_key = $1", "nope"), 0);

	assert_int_equal(hu_store_sandbox_load(f->st, keep_loaded, &loaded, &err), 0);
	assert_non_null(loaded);
	assert_int_equal(loaded->state, HU_SBX_PAUSED);
	assert_int_equal(loaded->paused_at_ms, 1700000100000);
	assert_int_equal(loaded->released, 1);
	assert_int_equal(loaded->reclaim_after_s, -1);
	assert_string_equal(loaded->idem_key, "session-1");
	assert_string_equal(loaded->access_token, a->access_token);
	assert_int_equal(loaded->end_at_ms, a->end_at_ms);
	assert_true(json_equal(loaded->metadata, a->metadata));
	assert_true(json_equal(loaded->mounts, a->mounts)); /* a restart mounts the same volumes */
	free_row(loaded);

	assert_int_equal(hu_store_sandbox_set_state(f->st, "iabc123", HU_SBX_KILLING, &err), 0);
	assert_int_equal(sql_int(f, "SELECT state = 'killing' FROM sandboxes WHERE id = $1", "iabc123"), 1);

	assert_int_equal(hu_store_lost_add(f->st, "igone", "default", "init died", &err), 0);
	assert_int_equal(hu_store_lost_reason(f->st, "igone", "default", reason, sizeof(reason)), 1);
	assert_string_equal(reason, "init died");
	assert_int_equal(hu_store_lost_reason(f->st, "igone", "team-b", reason, sizeof(reason)), 0);
	assert_int_equal(hu_store_lost_purge(f->st, INT64_MAX, &err), 0);
	assert_int_equal(hu_store_lost_reason(f->st, "igone", "default", reason, sizeof(reason)), 0);
	free_row(a);
	free_row(b);
}

/* `hutch template rm` asks how many stored sandboxes stand on a template:
 * every state counts, other templates do not, and the id is a bound value. */
static void test_template_users(void **state)
{
	struct fixture *f = *state;
	struct hu_sandbox_row *a = sample_row(), *b = sample_row();
	int n = -1;
	hu_err err;

	snprintf(a->template_id, sizeof(a->template_id), "tools");
	snprintf(b->id, sizeof(b->id), "ibbb");
	snprintf(b->template_id, sizeof(b->template_id), "tools");
	b->state = HU_SBX_PAUSED;
	assert_int_equal(hu_store_template_users(f->st, "tools", &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	assert_int_equal(hu_store_sandbox_put(f->st, b, &err), 0);
	assert_int_equal(hu_store_template_users(f->st, "tools", &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(hu_store_sandbox_set_state(f->st, "ibbb", HU_SBX_KILLING, &err), 0);
	assert_int_equal(hu_store_template_users(f->st, "tools", &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(hu_store_template_users(f->st, "base", &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(hu_store_template_users(f->st, "tools' OR '1'='1", &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(hu_store_sandbox_delete(f->st, a->id, &err), 0);
	assert_int_equal(hu_store_sandbox_delete(f->st, b->id, &err), 0);
	assert_int_equal(hu_store_template_users(f->st, "tools", &n, &err), 0);
	assert_int_equal(n, 0);
	free_row(a);
	free_row(b);
}

static void test_schema_and_mode(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	if (f->admin) {
		assert_int_equal(sql_int(f, "SELECT version FROM hutch_schema", NULL), 7);
		assert_string_equal(hu_store_backend_name(f->st), "postgresql");
		return;
	}
	assert_string_equal(hu_store_backend_name(f->st), "sqlite");
	assert_int_equal(sql_int(f, "PRAGMA user_version", NULL), 4);
	assert_int_equal(stat(f->db, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
}

/* Reopening keeps the data and does not migrate twice; a database from a
 * newer hutch is refused rather than misread. */
static void test_reopen_and_newer_schema(void **state)
{
	struct fixture *f = *state;
	char key[128], team[64];
	struct hu_store *st2;
	hu_err err;

	assert_int_equal(hu_store_key_create(f->st, "default", key, sizeof(key), &err), 0);
	hu_store_close(f->st);
	f->st = NULL;
	assert_int_equal(hu_store_open(f->location, &st2, &err), 0);
	assert_int_equal(hu_store_key_team(st2, key, team, sizeof(team), &err), 0);
	hu_store_close(st2);

	if (f->admin) {
		pg_exec(f, "UPDATE hutch_schema SET version = 99");
	} else {
		sqlite3 *h;
		assert_int_equal(sqlite3_open(f->db, &h), SQLITE_OK);
		assert_int_equal(sqlite3_exec(h, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
		sqlite3_close(h);
	}
	assert_int_equal(hu_store_open(f->location, &st2, &err), -1);
	assert_null(st2);
	assert_int_equal(err.code, EPROTO);
	assert_non_null(strstr(err.msg, "newer"));
}

/* A group of writes (the lifecycle's periodic save) in which one row is
 * refused (its idempotency key is taken) keeps the others: the refusal is
 * that row's, not the group's. */
static void test_group_with_a_refused_row(void **state)
{
	struct fixture *f = *state;
	struct hu_sandbox_row *a = sample_row(), *b = sample_row(), *c = sample_row();
	hu_err err;

	snprintf(a->idem_key, sizeof(a->idem_key), "k");
	snprintf(b->id, sizeof(b->id), "ib");
	snprintf(b->idem_key, sizeof(b->idem_key), "k");
	snprintf(c->id, sizeof(c->id), "ic");
	assert_int_equal(hu_store_begin(f->st, &err), 0);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	assert_int_equal(hu_store_sandbox_put(f->st, b, &err), -1);
	assert_int_equal(err.code, EEXIST);
	assert_int_equal(hu_store_sandbox_put(f->st, c, &err), 0);
	assert_int_equal(hu_store_commit(f->st, &err), 0);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes", NULL), 2);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes WHERE id = $1", "ib"), 0);
	/* and the store is usable afterwards, outside any group */
	snprintf(b->idem_key, sizeof(b->idem_key), "k2");
	assert_int_equal(hu_store_sandbox_put(f->st, b, &err), 0);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes", NULL), 3);
	free_row(a);
	free_row(b);
	free_row(c);
}

/* ---- PostgreSQL only: several nodes, a server that goes away ------------- */

/* Two nodes (two connections) creating with one Idempotency-Key: the
 * second is refused by the database, whichever node it came through. */
static void test_pg_idem_across_nodes(void **state)
{
	struct fixture *f = *state;
	struct hu_sandbox_row *a, *b;
	struct hu_store *other;
	hu_err err;

	if (!f->admin)
		skip();
	a = sample_row();
	b = sample_row();
	assert_int_equal(hu_store_open(f->location, &other, &err), 0);
	snprintf(a->idem_key, sizeof(a->idem_key), "one");
	snprintf(b->id, sizeof(b->id), "ifromother");
	snprintf(b->idem_key, sizeof(b->idem_key), "one");
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	assert_int_equal(hu_store_sandbox_put(other, b, &err), -1);
	assert_int_equal(err.code, EEXIST);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes WHERE idem_key = $1", "one"), 1);
	/* once the first is gone the key is free again */
	assert_int_equal(hu_store_sandbox_delete(f->st, a->id, &err), 0);
	assert_int_equal(hu_store_sandbox_put(other, b, &err), 0);
	hu_store_close(other);
	free_row(a);
	free_row(b);
}

/* Eight nodes starting at once on an empty database: each migrates or
 * waits for the one that does (the advisory lock), and all of them open. */
static void test_pg_concurrent_migrations(void **state)
{
	struct fixture *f = *state;
	pid_t kids[8];

	if (!f->admin)
		skip();
	hu_store_close(f->st);
	f->st = NULL;
	assert_int_equal(pg_wipe(f->admin), 0);
	for (int i = 0; i < 8; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			struct hu_store *st;
			hu_err err;
			if (hu_store_open(f->location, &st, &err) < 0) {
				fprintf(stderr, "child %d: %s\n", i, err.msg);
				_exit(1);
			}
			hu_store_close(st);
			_exit(0);
		}
	}
	for (int i = 0; i < 8; i++) {
		int ws;
		assert_int_equal(waitpid(kids[i], &ws, 0), kids[i]);
		assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	}
	assert_int_equal(sql_int(f, "SELECT version FROM hutch_schema", NULL), 7);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM hutch_schema", NULL), 1);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM pg_tables WHERE tablename = 'sandboxes'", NULL), 1);
}

/* Kill the store's server-side session, as a server restart would. */
static void kill_store_session(struct fixture *f)
{
	pg_exec(f, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
		   " WHERE application_name = 'hutch' AND pid <> pg_backend_pid()");
	usleep(200 * 1000); /* the server's goodbye reaches the store's socket */
}

/* A connection the server closed is noticed before the next call, which
 * reconnects: nothing is lost and the caller sees no error. */
static void test_pg_reconnects(void **state)
{
	struct fixture *f = *state;
	char key[128], team[64];
	hu_err err;

	if (!f->admin)
		skip();
	assert_int_equal(hu_store_key_create(f->st, "default", key, sizeof(key), &err), 0);
	kill_store_session(f);
	assert_int_equal(hu_store_key_team(f->st, key, team, sizeof(team), &err), 0);
	assert_string_equal(team, "default");
	assert_int_equal(sql_int(f, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'hutch'", NULL),
			 1);
}

/* A connection lost in the middle of a group: the rest of the group and
 * its commit fail with ENOTCONN (the API's 503, retry later), nothing of
 * the group is written, and the next call reconnects. */
static void test_pg_lost_in_a_group(void **state)
{
	struct fixture *f = *state;
	struct hu_sandbox_row *a, *b;
	int n = -1;
	hu_err err;

	if (!f->admin)
		skip();
	a = sample_row();
	b = sample_row();
	snprintf(b->id, sizeof(b->id), "ib");
	assert_int_equal(hu_store_begin(f->st, &err), 0);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	kill_store_session(f);
	assert_int_equal(hu_store_sandbox_put(f->st, b, &err), -1);
	assert_int_equal(err.code, ENOTCONN);
	assert_int_equal(hu_store_commit(f->st, &err), -1);
	assert_int_equal(err.code, ENOTCONN);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes", NULL), 0);
	assert_int_equal(hu_store_key_count(f->st, &n, &err), 0);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes", NULL), 1);
	free_row(a);
	free_row(b);
}

/* A server that cannot be reached is ENOTCONN (a daemon starting then
 * says why and exits; a running one answers 503). */
static void test_pg_unreachable(void **state)
{
	struct fixture *f = *state;
	struct hu_store *st = NULL;
	char uri[256];
	hu_err err;

	if (!f->admin)
		skip();
	snprintf(uri, sizeof(uri), "postgresql:///hutch?host=%s&port=1", f->dir);
	assert_int_equal(hu_store_open(uri, &st, &err), -1);
	assert_null(st);
	assert_int_equal(err.code, ENOTCONN);
	assert_non_null(strstr(err.msg, "postgresql"));
}

static void count_volume(const struct hu_volume *v, void *arg)
{
	(*(int *)arg)++;
}

/* Volumes: unique per team, found by id or name within the team only. */
static void test_volumes(void **state)
{
	struct fixture *f = *state;
	struct hu_volume a = {.id = "vaaa", .team = "t1", .name = "ws", .size = 8 << 20, .created_at_ms = 1},
			 b = {.id = "vbbb", .team = "t2", .name = "ws", .created_at_ms = 2}, got;
	hu_err err;
	int n = 0;

	assert_int_equal(hu_store_volume_add(f->st, &a, &err), 0);
	assert_int_equal(hu_store_volume_add(f->st, &b, &err), 0);
	struct hu_volume dup = a;
	snprintf(dup.id, sizeof(dup.id), "vccc");
	assert_int_equal(hu_store_volume_add(f->st, &dup, &err), -1);
	assert_int_equal(err.code, EEXIST);
	assert_int_equal(hu_store_volume_find(f->st, "t1", "ws", &got, &err), 0);
	assert_string_equal(got.id, "vaaa");
	assert_int_equal(got.size, 8 << 20);
	assert_int_equal(hu_store_volume_find(f->st, "t2", "vbbb", &got, &err), 0);
	assert_int_equal(got.size, 0);
	assert_int_equal(hu_store_volume_find(f->st, "t2", "vaaa", &got, &err), -1); /* another team's id */
	assert_int_equal(err.code, ENOENT);
	assert_int_equal(hu_store_volume_each(f->st, "t1", count_volume, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(hu_store_volume_delete(f->st, "vaaa", &err), 0);
	assert_int_equal(hu_store_volume_find(f->st, "t1", "ws", &got, &err), -1);
	assert_int_equal(hu_store_volume_find(f->st, "t2", "ws", &got, &err), 0);
}

static void count_snapshot(const struct hu_snapshot_row *row, void *arg)
{
	(*(int *)arg)++;
}

/* Snapshots: a name is unique per team, found by id or name within the
 * team only; a row written ahead (creating) turns ready by id; a snapshot
 * stands on its template. */
static void test_snapshots(void **state)
{
	struct fixture *f = *state;
	struct hu_snapshot_row a = {.id = "saaa", .team = "t1", .sandbox_id = "ix", .template_id = "tools",
				    .state = HU_SNAP_CREATING, .created_at_ms = 1, .cpu_millis = 2000,
				    .memory_bytes = 1 << 30, .disk_bytes = 2ull << 30},
			       b = {.id = "sbbb", .team = "t2", .name = "snap", .sandbox_id = "iy", .template_id = "base",
				    .state = HU_SNAP_READY, .created_at_ms = 2},
			       got;
	hu_err err;
	int n = 0;

	assert_int_equal(hu_store_snapshot_put(f->st, &a, &err), 0);
	assert_int_equal(hu_store_snapshot_put(f->st, &b, &err), 0);
	assert_int_equal(hu_store_snapshot_find(f->st, "t1", "saaa", &got, &err), 0);
	assert_int_equal(got.state, HU_SNAP_CREATING);
	assert_string_equal(got.name, "");
	a.state = HU_SNAP_READY;
	snprintf(a.name, sizeof(a.name), "snap"); /* t2 has one of that name: other team, fine */
	assert_int_equal(hu_store_snapshot_put(f->st, &a, &err), 0);
	assert_int_equal(hu_store_snapshot_find(f->st, "t1", "snap", &got, &err), 0);
	assert_string_equal(got.id, "saaa");
	assert_int_equal(got.state, HU_SNAP_READY);
	assert_int_equal(got.cpu_millis, 2000);
	assert_int_equal(got.memory_bytes, 1 << 30);
	assert_int_equal(got.disk_bytes, 2ull << 30);
	assert_string_equal(got.template_id, "tools");
	struct hu_snapshot_row dup = a;
	snprintf(dup.id, sizeof(dup.id), "sccc");
	assert_int_equal(hu_store_snapshot_put(f->st, &dup, &err), -1);
	assert_int_equal(err.code, EEXIST);
	assert_int_equal(hu_store_snapshot_find(f->st, "t2", "saaa", &got, &err), -1); /* another team's id */
	assert_int_equal(err.code, ENOENT);
	assert_int_equal(hu_store_snapshot_find(f->st, "t1", "x' OR '1'='1", &got, &err), -1);
	assert_int_equal(hu_store_snapshot_each(f->st, "t1", count_snapshot, &n, &err), 0);
	assert_int_equal(n, 1);
	n = 0;
	assert_int_equal(hu_store_snapshot_each(f->st, NULL, count_snapshot, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(hu_store_template_users(f->st, "tools", &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(hu_store_snapshot_delete(f->st, "saaa", &err), 0);
	assert_int_equal(hu_store_snapshot_find(f->st, "t1", "snap", &got, &err), -1);
	assert_int_equal(hu_store_template_users(f->st, "tools", &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(hu_store_snapshot_find(f->st, "t2", "snap", &got, &err), 0);
}

/* The statements a create runs are kept prepared (the snapshot find, the
 * group's BEGIN and COMMIT): a kept one holds no read snapshot between
 * calls, so another connection's writes are seen at once and a checkpoint
 * can truncate the WAL. */
static void test_kept_statements_hold_nothing(void **state)
{
	struct fixture *f = *state;
	struct hu_snapshot_row a = {.id = "saaa", .team = "t1", .sandbox_id = "ix", .template_id = "base",
				    .state = HU_SNAP_READY, .created_at_ms = 1},
			       got;
	struct hu_sandbox_row *row;
	sqlite3 *h;
	int busy = -1, log = -1, done = -1;
	hu_err err;

	if (f->admin)
		skip(); /* SQLite's statements */
	row = sample_row();
	assert_int_equal(hu_store_snapshot_put(f->st, &a, &err), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(hu_store_snapshot_find(f->st, "t1", "saaa", &got, &err), 0);
		assert_int_equal(hu_store_snapshot_find(f->st, "t1", "nope", &got, &err), -1);
		assert_int_equal(err.code, ENOENT);
		snprintf(row->id, sizeof(row->id), "i%d", i);
		assert_int_equal(hu_store_begin(f->st, &err), 0);
		assert_int_equal(hu_store_sandbox_put(f->st, row, &err), 0);
		assert_int_equal(hu_store_commit(f->st, &err), 0);
	}
	assert_int_equal(hu_store_snapshot_find(f->st, "t1", "saaa", &got, &err), 0);
	assert_int_equal(sqlite3_open_v2(f->db, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "UPDATE snapshots SET name = 'renamed' WHERE id = 'saaa'", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_wal_checkpoint_v2(h, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &done), SQLITE_OK);
	busy = log - done;
	sqlite3_close(h);
	assert_int_equal(busy, 0);
	assert_int_equal(hu_store_snapshot_find(f->st, "t1", "renamed", &got, &err), 0);
	assert_string_equal(got.id, "saaa");
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes", NULL), 3);
	free_row(row);
}

/* ---- nodes ----------------------------------------------------------------- */

static struct hu_node node_named(const char *name)
{
	struct hu_node n = {.memory_bytes = 8ull << 30, .cpu_millis = 4000, .pids = 100000, .max_sandboxes = 100};
	snprintf(n.name, sizeof(n.name), "%s", name);
	snprintf(n.address, sizeof(n.address), "http://127.0.0.1:1");
	return n;
}

/* SQLite is one host: it has no nodes, and says so. */
static void test_nodes_need_a_shared_store(void **state)
{
	struct fixture *f = *state;
	struct hu_node n = node_named("n1");
	int64_t gen;
	hu_err err;

	if (f->admin)
		skip();
	assert_int_equal(hu_store_node_register(f->st, &n, 10000, &gen, &err), -1);
	assert_int_equal(err.code, ENOSYS);
}

struct seen {
	int n, alive;
	char owners[4][HU_NODE_NAME_MAX];
};

static void see_row(struct hu_sandbox_row *row, void *arg)
{
	struct seen *s = arg;
	if (s->n < 4)
		snprintf(s->owners[s->n], sizeof(s->owners[0]), "%s:%s", row->id, row->owner);
	s->n++;
}

static void see_node(const struct hu_node *n, void *arg)
{
	struct seen *s = arg;
	s->n++;
	s->alive += n->alive;
}

/* Every row a node writes is its own; a node adopts only its own rows and
 * cannot overwrite another node's. */
static void test_pg_nodes_own_their_rows(void **state)
{
	struct fixture *f = *state;
	struct hu_node n1 = node_named("n1"), n2 = node_named("n2");
	struct hu_sandbox_row *a, *b;
	struct hu_store *other;
	struct seen seen = {0};
	int64_t gen;
	hu_err err;

	if (!f->admin)
		skip();
	a = sample_row();
	b = sample_row();
	assert_int_equal(hu_store_open(f->location, &other, &err), 0);
	assert_int_equal(hu_store_node_register(f->st, &n1, 10000, &gen, &err), 0);
	assert_int_equal(gen, 1);
	assert_int_equal(hu_store_node_register(other, &n2, 10000, &gen, &err), 0);
	snprintf(b->id, sizeof(b->id), "ion2");
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	assert_int_equal(hu_store_sandbox_put(other, b, &err), 0);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes WHERE id = $1 AND owner = 'n1'", a->id), 1);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes WHERE id = $1 AND owner = 'n2'", b->id), 1);
	assert_int_equal(hu_store_sandbox_load(f->st, see_row, &seen, &err), 0);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.owners[0], "iabc123:n1");
	/* n2 writing n1's sandbox changes nothing */
	a->end_at_ms = 42;
	assert_int_equal(hu_store_sandbox_put(other, a, &err), -1);
	assert_int_equal(err.code, ENOTCONN);
	assert_int_equal(sql_int(f, "SELECT end_at FROM sandboxes WHERE id = $1", a->id), 1700000300000);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(hu_store_node_each(f->st, see_node, &seen, &err), 0);
	assert_int_equal(seen.n, 2);
	assert_int_equal(seen.alive, 2);
	hu_store_close(other);
	free_row(a);
	free_row(b);
}

/* Where another node's sandbox is: its owner, live or not; nothing for
 * this node's own sandboxes or unknown ids. */
static void test_pg_sandbox_owner(void **state)
{
	struct fixture *f = *state;
	struct hu_node n1 = node_named("n1"), n2 = node_named("n2"), owner;
	struct hu_sandbox_row *a;
	struct hu_store *other;
	char team[64];
	int64_t gen;
	hu_err err;

	if (!f->admin) {
		assert_int_equal(hu_store_sandbox_owner(f->st, "iabc123", team, sizeof(team), &owner, &err), -1);
		assert_int_equal(err.code, ENOENT);
		return;
	}
	a = sample_row();
	snprintf(n1.address, sizeof(n1.address), "http://127.0.0.1:4001");
	assert_int_equal(hu_store_open(f->location, &other, &err), 0);
	assert_int_equal(hu_store_node_register(f->st, &n1, 10000, &gen, &err), 0);
	assert_int_equal(hu_store_node_register(other, &n2, 10000, &gen, &err), 0);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	assert_int_equal(hu_store_sandbox_owner(other, a->id, team, sizeof(team), &owner, &err), 0);
	assert_string_equal(owner.name, "n1");
	assert_string_equal(owner.address, "http://127.0.0.1:4001");
	assert_string_equal(team, "default");
	assert_true(owner.alive);
	assert_int_equal(hu_store_sandbox_owner(f->st, a->id, team, sizeof(team), &owner, &err), -1);
	assert_int_equal(err.code, ENOENT); /* n1's own */
	assert_int_equal(hu_store_sandbox_owner(other, "inope", team, sizeof(team), &owner, &err), -1);
	assert_int_equal(err.code, ENOENT);
	pg_exec(f, "UPDATE nodes SET lease_until = now() - interval '30 seconds' WHERE name = 'n1'");
	assert_int_equal(hu_store_sandbox_owner(other, a->id, team, sizeof(team), &owner, &err), 0);
	assert_false(owner.alive);
	assert_true(owner.lease_left_ms <= -29000);
	hu_store_close(other);
	free_row(a);
}

struct listed {
	int n;
	char ids[4][HU_ID_MAX];
	json_t *metadata; /* the last row's, taken */
};

static void list_row(struct hu_sandbox_row *row, void *arg)
{
	struct listed *l = arg;
	if (l->n < 4)
		snprintf(l->ids[l->n], sizeof(l->ids[0]), "%s:%s:%s", row->id, row->owner, hu_store_state_name(row->state));
	l->n++;
	json_decref(l->metadata);
	l->metadata = row->metadata; /* fn may take the row's JSON */
	row->metadata = NULL;
}

/* The list across nodes: a node reads the team's running and paused rows
 * of the other nodes, never its own, another team's, or a create or kill
 * half done; SQLite has no other nodes. */
static void test_pg_sandbox_others(void **state)
{
	struct fixture *f = *state;
	struct hu_node n1 = node_named("n1"), n2 = node_named("n2");
	struct hu_sandbox_row *a, *b, *c, *d;
	struct hu_store *other;
	struct listed l = {0};
	int64_t gen;
	hu_err err;

	if (!f->admin) {
		assert_int_equal(hu_store_sandbox_others(f->st, "default", list_row, &l, &err), -1);
		assert_int_equal(err.code, ENOSYS);
		return;
	}
	a = sample_row();
	b = sample_row();
	c = sample_row();
	d = sample_row();
	assert_int_equal(hu_store_open(f->location, &other, &err), 0);
	/* not registered yet: no node, no others */
	assert_int_equal(hu_store_sandbox_others(f->st, "default", list_row, &l, &err), -1);
	assert_int_equal(err.code, ENOSYS);
	assert_int_equal(hu_store_node_register(f->st, &n1, 10000, &gen, &err), 0);
	assert_int_equal(hu_store_node_register(other, &n2, 10000, &gen, &err), 0);
	snprintf(b->id, sizeof(b->id), "ipaused");
	b->state = HU_SBX_PAUSED;
	b->paused_at_ms = 1700000100000;
	snprintf(c->id, sizeof(c->id), "ikilling");
	c->state = HU_SBX_KILLING;
	snprintf(d->id, sizeof(d->id), "iteam2");
	snprintf(d->team, sizeof(d->team), "another");
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0); /* n1's */
	assert_int_equal(hu_store_sandbox_put(other, b, &err), 0);
	assert_int_equal(hu_store_sandbox_put(other, c, &err), 0);
	assert_int_equal(hu_store_sandbox_put(other, d, &err), 0);
	assert_int_equal(hu_store_sandbox_others(f->st, "default", list_row, &l, &err), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.ids[0], "ipaused:n2:paused");
	assert_non_null(l.metadata);
	assert_string_equal(json_string_value(json_object_get(l.metadata, "lea.session_id")), "s-1");
	json_decref(l.metadata);
	memset(&l, 0, sizeof(l));
	assert_int_equal(hu_store_sandbox_others(other, "default", list_row, &l, &err), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.ids[0], "iabc123:n1:running");
	json_decref(l.metadata);
	memset(&l, 0, sizeof(l));
	assert_int_equal(hu_store_sandbox_others(f->st, "nobody", list_row, &l, &err), 0);
	assert_int_equal(l.n, 0);
	hu_store_close(other);
	free_row(a);
	free_row(b);
	free_row(c);
	free_row(d);
}

/* A signed URL's sandbox among the other nodes': the server hashes
 * prefix + token + suffix; a wrong digest, another op or this node's own
 * sandbox finds nothing. */
static void test_pg_sandbox_by_signature(void **state)
{
	struct fixture *f = *state;
	struct hu_node n1 = node_named("n1"), n2 = node_named("n2");
	struct hu_sandbox_row *a;
	struct hu_store *other;
	unsigned char digest[32];
	char text[256], id[HU_ID_MAX];
	unsigned int len = 0;
	int64_t gen;
	hu_err err;

	a = sample_row();
	snprintf(text, sizeof(text), "/home/user/\xff a.txt:read:user:%s:1760000000", a->access_token);
	assert_int_equal(EVP_Digest(text, strlen(text), digest, &len, EVP_sha256(), NULL), 1);
	if (!f->admin) {
		assert_int_equal(hu_store_sandbox_by_signature(f->st, "/home/user/\xff a.txt:read:user:", ":1760000000",
							       digest, sizeof(digest), id, sizeof(id), &err),
				 -1);
		assert_int_equal(err.code, ENOSYS);
		free_row(a);
		return;
	}
	assert_int_equal(hu_store_open(f->location, &other, &err), 0);
	assert_int_equal(hu_store_node_register(f->st, &n1, 10000, &gen, &err), 0);
	assert_int_equal(hu_store_node_register(other, &n2, 10000, &gen, &err), 0);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	/* the path holds a byte that is not UTF-8: it goes as hex */
	assert_int_equal(hu_store_sandbox_by_signature(other, "/home/user/\xff a.txt:read:user:", ":1760000000", digest,
						       sizeof(digest), id, sizeof(id), &err),
			 0);
	assert_string_equal(id, "iabc123");
	assert_int_equal(hu_store_sandbox_by_signature(other, "/home/user/\xff a.txt:write:user:", ":1760000000",
						       digest, sizeof(digest), id, sizeof(id), &err),
			 -1);
	assert_int_equal(err.code, ENOENT);
	assert_int_equal(hu_store_sandbox_by_signature(other, "/home/user/\xff a.txt:read:user:", "", digest,
						       sizeof(digest), id, sizeof(id), &err),
			 -1);
	assert_int_equal(err.code, ENOENT);
	/* n1 looks among the others only: its own is not found this way */
	assert_int_equal(hu_store_sandbox_by_signature(f->st, "/home/user/\xff a.txt:read:user:", ":1760000000",
						       digest, sizeof(digest), id, sizeof(id), &err),
			 -1);
	assert_int_equal(err.code, ENOENT);
	hu_store_close(other);
	free_row(a);
}

/* A lease that expired stops the node's writes (it admits no creates),
 * whether this process noticed (its own clock) or only the database did;
 * a renewal lets it write again. */
static void test_pg_lease_expiry(void **state)
{
	struct fixture *f = *state;
	struct hu_node n1 = node_named("n1");
	struct hu_sandbox_row *a;
	int64_t gen;
	hu_err err;

	if (!f->admin)
		skip();
	a = sample_row();
	assert_int_equal(hu_store_node_register(f->st, &n1, 300, &gen, &err), 0);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	usleep(400 * 1000);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), -1);
	assert_int_equal(err.code, ENOTCONN);
	assert_non_null(strstr(err.msg, "lease"));
	assert_int_equal(hu_store_node_renew(f->st, &n1, 10000, &err), 0);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	/* the database's clock is the one that counts */
	pg_exec(f, "UPDATE nodes SET lease_until = now() - interval '1 second'");
	a->end_at_ms = 42;
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), -1);
	assert_int_equal(err.code, ENOTCONN);
	assert_int_equal(sql_int(f, "SELECT end_at FROM sandboxes WHERE id = $1", a->id), 1700000300000);
	assert_int_equal(hu_store_node_renew(f->st, &n1, 10000, &err), 0);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	assert_int_equal(sql_int(f, "SELECT end_at FROM sandboxes WHERE id = $1", a->id), 42);
	free_row(a);
}

/* A second process registering the same node name fences the first out:
 * its renewal is refused (ESTALE) and it writes nothing from then on. */
static void test_pg_fencing(void **state)
{
	struct fixture *f = *state;
	struct hu_node n1 = node_named("n1");
	struct hu_sandbox_row *a;
	struct hu_store *second;
	int64_t gen1, gen2;
	hu_err err;

	if (!f->admin)
		skip();
	a = sample_row();
	assert_int_equal(hu_store_open(f->location, &second, &err), 0);
	assert_int_equal(hu_store_node_register(f->st, &n1, 10000, &gen1, &err), 0);
	assert_int_equal(hu_store_node_register(second, &n1, 10000, &gen2, &err), 0);
	assert_int_equal(gen2, gen1 + 1);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), -1); /* the database refuses the old generation */
	assert_int_equal(err.code, ENOTCONN);
	assert_int_equal(hu_store_node_renew(f->st, &n1, 10000, &err), -1);
	assert_int_equal(err.code, ESTALE);
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), -1);
	assert_int_equal(hu_store_sandbox_put(second, a, &err), 0);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM sandboxes WHERE owner = 'n1'", NULL), 1);
	hu_store_close(second);
	free_row(a);
}

/* Placement: live, not draining nodes that have the template and room,
 * least loaded (committed memory over budget) first, counting what is
 * reserved for creates on their way; an Idempotency-Key goes to the owner
 * of its sandbox. */
static void test_pg_placement(void **state)
{
	struct fixture *f = *state;
	struct hu_node n1 = node_named("n1"), chosen;
	struct hu_place_ask ask = {.team = "default", .template_id = "base", .memory_bytes = 512u << 20,
				   .cpu_millis = 1000, .pids = 512};
	char placement[HU_PLACEMENT_ID_MAX], first[HU_PLACEMENT_ID_MAX] = "";
	struct hu_sandbox_row *a;
	int to_n1 = 0, to_n2 = 0;
	int64_t gen;
	hu_err err;

	if (!f->admin) {
		assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), -1);
		assert_int_equal(err.code, ENOSYS);
		return;
	}
	n1.memory_bytes = 1ull << 30;
	n1.cpu_millis = 0; /* no CPU budget */
	snprintf(n1.templates, sizeof(n1.templates), "base,other");
	assert_int_equal(hu_store_node_register(f->st, &n1, 10000, &gen, &err), 0);
	/* n2: four times n1's memory; n3: dead; n4: draining; n5: no template */
	pg_exec(f, "INSERT INTO nodes (name, address, memory, cpu, pids, max_sandboxes, generation, lease_until,"
		   " registered_at, templates, draining) VALUES"
		   " ('n2', 'http://127.0.0.1:2', 4294967296, 0, 100000, 0, 1, now() + interval '10 s', now(), 'base', false),"
		   " ('n3', 'http://127.0.0.1:3', 99999999999, 0, 100000, 0, 1, now() - interval '1 s', now(), 'base', false),"
		   " ('n4', 'http://127.0.0.1:4', 99999999999, 0, 100000, 0, 1, now() + interval '10 s', now(), 'base', true),"
		   " ('n5', 'http://127.0.0.1:5', 99999999999, 0, 100000, 0, 1, now() + interval '10 s', now(), 'x', false)");
	/* 10 reservations of 512 MiB: 2 fit n1, 8 fit n2, in the shares of their budgets */
	for (int i = 0; i < 10; i++) {
		assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
		assert_int_equal(strlen(placement), 32);
		to_n1 += !strcmp(chosen.name, "n1");
		to_n2 += !strcmp(chosen.name, "n2");
		if (!first[0])
			snprintf(first, sizeof(first), "%s", placement);
	}
	assert_int_equal(to_n1, 2);
	assert_int_equal(to_n2, 8);
	/* full: the least loaded node that could take it, nothing reserved
	 * (its admission says why not); none for a template no node has */
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
	assert_string_equal(chosen.name, "n1");
	assert_string_equal(placement, "");
	ask.template_id = "nowhere";
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), -1);
	assert_int_equal(err.code, ENOENT);
	assert_string_equal(placement, "");
	/* a template only n1 has, once n1 has room again */
	assert_int_equal(sql_int(f, "SELECT count(*) FROM placements", NULL), 10);
	pg_exec(f, "DELETE FROM placements WHERE node = 'n1'");
	ask.template_id = "other";
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
	assert_string_equal(chosen.name, "n1");
	assert_string_equal(chosen.address, "http://127.0.0.1:1");
	/* a reservation ends */
	assert_int_equal(hu_store_placement_done(f->st, first, &err), 0);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM placements WHERE id = $1", first), 0);
	/* the Idempotency-Key of a sandbox n1 owns: n1, nothing reserved */
	a = sample_row();
	snprintf(a->idem_key, sizeof(a->idem_key), "k-1");
	assert_int_equal(hu_store_sandbox_put(f->st, a, &err), 0);
	pg_exec(f, "DELETE FROM placements");
	ask.template_id = "base";
	ask.idem_key = "k-1";
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
	assert_string_equal(chosen.name, "n1");
	assert_string_equal(placement, "");
	assert_int_equal(sql_int(f, "SELECT count(*) FROM placements", NULL), 0);
	assert_true(chosen.alive);
	/* a key whose first create is on its way (reserved, no row yet): its
	 * reservation carries the key, and the next create with it goes to
	 * that node, reserving nothing; another team's key is another key */
	ask.idem_key = "k-2";
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
	assert_int_equal(strlen(placement), 32);
	snprintf(first, sizeof(first), "%s", chosen.name);
	pg_exec(f, "UPDATE nodes SET memory = 99999999999999 WHERE name <> 'n1'"); /* another node is now least loaded */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
		assert_string_equal(chosen.name, first);
		assert_string_equal(placement, "");
	}
	assert_int_equal(sql_int(f, "SELECT count(*) FROM placements WHERE idem_key = 'k-2'", NULL), 1);
	ask.team = "other-team";
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
	assert_int_equal(strlen(placement), 32);
	ask.team = "default";
	/* the key's node down: chosen, marked not alive (the caller answers 503) */
	pg_exec(f, "UPDATE nodes SET lease_until = now() - interval '1 s' WHERE name <> 'n1'");
	pg_exec(f, "UPDATE placements SET node = 'n2' WHERE idem_key = 'k-2'");
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
	assert_string_equal(chosen.name, "n2");
	assert_false(chosen.alive);
	free_row(a);
}

/* Templates other nodes fetch, and volumes tied to a node: placement
 * prefers the nodes that have the template, takes one that can fetch it
 * only when those are full, and keeps a create of a volume on its node. */
static void test_pg_templates_and_volume_nodes(void **state)
{
	struct fixture *f = *state;
	struct hu_node n1 = node_named("n1"), chosen;
	struct hu_place_ask ask = {.team = "default", .template_id = "built", .memory_bytes = 512u << 20, .pids = 512};
	struct hu_template_row t = {.id = "built", .checksum = "sha256:1111", .node = "n2", .created_ms = 10};
	char placement[HU_PLACEMENT_ID_MAX];
	struct hu_volume v = {.id = "vol-1", .team = "default", .name = "data", .created_at_ms = 1}, got;
	int64_t gen;
	hu_err err;

	if (!f->admin) {
		assert_int_equal(hu_store_template_find(f->st, "built", &t, &err), -1);
		assert_int_equal(err.code, ENOSYS);
		return;
	}
	n1.cpu_millis = 0;
	snprintf(n1.templates, sizeof(n1.templates), "base");
	assert_int_equal(hu_store_node_register(f->st, &n1, 10000, &gen, &err), 0);
	/* n2 built it and has room for one; n3 is large and does not have it;
	 * n4 is draining */
	pg_exec(f, "INSERT INTO nodes (name, address, memory, cpu, pids, max_sandboxes, generation, lease_until,"
		   " registered_at, templates, draining) VALUES"
		   " ('n2', 'http://127.0.0.1:2', 536870912, 0, 100000, 0, 1, now() + interval '10 s', now(), 'base,built', false),"
		   " ('n3', 'http://127.0.0.1:3', 99999999999, 0, 100000, 0, 1, now() + interval '10 s', now(), 'base', false),"
		   " ('n4', 'http://127.0.0.1:4', 99999999999, 0, 100000, 0, 1, now() + interval '10 s', now(), 'base', true)");
	/* not recorded in the store: only the node that has it */
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
	assert_string_equal(chosen.name, "n2");
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
	assert_string_equal(chosen.name, "n2"); /* full: no reservation, its admission says why */
	assert_string_equal(placement, "");
	{
		struct hu_template_row none;
		assert_int_equal(hu_store_template_find(f->st, "built", &none, &err), -1);
		free(none.meta);
	}
	assert_int_equal(err.code, ENOENT);
	/* recorded: a node that can fetch it once n2 is full, the least loaded */
	t.meta = "{\"id\":\"built\"}";
	assert_int_equal(hu_store_template_record(f->st, &t, &err), 0);
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
	assert_string_equal(chosen.name, "n3");
	assert_int_equal(strlen(placement), 32);
	pg_exec(f, "DELETE FROM placements");
	/* with room on n2 again, n2 before the larger n3 */
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
	assert_string_equal(chosen.name, "n2");
	pg_exec(f, "DELETE FROM placements");
	/* the record and a source: n2, which has it */
	struct hu_template_row found;
	assert_int_equal(hu_store_template_find(f->st, "built", &found, &err), 0);
	assert_string_equal(found.checksum, "sha256:1111");
	assert_string_equal(found.meta, "{\"id\":\"built\"}");
	assert_string_equal(found.source.name, "n2");
	assert_string_equal(found.source.address, "http://127.0.0.1:2");
	free(found.meta);
	/* an older record does not replace it, a later build does */
	snprintf(t.checksum, sizeof(t.checksum), "sha256:0000");
	t.created_ms = 5;
	assert_int_equal(hu_store_template_record(f->st, &t, &err), 0);
	assert_int_equal(hu_store_template_find(f->st, "built", &found, &err), 0);
	assert_string_equal(found.checksum, "sha256:1111");
	free(found.meta);
	snprintf(t.checksum, sizeof(t.checksum), "sha256:2222");
	t.created_ms = 20;
	assert_int_equal(hu_store_template_record(f->st, &t, &err), 0);
	assert_int_equal(hu_store_template_find(f->st, "built", &found, &err), 0);
	assert_string_equal(found.checksum, "sha256:2222");
	free(found.meta);
	/* no live node has it: no source */
	pg_exec(f, "UPDATE nodes SET lease_until = now() - interval '1 s' WHERE name = 'n2'");
	assert_int_equal(hu_store_template_find(f->st, "built", &found, &err), 0);
	assert_string_equal(found.source.name, "");
	free(found.meta);
	/* a volume is this node's; a create of it goes there or nowhere */
	assert_int_equal(hu_store_volume_add(f->st, &v, &err), 0);
	assert_int_equal(hu_store_volume_by_id(f->st, "vol-1", &got, &err), 0);
	assert_string_equal(got.node, "n1");
	ask.template_id = "base";
	ask.node = "n1";
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), 0);
	assert_string_equal(chosen.name, "n1");
	pg_exec(f, "DELETE FROM placements");
	ask.node = "n4";
	assert_int_equal(hu_store_place(f->st, &ask, &chosen, placement, &err), -1);
	assert_int_equal(err.code, ENOENT);
	assert_non_null(strstr(err.msg, "node n4 takes no placements"));
}

#define TESTS(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TESTS(test_keys),
		TESTS(test_unknown_key),
		TESTS(test_legacy_key),
		TESTS(test_key_shape),
		TESTS(test_key_buffer_too_small),
		TESTS(test_sandbox_put_update_delete),
		TESTS(test_lifecycle_rows),
		TESTS(test_template_users),
		TESTS(test_schema_and_mode),
		TESTS(test_volumes),
		TESTS(test_snapshots),
		TESTS(test_kept_statements_hold_nothing),
		TESTS(test_reopen_and_newer_schema),
		TESTS(test_group_with_a_refused_row),
		TESTS(test_pg_idem_across_nodes),
		TESTS(test_pg_concurrent_migrations),
		TESTS(test_pg_reconnects),
		TESTS(test_pg_lost_in_a_group),
		TESTS(test_pg_unreachable),
		TESTS(test_nodes_need_a_shared_store),
		TESTS(test_pg_nodes_own_their_rows),
		TESTS(test_pg_lease_expiry),
		TESTS(test_pg_fencing),
		TESTS(test_pg_sandbox_owner),
		TESTS(test_pg_sandbox_others),
		TESTS(test_pg_sandbox_by_signature),
		TESTS(test_pg_placement),
		TESTS(test_pg_templates_and_volume_nodes),
	};
	int rc = cmocka_run_group_tests_name("store: sqlite", tests, NULL, NULL);

	pg_uri = getenv("HUTCH_TEST_PG");
	if (!pg_uri || !*pg_uri) {
		printf("store: postgresql: skipped, HUTCH_TEST_PG is not set (tests/pg.sh start makes a server)\n");
		return rc;
	}
	return rc | cmocka_run_group_tests_name("store: postgresql", tests, NULL, NULL);
}
