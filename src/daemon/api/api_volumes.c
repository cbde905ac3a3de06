/*
 * Named volumes over the control plane (docs/api.md "Volumes"), as the e2b
 * SDK's Volume class calls them: POST /volumes, GET /volumes,
 * GET /volumes/{id}, DELETE /volumes/{id}, where {id} is the volume's id
 * or its name. Team-scoped like sandboxes: another team's volume is 404.
 */
#include <stdio.h>
#include <string.h>

#include "daemon/common/fault.h"
#include "util/rfc3339.h"
#include "daemon/api/api_json.h"
#include "daemon/api/mounts_json.h"
#include "daemon/api/handlers.h"
#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/sandboxes/sbx_mounts.h"
#include "daemon/sandboxes/volumes.h"
#include "util/clock.h"
#include "util/hex.h"

static json_t *volume_json(const struct hu_volume *v)
{
	char created[HU_TIME_STR_MAX];

	hu_rfc3339_format(v->created_at_ms, created);
	return json_pack("{s:s, s:s, s:I, s:s}", "volumeID", v->id, "name", v->name, "size", (json_int_t)v->size,
			 "createdAt", created);
}

static void reply_volume(struct hu_req *r, int status, const struct hu_volume *v)
{
	json_t *j = volume_json(v);
	if (!j) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	hu_reply_json(r, status, j);
}

void hu_api_create_volume(struct hu_req *r)
{
	struct hu_volume v = {0}, existing;
	json_t *body;
	hu_err err, ignored;
	int rc;

	if (hu_req_json(r, &body) < 0)
		return;
	rc = hu_api_decode_new_volume(body, v.name, &v.size, &err);
	json_decref(body);
	if (rc < 0) {
		hu_reply_err(r, &err);
		return;
	}
	/* the operator's ceiling: an uncapped volume shares the volume root's
	 * free space with every other volume and the host */
	if (hu_req_daemon(r)->cfg.volume_max_bytes && !v.size)
		v.size = hu_req_daemon(r)->cfg.volume_max_bytes;
	if (hu_req_daemon(r)->cfg.volume_max_bytes && v.size > hu_req_daemon(r)->cfg.volume_max_bytes) {
		hu_reply_error(r, 400, "size %llu is above this server's volume_max_size (%llu bytes)",
			       (unsigned long long)v.size, (unsigned long long)hu_req_daemon(r)->cfg.volume_max_bytes);
		return;
	}
	if (hu_store_volume_find(hu_req_daemon(r)->store, r->principal, v.name, &existing, &err) == 0) {
		hu_reply_error(r, 409, "a volume named '%s' exists already", v.name);
		return;
	}
	v.id[0] = 'v';
	if (hu_random_hex(v.id + 1, 10, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	snprintf(v.team, sizeof(v.team), "%s", r->principal);
	v.created_at_ms = hu_wall_ms();
	if (hu_volume_create_disk(&hu_req_daemon(r)->cfg, &v, &err) < 0) {
		hu_log(HU_LOG_ERROR, NULL, r->id, "create volume %s: %s", v.name, err.msg);
		hu_reply_err(r, &err);
		return;
	}
	if (hu_store_volume_add(hu_req_daemon(r)->store, &v, &err) < 0) {
		if (hu_volume_retire(&hu_req_daemon(r)->cfg, &v, &ignored) == 0)
			hu_volume_purge(&hu_req_daemon(r)->cfg, &v, &ignored);
		hu_reply_err(r, &err);
		return;
	}
	hu_log(HU_LOG_INFO, NULL, r->id, "volume %s (%s) created for team %s, cap %llu bytes", v.name, v.id, v.team,
	       (unsigned long long)v.size);
	reply_volume(r, 201, &v);
}

static void append_volume(const struct hu_volume *v, void *arg)
{
	json_t *j = volume_json(v);
	if (j)
		json_array_append_new(arg, j);
}

void hu_api_list_volumes(struct hu_req *r)
{
	json_t *arr = json_array();
	hu_err err;

	if (!arr) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	if (hu_store_volume_each(hu_req_daemon(r)->store, r->principal, append_volume, arr, &err) < 0) {
		json_decref(arr);
		hu_reply_err(r, &err);
		return;
	}
	hu_reply_json(r, 200, arr);
}

static int own_volume(struct hu_req *r, struct hu_volume *v)
{
	hu_err err;
	if (hu_store_volume_find(hu_req_daemon(r)->store, r->principal, r->param, v, &err) < 0) {
		hu_reply_err(r, &err);
		return -1;
	}
	return 0;
}

void hu_api_get_volume(struct hu_req *r)
{
	struct hu_volume v;
	if (own_volume(r, &v) == 0)
		reply_volume(r, 200, &v);
}

static int mounts_it(const struct hu_sbx *s, void *arg)
{
	return hu_sbx_mounts_volume(s, arg);
}

void hu_api_delete_volume(struct hu_req *r)
{
	struct hu_volume v;
	hu_err err, ignored;

	if (own_volume(r, &v) < 0)
		return;
	if (hu_sbx_any(hu_req_daemon(r), mounts_it, v.id)) {
		hu_reply_error(r, 409, "volume '%s' is mounted by a sandbox; kill the sandbox first", v.name);
		return;
	}
	/* files aside, row, files gone: a crash between any two steps loses
	 * nothing that is still listed (hu_volume_sweep) */
	if (hu_volume_retire(&hu_req_daemon(r)->cfg, &v, &err) < 0) {
		hu_log(HU_LOG_ERROR, NULL, r->id, "delete volume %s: %s", v.name, err.msg);
		hu_reply_err(r, &err);
		return;
	}
	hu_fault_point("volume.retired");
	if (hu_store_volume_delete(hu_req_daemon(r)->store, v.id, &err) < 0) {
		if (hu_volume_unretire(&hu_req_daemon(r)->cfg, &v, &ignored) < 0)
			hu_log(HU_LOG_ERROR, NULL, r->id, "volume %s: %s", v.name, ignored.msg);
		hu_reply_err(r, &err);
		return;
	}
	hu_fault_point("volume.deleted");
	if (hu_volume_purge(&hu_req_daemon(r)->cfg, &v, &err) < 0)
		hu_log(HU_LOG_WARN, NULL, r->id, "volume %s: %s (removed at the next start)", v.name, err.msg);
	hu_log(HU_LOG_INFO, NULL, r->id, "volume %s (%s) deleted", v.name, v.id);
	hu_reply_empty(r, 204);
}
