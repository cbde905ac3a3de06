/*
 * What a store backend implements (store.h is what callers see). store.c
 * does what every backend shares (key generation and hashing) and calls the
 * backend's table; a backend embeds struct hu_store first in its own state.
 * Adding a backend: a table, an open function (like sqlite.h's), and a line
 * in hu_store_open that picks it from the location it is given.
 */
#ifndef HUTCH_DAEMON_STORE_BACKEND_H
#define HUTCH_DAEMON_STORE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/store/rows.h"
#include "util/err.h"

struct hu_store;

struct hu_store_ops {
	const char *name;
	void (*close)(struct hu_store *st);
	/* a key's sha256 hex is stored with its team (created if needed) */
	int (*key_add)(struct hu_store *st, const char *team, const char *key_hash, hu_err *err);
	int (*key_team)(struct hu_store *st, const char *key_hash, char *team_out, size_t n, hu_err *err);
	int (*key_count)(struct hu_store *st, int *count, hu_err *err);
	int (*sandbox_put)(struct hu_store *st, const struct hu_sandbox_row *row, hu_err *err);
	int (*sandbox_delete)(struct hu_store *st, const char *id, hu_err *err);
	int (*sandbox_set_state)(struct hu_store *st, const char *id, enum hu_sbx_state state, hu_err *err);
	int (*sandbox_load)(struct hu_store *st, void (*fn)(struct hu_sandbox_row *row, void *arg), void *arg,
			    hu_err *err);
	int (*template_users)(struct hu_store *st, const char *template_id, int *count, hu_err *err);
	int (*lost_add)(struct hu_store *st, const char *id, const char *team, const char *reason, hu_err *err);
	int (*lost_reason)(struct hu_store *st, const char *id, const char *team, char *reason, size_t n);
	int (*lost_purge)(struct hu_store *st, int64_t before_ms, hu_err *err);
	int (*begin)(struct hu_store *st, hu_err *err);
	int (*commit)(struct hu_store *st, hu_err *err);
	int (*volume_add)(struct hu_store *st, const struct hu_volume *v, hu_err *err);
	int (*volume_find)(struct hu_store *st, const char *team, const char *key, struct hu_volume *out, hu_err *err);
	int (*volume_each)(struct hu_store *st, const char *team, void (*fn)(const struct hu_volume *v, void *arg),
			   void *arg, hu_err *err);
	int (*volume_delete)(struct hu_store *st, const char *id, hu_err *err);
	int (*volume_by_id)(struct hu_store *st, const char *id, struct hu_volume *out, hu_err *err);
	int (*snapshot_put)(struct hu_store *st, const struct hu_snapshot_row *row, hu_err *err);
	int (*snapshot_find)(struct hu_store *st, const char *team, const char *key, struct hu_snapshot_row *out,
			     hu_err *err);
	int (*snapshot_each)(struct hu_store *st, const char *team, void (*fn)(const struct hu_snapshot_row *row, void *arg),
			     void *arg, hu_err *err);
	int (*snapshot_delete)(struct hu_store *st, const char *id, hu_err *err);
	/* nodes (NULL in a backend for one host: store.c answers ENOSYS) */
	int (*node_register)(struct hu_store *st, const struct hu_node *n, int64_t ttl_ms, int64_t *generation,
			     hu_err *err);
	int (*node_renew)(struct hu_store *st, const struct hu_node *n, int64_t ttl_ms, hu_err *err);
	int (*place)(struct hu_store *st, const struct hu_place_ask *ask, struct hu_node *chosen, char *placement,
		     hu_err *err);
	int (*placement_done)(struct hu_store *st, const char *placement, hu_err *err);
	int (*node_each)(struct hu_store *st, void (*fn)(const struct hu_node *n, void *arg), void *arg, hu_err *err);
	int (*node_set_draining)(struct hu_store *st, const char *name, bool draining, hu_err *err);
	int (*node_remove)(struct hu_store *st, const char *name, hu_err *err);
	int (*sandbox_owner)(struct hu_store *st, const char *id, char *team, size_t n, struct hu_node *owner,
			     hu_err *err);
	int (*template_record)(struct hu_store *st, const struct hu_template_row *t, hu_err *err);
	int (*template_find)(struct hu_store *st, const char *id, struct hu_template_row *out, hu_err *err);
	/* hutch doctor's reading (NULL: store.c answers ENOSYS) */
	int (*health)(struct hu_store *st, struct hu_store_health *h, hu_err *err);
};

/* Every backend's state begins with this. */
struct hu_store {
	const struct hu_store_ops *ops;
};


#endif
