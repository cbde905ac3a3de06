/*
 * hutch doctor's reading of a PostgreSQL store: the server's version, the
 * schema version it holds against the one this hutch writes, one round
 * trip, and how far this host's wall clock is from the server's. Leases
 * live in the server's clock, but deadlines (end_at) are written in the
 * writing node's clock, so nodes whose clocks disagree move each other's
 * deadlines by the difference: the doctor says how large it is.
 */
#include "daemon/store/pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The schema version, or -1 when no hutch has made the schema yet. */
static int schema_version(struct pg_store *st, int *version, hu_err *err)
{
	PGresult *res;

	if (hu_pg_exec(st, "read the schema version",
		       "SELECT CASE WHEN to_regclass('hutch_schema') IS NULL THEN -1"
		       " ELSE (SELECT version FROM hutch_schema) END",
		       0, NULL, &res, err) < 0)
		return -1;
	*version = PQntuples(res) == 1 && !PQgetisnull(res, 0, 0) ? atoi(PQgetvalue(res, 0, 0)) : -1;
	PQclear(res);
	return 0;
}

int hu_pg_health(struct hu_store *base, struct hu_store_health *h, hu_err *err)
{
	struct pg_store *st = hu_pg(base);
	PGresult *res;

	if (hu_pg_connect(st, err) < 0)
		return -1;
	int64_t t0 = hu_wall_ms(), u0 = mono_us();
	if (hu_pg_exec(st, "read the server's clock",
		       "SELECT current_setting('server_version'),"
		       " (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
		       0, NULL, &res, err) < 0)
		return -1;
	int64_t u1 = mono_us(), t1 = hu_wall_ms();
	snprintf(h->server, sizeof(h->server), "%s", PQgetvalue(res, 0, 0));
	/* the server read its clock somewhere inside the round trip: the
	 * middle is the best guess, off by at most half the round trip */
	h->skew_ms = (t0 + t1) / 2 - strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	h->round_trip_us = u1 - u0;
	PQclear(res);
	h->schema_hutch = hu_pg_schema_version();
	return schema_version(st, &h->schema, err);
}
