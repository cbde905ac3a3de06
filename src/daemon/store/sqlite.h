/* The SQLite backend of the store (sqlite.c): the embedded default. */
#ifndef HUTCH_DAEMON_STORE_SQLITE_H
#define HUTCH_DAEMON_STORE_SQLITE_H

#include "daemon/store/backend.h"

/* <data_dir>/hutch.db, made 0600 and migrated on first use. */
int hu_store_sqlite_open(const char *data_dir, struct hu_store **out, hu_err *err);

#endif
