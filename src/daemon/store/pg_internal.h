/*
 * What the PostgreSQL backend's files share (pg_conn.c, pg_schema.c, pg.c,
 * pg_volumes.c): the connection, and one call that runs a statement with
 * bound parameters and maps every failure to the store's error codes.
 */
#ifndef HUTCH_DAEMON_STORE_PG_INTERNAL_H
#define HUTCH_DAEMON_STORE_PG_INTERNAL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/store/backend.h"
#include "daemon/store/pg.h"
#include "daemon/store/pq_lib.h"

struct pg_store {
	struct hu_store base;
	PGconn *conn;           /* NULL while disconnected: the next call reconnects */
	char *uri;
	int64_t last_attempt_ms; /* the last failed connection attempt (monotonic) */
	int in_tx;              /* between hu_store_begin and hu_store_commit */
	int tx_lost;            /* the connection dropped inside the transaction */
	int savepoint;          /* a statement savepoint exists in this transaction */
	/* registered as a node (pg_nodes.c): "" until then */
	char node[HU_NODE_NAME_MAX];
	char generation[24];     /* as a parameter */
	int64_t lease_until_ms;  /* monotonic: the lease is live before this */
};

struct pg_store *hu_pg(struct hu_store *st);

/* Connect now when disconnected (or the server closed the connection
 * since the last call). ENOTCONN when the server cannot be reached; a
 * failed attempt is not retried for a second, so that a daemon whose
 * database is down answers at once instead of waiting on every call. */
int hu_pg_connect(struct pg_store *st, hu_err *err);

/* Run sql with n text parameters (NULL = SQL NULL). On success *res (when
 * res is not NULL) holds the result, for the caller to PQclear. Inside a
 * transaction each statement has its own savepoint, so that one failed
 * statement (an idempotency key taken) leaves the others of the group, as
 * in SQLite. Errors: EEXIST (a unique key), ENOSPC (disk full), ENOTCONN
 * (connection lost, server starting or shutting down, too many clients,
 * serialization failure: try again later), EIO otherwise. */
int hu_pg_exec(struct pg_store *st, const char *what, const char *sql, int n, const char *const *params,
	       PGresult **res, hu_err *err);

/* A statement without parameters and results, outside the savepoint logic
 * (BEGIN, COMMIT, the migrations). */
int hu_pg_simple(struct pg_store *st, const char *what, const char *sql, hu_err *err);

/* The store's error for a failed result (or a NULL one) of conn. */
int hu_pg_fail(struct pg_store *st, PGresult *res, const char *what, hu_err *err);

/* pg_schema.c: bring the schema to this hutch's version under an advisory
 * lock, so that nodes starting together migrate once. EPROTO when the
 * database's schema is newer than this hutch. */
int hu_pg_migrate(struct pg_store *st, hu_err *err);
/* The schema version this hutch writes. */
int hu_pg_schema_version(void);

/* pg_nodes.c: the node calls of struct hu_store_ops */
int hu_pg_node_register(struct hu_store *st, const struct hu_node *n, int64_t ttl_ms, int64_t *generation,
			hu_err *err);
int hu_pg_node_renew(struct hu_store *st, const struct hu_node *n, int64_t ttl_ms, hu_err *err);
/* pg_place.c: placement */
int hu_pg_place(struct hu_store *st, const struct hu_place_ask *ask, struct hu_node *chosen, char *placement,
		hu_err *err);
int hu_pg_placement_done(struct hu_store *st, const char *placement, hu_err *err);
int hu_pg_node_set_draining(struct hu_store *st, const char *name, bool draining, hu_err *err);
int hu_pg_node_remove(struct hu_store *st, const char *name, hu_err *err);
int hu_pg_node_each(struct hu_store *st, void (*fn)(const struct hu_node *n, void *arg), void *arg, hu_err *err);
int hu_pg_sandbox_owner(struct hu_store *st, const char *id, char *team, size_t n, struct hu_node *owner,
			hu_err *err);
/* 0 while this process holds a live node lease (or is no node), else
 * ENOTCONN: a node past its lease writes no sandbox. */
int hu_pg_node_live(struct pg_store *st, hu_err *err);

/* pg_health.c: hutch doctor's reading of the server, its schema and clock */
int hu_pg_health(struct hu_store *st, struct hu_store_health *h, hu_err *err);

/* pg_templates.c */
int hu_pg_template_record(struct hu_store *st, const struct hu_template_row *t, hu_err *err);
int hu_pg_template_find(struct hu_store *st, const char *id, struct hu_template_row *out, hu_err *err);

/* pg_volumes.c: the volume and template calls of struct hu_store_ops */
int hu_pg_template_users(struct hu_store *st, const char *template_id, int *count, hu_err *err);
int hu_pg_volume_add(struct hu_store *st, const struct hu_volume *v, hu_err *err);
int hu_pg_volume_find(struct hu_store *st, const char *team, const char *key, struct hu_volume *out, hu_err *err);
int hu_pg_volume_each(struct hu_store *st, const char *team, void (*fn)(const struct hu_volume *v, void *arg),
		      void *arg, hu_err *err);
int hu_pg_volume_delete(struct hu_store *st, const char *id, hu_err *err);
int hu_pg_volume_by_id(struct hu_store *st, const char *id, struct hu_volume *out, hu_err *err);

/* pg_snapshots.c: the snapshot calls of struct hu_store_ops */
int hu_pg_snapshot_put(struct hu_store *st, const struct hu_snapshot_row *row, hu_err *err);
int hu_pg_snapshot_find(struct hu_store *st, const char *team, const char *key, struct hu_snapshot_row *out,
			hu_err *err);
int hu_pg_snapshot_each(struct hu_store *st, const char *team,
			void (*fn)(const struct hu_snapshot_row *row, void *arg), void *arg, hu_err *err);
int hu_pg_snapshot_delete(struct hu_store *st, const char *id, hu_err *err);

#endif
