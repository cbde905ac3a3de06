/* The PostgreSQL backend of the store (pg*.c): one database that several
 * hutch nodes share. */
#ifndef HUTCH_DAEMON_STORE_PG_H
#define HUTCH_DAEMON_STORE_PG_H

#include "daemon/store/backend.h"

/* 1 when location names a PostgreSQL database ("postgresql://..." or
 * "postgres://..."), 0 otherwise. */
int hu_store_pg_location(const char *location);
/* Connect to the database of a libpq connection URI and migrate its
 * schema. ENOTCONN when the server cannot be reached now. */
int hu_store_pg_open(const char *uri, struct hu_store **out, hu_err *err);
/* The same without migrating: the schema stays as it is (hutch doctor). */
int hu_store_pg_open_to_inspect(const char *uri, struct hu_store **out, hu_err *err);

#endif
