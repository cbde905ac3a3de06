/* The SQLite store: keys, teams, sandbox rows, schema version, file mode. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/store/store.h"
#include "util/fileutil.h"

struct fixture {
	char dir[64];
	char db[128];
	struct hu_store *st;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	hu_err err;

	snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-store-XXXXXX");
	if (!f || !mkdtemp(f->dir))
		return -1;
	snprintf(f->db, sizeof(f->db), "%s/hutch.db", f->dir);
	if (hu_store_open(f->dir, &f->st, &err) < 0) {
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
	hu_rm_rf(f->dir, &err);
	free(f);
	return 0;
}

/* Query one integer from the database file directly. */
static long long sql_int(const char *db, const char *sql, const char *arg)
{
	sqlite3 *h;
	sqlite3_stmt *s;
	long long v = -1;

	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &s, NULL), SQLITE_OK);
	if (arg)
		sqlite3_bind_text(s, 1, arg, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(h);
	return v;
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
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM api_keys WHERE key_hash = ?1", key), 0);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM api_keys WHERE length(key_hash) = 64", NULL), 2);
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
	sqlite3 *h;
	hu_err err;

	assert_int_equal(sqlite3_open(f->db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "INSERT OR IGNORE INTO teams (id, created_at) VALUES ('old', 0)", NULL, NULL, NULL), SQLITE_OK);
	{
		char sql[256];

		snprintf(sql, sizeof(sql), "INSERT INTO api_keys (key_hash, team, created_at) VALUES ('%s', 'old', 0)", hash);
		assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
	}
	sqlite3_close(h);
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
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM sandboxes WHERE id = ?1", "iabc123"), 1);
	assert_int_equal(sql_int(f->db, "SELECT allow_internet IS NULL FROM sandboxes WHERE id = ?1", "iabc123"), 1);

	/* Update in place: pause and a new deadline. */
	s->state = HU_SBX_PAUSED;
	s->end_at_ms = 1700000600000;
	s->allow_internet = 0;
	assert_int_equal(hu_store_sandbox_put(f->st, s, &err), 0);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM sandboxes", NULL), 1);
	assert_int_equal(sql_int(f->db, "SELECT end_at FROM sandboxes WHERE id = ?1", "iabc123"), 1700000600000);
	assert_int_equal(sql_int(f->db, "SELECT state = 'paused' FROM sandboxes WHERE id = ?1", "iabc123"), 1);
	assert_int_equal(sql_int(f->db, "SELECT json_extract(env_vars, '$.FOO') LIKE 'bar%' FROM sandboxes", NULL), 1);

	assert_int_equal(hu_store_sandbox_delete(f->st, "iabc123", &err), 0);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM sandboxes", NULL), 0);
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
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM sandboxes WHERE id = ?1", "iabc123"), 1);
	snprintf(b->team, sizeof(b->team), "team-b");
	assert_int_equal(hu_store_sandbox_put(f->st, b, &err), 0);
	/* the same key in another team is another sandbox's */
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM sandboxes WHERE idem_key = ?1", "session-1"), 2);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM sandboxes WHERE idem_key = ?1", "nope"), 0);

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
	assert_int_equal(sql_int(f->db, "SELECT state = 'killing' FROM sandboxes WHERE id = ?1", "iabc123"), 1);

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

	assert_int_equal(sql_int(f->db, "PRAGMA user_version", NULL), 3);
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
	sqlite3 *h;
	hu_err err;

	assert_int_equal(hu_store_key_create(f->st, "default", key, sizeof(key), &err), 0);
	hu_store_close(f->st);
	f->st = NULL;
	assert_int_equal(hu_store_open(f->dir, &st2, &err), 0);
	assert_int_equal(hu_store_key_team(st2, key, team, sizeof(team), &err), 0);
	hu_store_close(st2);

	assert_int_equal(sqlite3_open(f->db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	assert_int_equal(hu_store_open(f->dir, &st2, &err), -1);
	assert_null(st2);
	assert_non_null(strstr(err.msg, "newer"));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_shape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_buffer_too_small, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sandbox_put_update_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lifecycle_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_template_users, setup, teardown),
		cmocka_unit_test_setup_teardown(test_schema_and_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_volumes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_and_newer_schema, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
