/*
 * Snapshots and forks (E2B's API; docs/api.md "Snapshots and forks"):
 * POST /sandboxes/{id}/snapshots, GET /snapshots, POST /sandboxes/{id}/fork.
 * A snapshot is deleted through DELETE /templates/{id} (api_templates.c)
 * and used through a create's templateID (sandbox_ops.c). Files only: the
 * replies say so (`memory: "not included"`), as docs/e2b-compat.md does.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api_sandboxes.h"
#include "daemon/api/handlers.h"
#include "daemon/common/fault.h"
#include "daemon/common/log.h"
#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/sandboxes/snapshots.h"
#include "daemon/store/store.h"

#define FORK_MAX 32
#define FORK_TIMEOUT_S 15 /* E2B's default for a fork */

/* SnapshotInfo: its name when it has one (E2B's ids are the alias then),
 * else its id; both work as a templateID. */
static json_t *snapshot_json(const struct hu_snapshot_row *row)
{
	json_t *names = json_array();

	if (names && row->name[0])
		json_array_append_new(names, json_string(row->name));
	return json_pack("{s:s, s:o, s:s, s:s, s:s}", "snapshotID", row->name[0] ? row->name : row->id, "names",
			 names ? names : json_array(), "sandboxID", row->sandbox_id, "templateID", row->template_id,
			 "memory", "not included");
}

static int decode_name(struct hu_req *r, char *name, size_t n)
{
	json_t *body, *v;

	name[0] = '\0';
	if (hu_req_json(r, &body) < 0)
		return -1;
	v = json_object_get(body, "name");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v) || !hu_snapshot_name_valid(json_string_value(v))) {
			json_decref(body);
			hu_reply_error(r, 400, "name must be 1 to 63 of A-Z a-z 0-9 . _ -, starting with a letter or digit");
			return -1;
		}
		snprintf(name, n, "%s", json_string_value(v));
	}
	json_decref(body);
	return 0;
}

void hu_api_create_snapshot(struct hu_req *r)
{
	struct hu_sbx *s = hu_api_own_sandbox(r);
	char name[HU_SNAPSHOT_NAME_MAX];
	struct hu_snapshot_row row;
	hu_err err;

	if (!s || decode_name(r, name, sizeof(name)) < 0)
		return;
	if (hu_snapshot_take(hu_req_daemon(r), s, name, HU_SNAP_READY, &row, &err) < 0) {
		hu_log(HU_LOG_WARN, s->id, r->id, "%s", err.msg);
		hu_reply_err(r, &err);
		return;
	}
	json_t *v = snapshot_json(&row);
	if (!v) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	hu_reply_json(r, 201, v);
}

struct list {
	json_t *out;
	const char *sandbox, *name;
};

static void list_one(const struct hu_snapshot_row *row, void *arg)
{
	struct list *l = arg;

	if (row->state != HU_SNAP_READY || (l->sandbox && strcmp(l->sandbox, row->sandbox_id)) ||
	    (l->name && strcmp(l->name, row->name)))
		return;
	json_t *v = snapshot_json(row);
	if (v)
		json_array_append_new(l->out, v);
}

/* GET /snapshots[?sandboxID=][&name=] -> the team's snapshots, oldest first (all
 * of them: no pagination token is ever returned) */
void hu_api_list_snapshots(struct hu_req *r)
{
	struct list l = {.out = json_array(), .sandbox = hu_req_query(r, "sandboxID"), .name = hu_req_query(r, "name")};
	hu_err err;

	if (!l.out) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	if (hu_store_snapshot_each(hu_req_daemon(r)->store, r->principal, list_one, &l, &err) < 0) {
		json_decref(l.out);
		hu_reply_err(r, &err);
		return;
	}
	hu_reply_json(r, 200, l.out);
}

/* ---- fork ----------------------------------------------------------------- */

struct fork {
	struct hu_req *r;
	json_t *results; /* one entry per fork, in order */
	unsigned pending; /* creates not answered yet, plus one while they are started */
};

struct fork_slot {
	struct fork *f;
	size_t i;
};

static void fork_answered(struct fork *f)
{
	if (--f->pending)
		return;
	hu_reply_json(f->r, 201, f->results);
	free(f);
}

static json_t *fork_error(const hu_err *err)
{
	int status = hu_http_status_for_errno(err->code);
	return json_pack("{s:{s:i, s:s}}", "error", "code", status, "message", err->msg);
}

