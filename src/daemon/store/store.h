/*
 * The store: the daemon's source of truth, behind one interface. It holds
 * teams and API keys (hashed), every sandbox with its metadata, env vars,
 * lifecycle fields and deadline (so that a restarted daemon can adopt what
 * is running), idempotency keys, sandboxes found lost at start, and named
 * volumes.
 *
 * Backends (backend.h): SQLite in WAL mode in the data dir, the embedded
 * default (sqlite.c), and PostgreSQL (pg.c), a database that several nodes
 * share. The interface is written for a backend on the network, whose
 * calls are slower and can fail for a while:
 *  - every call may fail; a caller changes nothing in memory until the
 *    store has accepted the change (sandboxes/ keeps to this);
 *  - a failure the caller may retry later (the backend is unreachable or
 *    overloaded) carries ENOTCONN, which the API answers with 503 and
 *    Retry-After; EEXIST, ENOENT and ENOSPC mean what they say; anything
 *    else (EIO) is the backend's fault;
 *  - writes that belong together are grouped (hu_store_begin/commit), so a
 *    remote backend pays one round trip per group, not per row.
 * The store knows rows (rows.h), not live sandboxes: sandboxes/sbx_store.c
 * converts.
 */
#ifndef HUTCH_DAEMON_STORE_STORE_H
#define HUTCH_DAEMON_STORE_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/store/rows.h"
#include "util/err.h"

struct hu_store;

/* Open the store at `location`: a PostgreSQL connection URI
 * ("postgresql://..." or "postgres://...", pg.h), or else a data dir whose
 * hutch.db (SQLite, made on first use) is the store. */
int hu_store_open(const char *location, struct hu_store **out, hu_err *err);
void hu_store_close(struct hu_store *st);
/* "sqlite" or "postgresql", for logs and doctor. */
const char *hu_store_backend_name(const struct hu_store *st);
/* Open the store at `location` to look at it (hutch doctor): as
 * hu_store_open, but a PostgreSQL schema is left at the version it has
 * (hu_store_health reports it) instead of being migrated. */
int hu_store_open_to_inspect(const char *location, struct hu_store **out, hu_err *err);

/* ---- health (hutch doctor) ---------------------------------------------------- */
int hu_store_health(struct hu_store *st, struct hu_store_health *h, hu_err *err);

/* ---- API keys: shown once, stored as sha256 hex ---------------------------- */
/* Create a key for `team` (the team is created if needed); key_out gets the
 * plaintext key ("e2b_" + 40 lowercase hex chars, the shape E2B's SDKs check). */
int hu_store_key_create(struct hu_store *st, const char *team, char *key_out, size_t n, hu_err *err);
/* Whether key has a shape this store ever issued: "e2b_" + lowercase hex, or
 * "hutch_" + lowercase hex (keys issued before the e2b_ shape). */
bool hu_store_key_well_formed(const char *key);
/* The team of a key, or -1 with ENOENT when the key is unknown or malformed. */
int hu_store_key_team(struct hu_store *st, const char *key, char *team_out, size_t n, hu_err *err);
/* Number of keys (the first start creates one when there is none). */
int hu_store_key_count(struct hu_store *st, int *count, hu_err *err);

/* ---- sandboxes ---------------------------------------------------------------- */
/* Insert or update (any change). EEXIST when another sandbox of the team
 * holds the same idempotency key. */
int hu_store_sandbox_put(struct hu_store *st, const struct hu_sandbox_row *row, hu_err *err);
int hu_store_sandbox_delete(struct hu_store *st, const char *id, hu_err *err);
/* Only the state (KILLING is written before the runtime destroys). */
int hu_store_sandbox_set_state(struct hu_store *st, const char *id, enum hu_sbx_state state, hu_err *err);
/* Call fn with every stored sandbox; fn may take the row's JSON values
 * (setting them NULL), the store clears the rest after fn returns. */
int hu_store_sandbox_load(struct hu_store *st, void (*fn)(struct hu_sandbox_row *row, void *arg), void *arg,
			  hu_err *err);
/* How many stored sandboxes (any state) are built on template_id. */
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

/* ---- named volumes (sandboxes/volumes.h has their files) ------------------------ */
/* EEXIST when the team already has a volume of that name. */
int hu_store_volume_add(struct hu_store *st, const struct hu_volume *v, hu_err *err);
/* The team's volume whose id or name is `key`; ENOENT otherwise (another
 * team's volume is not found either). */
int hu_store_volume_find(struct hu_store *st, const char *team, const char *key, struct hu_volume *out, hu_err *err);
/* Every volume of the team, oldest first. */
int hu_store_volume_each(struct hu_store *st, const char *team, void (*fn)(const struct hu_volume *v, void *arg),
			 void *arg, hu_err *err);
int hu_store_volume_delete(struct hu_store *st, const char *id, hu_err *err);
/* Any team's volume by id (start-up housekeeping); ENOENT when none. */
int hu_store_volume_by_id(struct hu_store *st, const char *id, struct hu_volume *out, hu_err *err);

/* ---- nodes (a store that several hutch nodes share: PostgreSQL) ------------------ */
/* Register this process as node n with a lease of ttl_ms, bumping the
 * node's generation (a previous holder of the name is fenced out). From
 * then on the store writes sandbox rows as this node's, only while its
 * lease is live (ENOTCONN otherwise: a node whose lease expired admits no
 * creates), and loads only this node's rows. ENOSYS: the backend has no
 * nodes (SQLite: one host). */
