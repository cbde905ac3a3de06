/*
 * The store's interface (store.h): what every backend shares (API keys are
 * generated and hashed here, so no backend ever sees a plaintext key), then
 * the backend's own table (backend.h).
 */
#include "daemon/store/store.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <string.h>

#include "daemon/store/backend.h"
#include "daemon/store/pg.h"
#include "daemon/store/sqlite.h"
#include "util/hex.h"

/* E2B's key shape: the SDKs refuse, before sending anything, a key that is not
 * "e2b_" + lowercase hex (E2B_VALIDATE_API_KEY, on by default). */
#define KEY_PREFIX "e2b_"
#define KEY_RANDOM_BYTES 20 /* 40 hex chars */
/* Keys issued before the e2b_ shape; they keep working (a key is stored as
 * the sha256 of all of it, prefix included, so nothing changes for them). */
#define LEGACY_KEY_PREFIX "hutch_"
#define KEY_MAX_HEX 128

int hu_store_open(const char *location, struct hu_store **out, hu_err *err)
{
	if (hu_store_pg_location(location))
		return hu_store_pg_open(location, out, err);
	return hu_store_sqlite_open(location, out, err);
}

int hu_store_open_to_inspect(const char *location, struct hu_store **out, hu_err *err)
{
	if (hu_store_pg_location(location))
		return hu_store_pg_open_to_inspect(location, out, err);
	return hu_store_sqlite_open(location, out, err);
}

int hu_store_health(struct hu_store *st, struct hu_store_health *h, hu_err *err)
{
	memset(h, 0, sizeof(*h));
	if (!st->ops->health)
		return hu_err_set(err, -ENOSYS, "store %s: no health reading", st->ops->name);
	return st->ops->health(st, h, err);
}

void hu_store_close(struct hu_store *st)
{
	if (st)
		st->ops->close(st);
}

const char *hu_store_backend_name(const struct hu_store *st)
{
	return st->ops->name;
}

/* sha256 hex of the key: the only form in which a key is stored. */
static int key_hash(const char *key, char out[65], hu_err *err)
{
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (!EVP_Digest(key, strlen(key), md, &len, EVP_sha256(), NULL) || len != 32)
		return hu_err_set(err, -EIO, "store: sha256 failed");
	hu_hex_encode(md, len, out);
	return 0;
}

int hu_store_key_create(struct hu_store *st, const char *team, char *key_out, size_t n, hu_err *err)
{
	char key[sizeof(KEY_PREFIX) + 2 * KEY_RANDOM_BYTES];
	char hash[65];

	if (n < sizeof(key))
		return hu_err_set(err, ENOBUFS, "store: key buffer too small");
	memcpy(key, KEY_PREFIX, sizeof(KEY_PREFIX) - 1);
	if (hu_random_hex(key + sizeof(KEY_PREFIX) - 1, KEY_RANDOM_BYTES, err) < 0) {
		hu_err_prefix(err, "store");
		return -1;
	}
	if (key_hash(key, hash, err) < 0 || st->ops->key_add(st, team, hash, err) < 0)
		return -1;
	memcpy(key_out, key, sizeof(key));
	return 0;
}

/* True when s is prefix followed by 1..KEY_MAX_HEX lowercase hex digits. */
static bool has_shape(const char *s, const char *prefix)
{
	size_t p = strlen(prefix), h;

	if (strncmp(s, prefix, p) != 0)
		return false;
	h = strspn(s + p, "0123456789abcdef");
	return h > 0 && h <= KEY_MAX_HEX && s[p + h] == '\0';
}

bool hu_store_key_well_formed(const char *key)
{
	return key && (has_shape(key, KEY_PREFIX) || has_shape(key, LEGACY_KEY_PREFIX));
}

int hu_store_key_team(struct hu_store *st, const char *key, char *team_out, size_t n, hu_err *err)
{
	char hash[65];

	if (!hu_store_key_well_formed(key))
		return hu_err_set(err, ENOENT, "store: no such key");

	if (key_hash(key, hash, err) < 0)
		return -1;
	return st->ops->key_team(st, hash, team_out, n, err);
}

int hu_store_key_count(struct hu_store *st, int *count, hu_err *err)
{
	return st->ops->key_count(st, count, err);
}

int hu_store_sandbox_put(struct hu_store *st, const struct hu_sandbox_row *row, hu_err *err)
{
	return st->ops->sandbox_put(st, row, err);
}

int hu_store_sandbox_delete(struct hu_store *st, const char *id, hu_err *err)
{
	return st->ops->sandbox_delete(st, id, err);
}

int hu_store_sandbox_set_state(struct hu_store *st, const char *id, enum hu_sbx_state state, hu_err *err)
{
	return st->ops->sandbox_set_state(st, id, state, err);
}

int hu_store_sandbox_load(struct hu_store *st, void (*fn)(struct hu_sandbox_row *row, void *arg), void *arg,
			  hu_err *err)
{
	return st->ops->sandbox_load(st, fn, arg, err);
}

int hu_store_template_users(struct hu_store *st, const char *template_id, int *count, hu_err *err)
{
	return st->ops->template_users(st, template_id, count, err);
}

int hu_store_lost_add(struct hu_store *st, const char *id, const char *team, const char *reason, hu_err *err)
{
	return st->ops->lost_add(st, id, team, reason, err);
}

int hu_store_lost_reason(struct hu_store *st, const char *id, const char *team, char *reason, size_t n)
{
	return st->ops->lost_reason(st, id, team, reason, n);
}

int hu_store_lost_purge(struct hu_store *st, int64_t before_ms, hu_err *err)
{
	return st->ops->lost_purge(st, before_ms, err);
}

