/*
 * The PostgreSQL schema and its migrations. migrations[i] brings version
 * i to i + 1; hutch_schema holds the version. Every node runs the
 * migrations at start, all of them in one transaction behind a
 * transaction-scoped advisory lock: nodes that start together wait for the
 * first, then find nothing left to do, and a node killed mid-upgrade
 * leaves the schema as it was (DDL is transactional in PostgreSQL).
 */
#include "daemon/store/pg_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "util/cleanup.h"

/* "hutch" in ASCII: the advisory lock that serialises migrations (advisory
 * locks are per database, so one key suffices) */
#define MIGRATE_LOCK "448345170792"

static const char *const migrations[] = {
	/* 0 -> 1: what the SQLite backend has at its version 3, in
	 * PostgreSQL's types: JSON values are jsonb, flags boolean */
	"CREATE TABLE teams ("
	"  id text PRIMARY KEY,"
	"  created_at bigint NOT NULL);"
	"CREATE TABLE api_keys ("
	"  key_hash text PRIMARY KEY," /* sha256 hex of the key */
	"  team text NOT NULL REFERENCES teams(id),"
	"  created_at bigint NOT NULL);"
	"CREATE TABLE sandboxes ("
	"  id text PRIMARY KEY,"
	"  team text NOT NULL,"
	"  template text NOT NULL,"
	"  state text NOT NULL CHECK (state IN ('creating', 'running', 'paused', 'killing')),"
	"  access_token text NOT NULL,"
	"  started_at bigint NOT NULL," /* unix ms */
	"  end_at bigint NOT NULL,"     /* unix ms */
	"  timeout integer NOT NULL,"   /* seconds */
	"  metadata jsonb NOT NULL,"
	"  env_vars jsonb NOT NULL,"
	"  auto_pause boolean NOT NULL,"
	"  auto_resume boolean NOT NULL,"
	"  allow_internet boolean," /* NULL = not given */
	"  cpu bigint NOT NULL,"    /* thousandths of a CPU */
	"  memory bigint NOT NULL," /* bytes */
	"  disk bigint NOT NULL,"   /* bytes */
	"  auto_pause_memory boolean NOT NULL DEFAULT true,"
	"  paused_at bigint NOT NULL DEFAULT 0,"
	"  released boolean NOT NULL DEFAULT false,"
	"  reclaim_after integer NOT NULL DEFAULT 0,"
	"  idem_key text,"
	"  mounts jsonb NOT NULL DEFAULT '[]',"
	"  internet boolean NOT NULL DEFAULT false,"
	"  network jsonb);"
	"CREATE INDEX sandboxes_team ON sandboxes(team);"
	/* unique per team while the sandbox exists, across every node */
	"CREATE UNIQUE INDEX sandboxes_idem ON sandboxes(team, idem_key) WHERE idem_key IS NOT NULL;"
	"CREATE TABLE lost_sandboxes ("
	"  id text PRIMARY KEY,"
	"  team text NOT NULL,"
	"  reason text NOT NULL,"
	"  at bigint NOT NULL);"
	"CREATE TABLE volumes ("
	"  id text PRIMARY KEY,"
	"  team text NOT NULL,"
	"  name text NOT NULL,"
	"  size bigint," /* cap in bytes; NULL = no cap */
	"  created_at bigint NOT NULL,"
	"  UNIQUE (team, name));",
	/* 1 -> 2: nodes. Leases are kept in the server's clock (now()), so
	 * the nodes' clocks need not agree; every sandbox has its owner node. */
	"CREATE TABLE nodes ("
	"  name text PRIMARY KEY,"
	"  address text NOT NULL,"
	"  labels text NOT NULL DEFAULT '',"
	"  memory bigint NOT NULL," /* the admission budgets, bytes */
	"  cpu bigint NOT NULL,"    /* thousandths of a CPU */
	"  pids bigint NOT NULL,"
	"  max_sandboxes integer NOT NULL,"
	"  generation bigint NOT NULL," /* bumped by every registration: fencing */
	"  lease_until timestamptz NOT NULL,"
	"  registered_at timestamptz NOT NULL);"
	"ALTER TABLE sandboxes ADD COLUMN owner text;"
	"CREATE INDEX sandboxes_owner ON sandboxes(owner);",
	/* 2 -> 3: snapshots of sandboxes' files (pg_snapshots.c), as SQLite's
	 * version 4; state 0 = being made, 1 = ready, 2 = a fork's */
	"CREATE TABLE snapshots ("
	"  id text PRIMARY KEY,"
	"  team text NOT NULL,"
	"  name text," /* NULL = unnamed */
	"  sandbox text NOT NULL,"
	"  template text NOT NULL,"
	"  state integer NOT NULL CHECK (state IN (0, 1, 2)),"
	"  created_at bigint NOT NULL,"
	"  cpu bigint NOT NULL,"
	"  memory bigint NOT NULL,"
	"  disk bigint NOT NULL,"
	"  UNIQUE (team, name));",
	/* 3 -> 4: each node's wall clock against the server's, as it last
	 * renewed (hutch doctor compares the nodes') */
	"ALTER TABLE nodes ADD COLUMN clock_skew_ms bigint NOT NULL DEFAULT 0;",
	/* 4 -> 5: placement (pg_place.c). A node publishes its templates with
	 * its budgets; a draining node takes no new placements; a reservation
	 * holds a placed create's share of its node until the create's row is
	 * written (or it expires: the placing node died). */
	"ALTER TABLE nodes ADD COLUMN templates text NOT NULL DEFAULT '';"
	"ALTER TABLE nodes ADD COLUMN draining boolean NOT NULL DEFAULT false;"
	"CREATE TABLE placements ("
	"  id text PRIMARY KEY,"
	"  node text NOT NULL,"
	"  memory bigint NOT NULL,"
	"  cpu bigint NOT NULL,"
	"  pids bigint NOT NULL,"
	"  until timestamptz NOT NULL);"
	"CREATE INDEX placements_node ON placements(node);",
	/* 5 -> 6: templates other nodes can fetch (pg_templates.c): the
	 * checksum of the transfer stream, computed at build time, and the
	 * description; a volume lives on the disk of the node that made it
	 * (NULL: made before nodes had volumes, on any) */
	"CREATE TABLE templates ("
	"  id text PRIMARY KEY,"
	"  checksum text NOT NULL,"
	"  meta text NOT NULL,"
	"  node text NOT NULL,"
	"  created_at bigint NOT NULL);"
	"ALTER TABLE volumes ADD COLUMN node text;",
	/* 6 -> 7: a reservation carries its create's Idempotency-Key, so that
	 * a create with the same key placed while the first is on its way to
	 * its node goes to that node too (one sandbox, not a unique-index
	 * refusal on another node) */
	"ALTER TABLE placements ADD COLUMN team text;"
	"ALTER TABLE placements ADD COLUMN idem_key text;"
	"CREATE INDEX placements_idem ON placements(team, idem_key);",
};