int hu_store_node_register(struct hu_store *st, const struct hu_node *n, int64_t ttl_ms, int64_t *generation,
			   hu_err *err);
/* Extend the lease by ttl_ms from now, and publish n's budgets and
 * templates again (they change: templates are built, memory is added).
 * ESTALE when the node was registered again (by another process: this one
 * is fenced out for good). */
int hu_store_node_renew(struct hu_store *st, const struct hu_node *n, int64_t ttl_ms, hu_err *err);
/* The node that owns sandbox id, when it is another node than this one:
 * its name, address and whether its lease is live, and the sandbox's team.
 * ENOENT when no other node owns it (or there is no such sandbox). */
int hu_store_sandbox_owner(struct hu_store *st, const char *id, char *team, size_t n, struct hu_node *owner,
			   hu_err *err);
/* Call fn with every running or paused sandbox row of team that another
 * node owns (the list across nodes: each owner keeps its rows' state,
 * deadline and metadata current). fn may take the row's JSON values
 * (setting them NULL), the store clears the rest. ENOSYS: the backend has
 * no nodes, or this process registered none. */
int hu_store_sandbox_others(struct hu_store *st, const char *team, void (*fn)(struct hu_sandbox_row *row, void *arg),
			    void *arg, hu_err *err);
/* A signed URL's sandbox on another node (envd/signed_url.h): the id
 * (cap n) of the running or paused sandbox that another node owns whose
 * access token makes sha256(prefix + token + suffix) equal digest. The
 * server hashes the tokens; none leaves it. ENOENT: none; ENOSYS: as for
 * hu_store_sandbox_others. */
int hu_store_sandbox_by_signature(struct hu_store *st, const char *prefix, const char *suffix, const uint8_t *digest,
				  size_t digest_len, char *id, size_t n, hu_err *err);
/* Placement, in one transaction (serialised between nodes): the node a
 * create goes to. The owner of the team's sandbox of ask->idem_key, or the
 * node of a live reservation made for a create with that key, when there
 * is one (placement "" then: nothing is reserved; chosen->alive says
 * whether its lease is live, every other choice is). Otherwise the least
 * loaded node (committed memory over its budget) whose lease is live, that
 * is not draining, is ask->node when that is set (a volume's node), has
 * ask->template_id (or, when none of those has room, can fetch it: the
 * store records it and a live node has it) and room for ask's memory, CPU
 * (when the node has a CPU budget), pids and sandbox count; what it
 * commits counts its sandbox rows (a paused one whose memory was released
 * commits nothing) and the reservations of creates placed there and still
 * on their way. A reservation is made for ask (its id in placement, cap
 * HU_PLACEMENT_ID_MAX), carries its key, and lasts until
 * hu_store_placement_done or 30 s.
 * When no node has room: the least loaded live, not draining node with the
 * template, placement "" (nothing reserved: its admission says why it
 * cannot). ENOENT: no such node (the placing node itself fenced out or past
 * its lease counts as none). ENOSYS: the backend has no nodes. */
int hu_store_place(struct hu_store *st, const struct hu_place_ask *ask, struct hu_node *chosen, char *placement,
		   hu_err *err);
/* The create of a reservation reached its node (its row is written, or it
 * failed): the reservation goes. */
int hu_store_placement_done(struct hu_store *st, const char *placement, hu_err *err);
/* Every registered node, by name. */
int hu_store_node_each(struct hu_store *st, void (*fn)(const struct hu_node *n, void *arg), void *arg, hu_err *err);
/* An operator's drain: a draining node takes no new placements (its own
 * sandboxes run on and are answered as before); undrained, it takes them
 * again. Kept across the node's restarts. ENOENT: no such node. */
int hu_store_node_set_draining(struct hu_store *st, const char *name, bool draining, hu_err *err);
/* Remove a node's row: only once its lease has expired and it owns no
 * sandbox (EBUSY otherwise, saying which). ENOENT: no such node. */
int hu_store_node_remove(struct hu_store *st, const char *name, hu_err *err);

/* ---- templates of a shared store (cluster/template_fetch.h) ------------------------ */
/* Record a template built on this node (its checksum and description), so
 * that other nodes can fetch it. A record of the same id made earlier is
 * replaced, a later one is kept. ENOSYS: the backend has no nodes. */
int hu_store_template_record(struct hu_store *st, const struct hu_template_row *t, hu_err *err);
/* The record of template id, and in out->source a live node other than
 * this one that has it (the builder first), name "" when none. ENOENT: no
 * record. ENOSYS: the backend has no nodes. Free out->meta. */
int hu_store_template_find(struct hu_store *st, const char *id, struct hu_template_row *out, hu_err *err);

/* ---- snapshots (sandboxes/snapshots.h has their files) ---------------------------- */
/* Insert or update by id; EEXIST when the team has another snapshot of
 * that name. */
int hu_store_snapshot_put(struct hu_store *st, const struct hu_snapshot_row *row, hu_err *err);
/* The team's snapshot whose id or name is `key` (any state); ENOENT
 * otherwise. */
int hu_store_snapshot_find(struct hu_store *st, const char *team, const char *key, struct hu_snapshot_row *out,
			   hu_err *err);
/* Every snapshot of the team (NULL: of every team), oldest first. */
int hu_store_snapshot_each(struct hu_store *st, const char *team,
			   void (*fn)(const struct hu_snapshot_row *row, void *arg), void *arg, hu_err *err);
int hu_store_snapshot_delete(struct hu_store *st, const char *id, hu_err *err);

#endif