static void fork_created(struct hu_daemon *d, struct hu_sbx *s, int created, const hu_err *err, void *arg)
{
	struct fork_slot *slot = arg;
	json_t *v = s ? json_pack("{s:o}", "sandbox", hu_sbx_json_sandbox(s)) : fork_error(err);

	if (!s)
		hu_log(HU_LOG_WARN, NULL, slot->f->r->id, "fork %zu: %s", slot->i, err->msg);
	if (v)
		json_array_set_new(slot->f->results, slot->i, v);
	fork_answered(slot->f);
	free(slot);
}

static int decode_fork(struct hu_req *r, int32_t *count, int32_t *timeout)
{
	json_t *body, *c, *t;

	*count = 1;
	*timeout = FORK_TIMEOUT_S;
	if (hu_req_json(r, &body) < 0)
		return -1;
	c = json_object_get(body, "count");
	t = json_object_get(body, "timeout");
	if ((c && !json_is_null(c) && (!json_is_integer(c) || json_integer_value(c) < 1 ||
				       json_integer_value(c) > FORK_MAX)) ||
	    (t && !json_is_null(t) && (!json_is_integer(t) || json_integer_value(t) < 1 ||
				       json_integer_value(t) > 86400 * 30))) {
		json_decref(body);
		hu_reply_error(r, 400, "count must be 1 to %d, timeout 1 to 2592000 seconds", FORK_MAX);
		return -1;
	}
	if (c && json_is_integer(c))
		*count = (int32_t)json_integer_value(c);
	if (t && json_is_integer(t))
		*timeout = (int32_t)json_integer_value(t);
	json_decref(body);
	return 0;
}

/* POST /sandboxes/{id}/fork {count, timeout} -> 201 [{sandbox} | {error}]:
 * one point in time (the source frozen for a snapshot of its files, then
 * running on), then `count` creates from it, each answered on its own. The
 * forks carry the source's sizes, envs, metadata, lifecycle and network
 * settings; not its volume mounts, and not its memory. */
void hu_api_fork_sandbox(struct hu_req *r)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct hu_sbx *s = hu_api_own_sandbox(r);
	struct hu_snapshot_row point;
	int32_t count, timeout;
	hu_err err;

	if (!s || decode_fork(r, &count, &timeout) < 0)
		return;
	struct fork *f = calloc(1, sizeof(*f));
	if (!f || !(f->results = json_array())) {
		free(f);
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	if (hu_snapshot_take(d, s, NULL, HU_SNAP_FORK, &point, &err) < 0) {
		json_decref(f->results);
		free(f);
		hu_log(HU_LOG_WARN, s->id, r->id, "fork: %s", err.msg);
		hu_reply_err(r, &err);
		return;
	}
	f->r = r;
	f->pending = 1;
	for (int32_t i = 0; i < count; i++)
		json_array_append_new(f->results, json_null());
	struct hu_new_sandbox ns = {
		.timeout_s = timeout,
		.allow_internet = s->allow_internet,
		.auto_pause = s->auto_pause,
		.auto_pause_memory = s->auto_pause_memory,
		.auto_resume = s->auto_resume,
		.reclaim_after_s = s->reclaim_after_s,
		.has_network = s->has_network,
		.net = s->net_rules,
	};
	snprintf(ns.template_id, sizeof(ns.template_id), "%s", point.id);
	for (int32_t i = 0; i < count; i++) {
		struct fork_slot *slot = calloc(1, sizeof(*slot));
		if (!slot) {
			hu_err_set(&err, ENOMEM, "fork %d", i);
			json_array_set_new(f->results, (size_t)i, fork_error(&err));
			continue;
		}
		*slot = (struct fork_slot){.f = f, .i = (size_t)i};
		f->pending++;
		/* each its own copy: a create keeps a reference to them */
		ns.metadata = json_deep_copy(s->metadata);
		ns.env_vars = json_deep_copy(s->env_vars);
		int rc = hu_sbx_create_async(d, s->team, &ns, NULL, fork_created, slot, &err);
		json_decref(ns.metadata);
		json_decref(ns.env_vars);
		if (rc < 0) {
			f->pending--;
			json_array_set_new(f->results, (size_t)i, fork_error(&err));
			free(slot);
		}
	}
	hu_fault_point("fork.started");
	/* every fork's layer is a copy of the point in time by now (the
	 * runtime makes it before a create goes async): the point can go */
	if (hu_snapshot_remove(d, &point, &err) < 0)
		hu_log(HU_LOG_WARN, s->id, r->id, "fork: %s (removed at the next start)", err.msg);
	hu_log(HU_LOG_INFO, s->id, r->id, "forked into %d sandbox(es) from its files of this instant", count);
	fork_answered(f);
}
