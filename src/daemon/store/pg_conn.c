/*
 * The PostgreSQL backend's connection (pg_internal.h). One connection per
 * daemon, used from the event loop only, so every call is synchronous and
 * bounded: connections time out, statements and lock waits have a server
 * side limit, and a database that is down is not asked again for a second.
 * A lost connection is the ENOTCONN of store.h; the next call reconnects.
 */
#include "daemon/store/pg_internal.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/common/log.h"
#include "util/cleanup.h"
#include "util/clock.h"

#define RETRY_AFTER_MS 1000

struct pg_store *hu_pg(struct hu_store *st)
{
	return HU_CONTAINER_OF(st, struct pg_store, base);
}

/* Server notices ("relation already exists, skipping") go to the debug
 * log instead of libpq's default, stderr. */
static void notice(void *arg, const char *msg)
{
	hu_log(HU_LOG_DEBUG, NULL, 0, "store: postgresql: %s", msg);
}

/* Settings the location may override: it comes last. The timeouts keep a
 * call on an unreachable or stuck server from holding the event loop. */
static PGconn *connect_uri(const char *uri)
{
	static const char *const keys[] = {
		"application_name", "client_encoding", "connect_timeout", "keepalives", "keepalives_idle",
		"keepalives_interval", "keepalives_count", "tcp_user_timeout", "options", "dbname", NULL,
	};
	const char *const values[] = {
		"hutch", "UTF8", "3", "1", "5", "2", "3", "10000",
		"-c statement_timeout=10000 -c lock_timeout=5000 -c idle_in_transaction_session_timeout=30000",
		uri, NULL,
	};
	return PQconnectdbParams(keys, values, 1);
}

/* Read whatever the server sent while we were idle: a server shutting
 * down says so and closes, which marks the connection bad now rather than
 * failing the next statement. */
static void drain(PGconn *conn)
{
	struct pollfd p = {.fd = PQsocket(conn), .events = POLLIN};
	PGnotify *n;

	/* a read that returns data does not look for the end of the stream:
	 * read again while there is more (the goodbye, then the close) */
	for (int i = 0; i < 4 && p.fd >= 0 && poll(&p, 1, 0) > 0; i++) {
		if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK)
			return;
		while ((n = PQnotifies(conn)))
			PQfreemem(n);
	}
}

static void drop(struct pg_store *st)
{
	PQfinish(st->conn);
	st->conn = NULL;
	if (st->in_tx)
		st->tx_lost = 1;
}

int hu_pg_connect(struct pg_store *st, hu_err *err)
{
	int64_t now = hu_mono_ms();

	if (st->conn && PQstatus(st->conn) == CONNECTION_OK && !st->in_tx)
		drain(st->conn);
	if (st->conn && PQstatus(st->conn) != CONNECTION_OK)
		drop(st);
	if (st->tx_lost)
		return hu_err_set(err, -ENOTCONN, "store: the connection to postgresql was lost in a transaction");
	if (st->conn)
		return 0;
	if (st->last_attempt_ms && now - st->last_attempt_ms < RETRY_AFTER_MS)
		return hu_err_set(err, -ENOTCONN, "store: postgresql is unreachable (retrying)");
	st->conn = connect_uri(st->uri);
	if (!st->conn)
		return hu_err_set(err, ENOMEM, "store: postgresql");
	if (PQstatus(st->conn) != CONNECTION_OK) {
		char msg[256];
		snprintf(msg, sizeof(msg), "%s", PQerrorMessage(st->conn));
		msg[strcspn(msg, "\n")] = '\0';
		PQfinish(st->conn);
		st->conn = NULL;
		st->last_attempt_ms = now ? now : 1;
		return hu_err_set(err, -ENOTCONN, "store: connect to postgresql: %s", msg);
	}
	st->last_attempt_ms = 0;
	PQsetNoticeProcessor(st->conn, notice, NULL);
	return 0;
}

/* SQLSTATEs a caller may retry later: connection exceptions (08), the
 * server going down or starting (57P01..03), resources (53), conflicts
 * between nodes (40001, 40P01, 55P03) and our own time limits (57014). */
static int transient(const char *state)
{
	if (!state)
		return 0;
	return !strncmp(state, "08", 2) || !strncmp(state, "53", 2) || !strncmp(state, "57P0", 4) ||
	       !strcmp(state, "40001") || !strcmp(state, "40P01") || !strcmp(state, "55P03") ||
	       !strcmp(state, "57014");
}

int hu_pg_fail(struct pg_store *st, PGresult *res, const char *what, hu_err *err)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	int code;

	if (!msg)
		msg = st->conn ? PQerrorMessage(st->conn) : "no connection";
	if (!st->conn || PQstatus(st->conn) != CONNECTION_OK || transient(state))
		code = ENOTCONN;
	else if (state && !strcmp(state, "23505"))
		code = EEXIST;
	else if (state && !strcmp(state, "53100"))
		code = ENOSPC;
	else
		code = EIO;
	hu_err_set(err, -code, "store: %s: %.*s", what, (int)strcspn(msg, "\n"), msg);
	if (st->conn && PQstatus(st->conn) != CONNECTION_OK)
		drop(st);
	return -1;
}

static int ok(PGresult *res)
{
	ExecStatusType s = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

int hu_pg_simple(struct pg_store *st, const char *what, const char *sql, hu_err *err)
{
	PGresult *res;

	if (hu_pg_connect(st, err) < 0)
		return -1;
	res = PQexec(st->conn, sql);
	if (!ok(res)) {
		hu_pg_fail(st, res, what, err);
		PQclear(res);
		return -1;
	}
	PQclear(res);
	return 0;
}

int hu_pg_exec(struct pg_store *st, const char *what, const char *sql, int n, const char *const *params,
	       PGresult **out, hu_err *err)
{
	PGresult *res;

	if (out)
		*out = NULL;
	if (hu_pg_connect(st, err) < 0)
		return -1;
	/* the savepoint of the previous statement goes in the same round trip */
	if (st->in_tx && hu_pg_simple(st, what, st->savepoint ? "RELEASE SAVEPOINT hu_stmt; SAVEPOINT hu_stmt"
							     : "SAVEPOINT hu_stmt", err) < 0)
		return -1;
	if (st->in_tx)
		st->savepoint = 1;
	res = PQexecParams(st->conn, sql, n, NULL, params, NULL, NULL, 0);
	if (!ok(res)) {
		hu_pg_fail(st, res, what, err);
		PQclear(res);
		if (st->in_tx && st->conn) {
			hu_err ignored;
			/* the savepoint goes with the rollback: the next statement makes its own */
			if (hu_pg_simple(st, what, "ROLLBACK TO SAVEPOINT hu_stmt; RELEASE SAVEPOINT hu_stmt",
					 &ignored) == 0)
				st->savepoint = 0;
		}
		return -1;
	}
	if (out)
		*out = res;
	else
		PQclear(res);
	return 0;
}