int hu_store_begin(struct hu_store *st, hu_err *err)
{
	return st->ops->begin(st, err);
}

int hu_store_commit(struct hu_store *st, hu_err *err)
{
	return st->ops->commit(st, err);
}

int hu_store_volume_add(struct hu_store *st, const struct hu_volume *v, hu_err *err)
{
	return st->ops->volume_add(st, v, err);
}

int hu_store_volume_find(struct hu_store *st, const char *team, const char *key, struct hu_volume *out, hu_err *err)
{
	return st->ops->volume_find(st, team, key, out, err);
}

int hu_store_volume_each(struct hu_store *st, const char *team, void (*fn)(const struct hu_volume *v, void *arg),
			 void *arg, hu_err *err)
{
	return st->ops->volume_each(st, team, fn, arg, err);
}

int hu_store_volume_delete(struct hu_store *st, const char *id, hu_err *err)
{
	return st->ops->volume_delete(st, id, err);
}

int hu_store_volume_by_id(struct hu_store *st, const char *id, struct hu_volume *out, hu_err *err)
{
	return st->ops->volume_by_id(st, id, out, err);
}

int hu_store_node_register(struct hu_store *st, const struct hu_node *n, int64_t ttl_ms, int64_t *generation,
			   hu_err *err)
{
	if (!st->ops->node_register)
		return hu_err_set(err, -ENOSYS, "store: the %s store has no nodes (one host; the nodes of a cluster share a postgresql:// store)", st->ops->name);
	return st->ops->node_register(st, n, ttl_ms, generation, err);
}

int hu_store_node_renew(struct hu_store *st, const struct hu_node *n, int64_t ttl_ms, hu_err *err)
{
	if (!st->ops->node_renew)
		return hu_err_set(err, -ENOSYS, "store: the %s store has no nodes (one host; the nodes of a cluster share a postgresql:// store)", st->ops->name);
	return st->ops->node_renew(st, n, ttl_ms, err);
}

int hu_store_place(struct hu_store *st, const struct hu_place_ask *ask, struct hu_node *chosen, char *placement,
		   hu_err *err)
{
	if (!st->ops->place)
		return hu_err_set(err, -ENOSYS, "store: the %s store has no nodes (one host; the nodes of a cluster share a postgresql:// store)", st->ops->name);
	return st->ops->place(st, ask, chosen, placement, err);
}

int hu_store_placement_done(struct hu_store *st, const char *placement, hu_err *err)
{
	if (!st->ops->placement_done)
		return hu_err_set(err, -ENOSYS, "store: the %s store has no nodes (one host; the nodes of a cluster share a postgresql:// store)", st->ops->name);
	return st->ops->placement_done(st, placement, err);
}

int hu_store_node_each(struct hu_store *st, void (*fn)(const struct hu_node *n, void *arg), void *arg, hu_err *err)
{
	if (!st->ops->node_each)
		return hu_err_set(err, -ENOSYS, "store: the %s store has no nodes (one host; the nodes of a cluster share a postgresql:// store)", st->ops->name);
	return st->ops->node_each(st, fn, arg, err);
}

int hu_store_node_set_draining(struct hu_store *st, const char *name, bool draining, hu_err *err)
{
	if (!st->ops->node_set_draining)
		return hu_err_set(err, -ENOSYS, "store: the %s store has no nodes (one host; the nodes of a cluster share a postgresql:// store)", st->ops->name);
	return st->ops->node_set_draining(st, name, draining, err);
}

int hu_store_node_remove(struct hu_store *st, const char *name, hu_err *err)
{
	if (!st->ops->node_remove)
		return hu_err_set(err, -ENOSYS, "store: the %s store has no nodes (one host; the nodes of a cluster share a postgresql:// store)", st->ops->name);
	return st->ops->node_remove(st, name, err);
}

int hu_store_sandbox_owner(struct hu_store *st, const char *id, char *team, size_t n, struct hu_node *owner,
			   hu_err *err)
{
	if (!st->ops->sandbox_owner)
		return hu_err_set(err, -ENOENT, "sandbox %s: one host, no other node", id);
	return st->ops->sandbox_owner(st, id, team, n, owner, err);
}

int hu_store_snapshot_put(struct hu_store *st, const struct hu_snapshot_row *row, hu_err *err)
{
	return st->ops->snapshot_put(st, row, err);
}

int hu_store_snapshot_find(struct hu_store *st, const char *team, const char *key, struct hu_snapshot_row *out,
			   hu_err *err)
{
	return st->ops->snapshot_find(st, team, key, out, err);
}

int hu_store_snapshot_each(struct hu_store *st, const char *team,
			   void (*fn)(const struct hu_snapshot_row *row, void *arg), void *arg, hu_err *err)
{
	return st->ops->snapshot_each(st, team, fn, arg, err);
}

int hu_store_snapshot_delete(struct hu_store *st, const char *id, hu_err *err)
{
	return st->ops->snapshot_delete(st, id, err);
}

int hu_store_template_record(struct hu_store *st, const struct hu_template_row *t, hu_err *err)
{
	if (!st->ops->template_record)
		return hu_err_set(err, -ENOSYS, "store: the %s store has no nodes (one host; the nodes of a cluster share a postgresql:// store)", st->ops->name);
	return st->ops->template_record(st, t, err);
}

int hu_store_template_find(struct hu_store *st, const char *id, struct hu_template_row *out, hu_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!st->ops->template_find)
		return hu_err_set(err, -ENOSYS, "store: the %s store has no nodes (one host; the nodes of a cluster share a postgresql:// store)", st->ops->name);
	return st->ops->template_find(st, id, out, err);
}
