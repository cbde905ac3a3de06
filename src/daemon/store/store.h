/*
 * The store: SQLite in WAL mode in the data dir, the daemon's source of
 * truth. It holds teams and API keys (hashed), and every sandbox with its
 * metadata, env vars, lifecycle fields and deadline, so that a restarted
 * daemon can adopt what is running (adopt.c).
 */
#ifndef HUTCH_DAEMON_STORE_H
#define HUTCH_DAEMON_STORE_H

#include <jansson.h>
#include <stdint.h>

#include "daemon/sandboxes/registry.h"
#include "util/err.h"

struct hu_store;
struct hu_sbx;

int hu_store_open(const char *data_dir, struct hu_store **out, hu_err *err);
void hu_store_close(struct hu_store *st);
/* The database handle, for the store's other files (store_volumes.c). */
struct sqlite3;
struct sqlite3 *hu_store_sqlite(struct hu_store *st);

/* API keys: the key itself is shown once and stored as sha256 hex. */
/* Create a key for `team` (the team is created if needed); key_out gets the
 * plaintext key ("hutch_" + 48 hex chars). */
int hu_store_key_create(struct hu_store *st, const char *team, char *key_out, size_t n, hu_err *err);
/* The team of a key, or -1 with ENOENT when the key is unknown. */
int hu_store_key_team(struct hu_store *st, const char *key, char *team_out, size_t n, hu_err *err);
/* Number of keys (the first start creates one when there is none). */
int hu_store_key_count(struct hu_store *st, int *count, hu_err *err);

/* Sandboxes: insert on create, update on any change, delete on kill. */
int hu_store_sandbox_put(struct hu_store *st, const struct hu_sbx *s, hu_err *err);
int hu_store_sandbox_delete(struct hu_store *st, const char *id, hu_err *err);
/* Call fn with every stored sandbox as a new hu_sbx that fn owns (no
 * runtime handle, no timers): a restarted daemon adopts them. */
int hu_store_sandbox_load(struct hu_store *st, void (*fn)(struct hu_sbx *s, void *arg), void *arg, hu_err *err);
/* Only the state (KILLING is written before the runtime destroys). */
int hu_store_sandbox_set_state(struct hu_store *st, const char *id, enum hu_sbx_state state, hu_err *err);

/* How many stored sandboxes (any state) are built on template_id
 * (store_templates.c). */
int hu_store_template_users(struct hu_store *st, const char *template_id, int *count, hu_err *err);

/* Sandboxes found dead at start (their init died while no daemon ran):
 * remembered for a week so that the API can say what became of them. */
int hu_store_lost_add(struct hu_store *st, const char *id, const char *team, const char *reason, hu_err *err);
/* 1 and the reason when id (of team) was lost, else 0. */
int hu_store_lost_reason(struct hu_store *st, const char *id, const char *team, char *reason, size_t n);
int hu_store_lost_purge(struct hu_store *st, int64_t before_ms, hu_err *err);

/* Group writes into one transaction (the lifecycle's periodic save). */
int hu_store_begin(struct hu_store *st, hu_err *err);
int hu_store_commit(struct hu_store *st, hu_err *err);

#endif