int hu_pg_schema_version(void)
{
	return (int)HU_ARRAY_LEN(migrations);
}

static int migrate_locked(struct pg_store *st, hu_err *err)
{
	PGresult *res;
	int version;

	if (hu_pg_simple(st, "lock the schema", "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK ")", err) < 0 ||
	    hu_pg_simple(st, "create hutch_schema",
			 "CREATE TABLE IF NOT EXISTS hutch_schema (one boolean PRIMARY KEY DEFAULT true CHECK (one),"
			 " version integer NOT NULL);"
			 "INSERT INTO hutch_schema (version) VALUES (0) ON CONFLICT DO NOTHING",
			 err) < 0)
		return -1;
	res = PQexec(st->conn, "SELECT version FROM hutch_schema");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		hu_pg_fail(st, res, "read schema version", err);
		PQclear(res);
		return -1;
	}
	version = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (version < 0 || version > hu_pg_schema_version())
		return hu_err_set(err, -EPROTO,
				  "store: schema version %d is newer than this hutch (%d): upgrade hutch", version,
				  hu_pg_schema_version());
	for (int v = version; v < hu_pg_schema_version(); v++) {
		char bump[64];
		snprintf(bump, sizeof(bump), "UPDATE hutch_schema SET version = %d", v + 1);
		if (hu_pg_simple(st, "migrate", migrations[v], err) < 0 ||
		    hu_pg_simple(st, "migrate", bump, err) < 0) {
			hu_err_prefix(err, "migrate schema %d -> %d", v, v + 1);
			return -1;
		}
	}
	return 0;
}

int hu_pg_migrate(struct pg_store *st, hu_err *err)
{
	hu_err ignored;

	if (hu_pg_simple(st, "migrate", "BEGIN", err) < 0)
		return -1;
	if (migrate_locked(st, err) < 0 || hu_pg_simple(st, "migrate", "COMMIT", err) < 0) {
		if (st->conn)
			hu_pg_simple(st, "migrate", "ROLLBACK", &ignored);
		return -1;
	}
	return 0;
}
