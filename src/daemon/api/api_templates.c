/*
 * The template routes: list (GET /templates), describe (GET /templates/{id}),
 * delete (DELETE /templates/{id}) and alias lookup (GET
 * /templates/aliases/{alias}, the SDK's Template.exists). Templates are
 * built with `hutch template build` (src/cli/template.c) into the data dir
 * this daemon reads; every request reads the templates directory afresh,
 * so a build finished a moment ago is visible at once. A team sees the
 * public templates and its own.
 */
#include <string.h>

#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/provision.h"
#include "daemon/api/handlers.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/sandboxes/snapshots.h"
#include "daemon/sandboxes/templates.h"

/* GET /templates/aliases/{alias} -> 200 {templateID, public} | 404 */
void hu_api_get_template_alias(struct hu_req *r)
{
	struct hu_tpl_meta m;
	struct hu_snapshot_row snap;
	hu_err err;

	/* a snapshot is a template to E2B's API: deleted here too */
	if (hu_snapshot_lookup(hu_req_daemon(r), r->principal, r->param, 0, &snap, &err) == 0) {
		if (hu_snapshot_remove(hu_req_daemon(r), &snap, &err) < 0) {
			hu_reply_err(r, &err);
			return;
		}
		hu_log(HU_LOG_INFO, NULL, r->id, "snapshot %s deleted by team %s", snap.id, r->principal);
		hu_reply_empty(r, 204);
		return;
	}
	if (hu_template_lookup(hu_req_daemon(r), r->principal, r->param, &m, &err) < 0) {
		hu_reply_error(r, 404, "template alias '%.64s' not found", r->param);
		return;
	}
	hu_reply_json(r, 200, json_pack("{s:s,s:b}", "templateID", m.id, "public", m.is_public));
	hu_tpl_meta_free(&m);
}

struct list_ctx {
	const char *team;
	json_t *out;
};

static int add_visible(const struct hu_tpl_meta *m, void *arg)
{
	struct list_ctx *c = arg;
	if (m->is_public || !strcmp(m->team, c->team))
		json_array_append_new(c->out, hu_tpl_meta_json(m));
	return 0;
}

/* The template the daemon provisions (provision.h) carries its progress as
 * "provision"; before its first build is done it is listed anyway, with
 * buildStatus "building" (or "error" after a failed attempt). */
static void add_provisioned(const struct hu_daemon *d, json_t *list)
{
	int not_built = 0;
	json_t *prov = hu_provision_describe(d, HU_PROVISION_TEMPLATE, &not_built), *t;
	size_t i;

	if (!prov)
		return;
	json_array_foreach(list, i, t) {
		if (!strcmp(json_string_value(json_object_get(t, "templateID")) ?: "", HU_PROVISION_TEMPLATE)) {
			json_object_set_new(t, "provision", prov);
			return;
		}
	}
	if (!not_built) {
		json_decref(prov);
		return;
	}
	int failed = !strcmp(json_string_value(json_object_get(prov, "state")) ?: "", "failed");
	t = json_pack("{s:s, s:s, s:[s], s:[s], s:b, s:s, s:o}", "templateID", HU_PROVISION_TEMPLATE, "buildID",
		      HU_PROVISION_TEMPLATE, "aliases", HU_PROVISION_TEMPLATE, "names", HU_PROVISION_TEMPLATE, "public", 1,
		      "buildStatus", failed ? "error" : "building", "provision", prov);
	if (t)
		json_array_append_new(list, t);
}

/* GET /templates -> 200 [Template] */
void hu_api_list_templates(struct hu_req *r)
{
	char dir[PATH_MAX];
	struct list_ctx c = {r->principal, json_array()};
	hu_err err;

	hu_templates_dir(hu_req_daemon(r), dir, sizeof(dir));
	if (!c.out || hu_tpl_list(dir, add_visible, &c, &err) < 0) {
		json_decref(c.out);
		hu_reply_error(r, 500, "list templates");
		return;
	}
	add_provisioned(hu_req_daemon(r), c.out);
	hu_reply_json(r, 200, c.out);
}

/* GET /templates/{id} -> 200 Template | 404 */
void hu_api_get_template(struct hu_req *r)
{
	struct hu_tpl_meta m;
	struct hu_snapshot_row snap;
	hu_err err;

	/* a snapshot is a template to E2B's API: deleted here too */
	if (hu_snapshot_lookup(hu_req_daemon(r), r->principal, r->param, 0, &snap, &err) == 0) {
		if (hu_snapshot_remove(hu_req_daemon(r), &snap, &err) < 0) {
			hu_reply_err(r, &err);
			return;
		}
		hu_log(HU_LOG_INFO, NULL, r->id, "snapshot %s deleted by team %s", snap.id, r->principal);
		hu_reply_empty(r, 204);
		return;
	}
	if (hu_template_lookup(hu_req_daemon(r), r->principal, r->param, &m, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	hu_reply_json(r, 200, hu_tpl_meta_json(&m));
	hu_tpl_meta_free(&m);
}

static int uses_template(const struct hu_sbx *s, void *arg)
{
	return !strcmp(s->template_id, (const char *)arg);
}

/* DELETE /templates/{id} -> 204 | 404 | 403 (base, or a public template a
 * team did not build) | 409 while any sandbox (running or paused) uses it */
void hu_api_delete_template(struct hu_req *r)
{
	char dir[PATH_MAX];
	struct hu_tpl_meta m;
	struct hu_snapshot_row snap;
	hu_err err;

	/* a snapshot is a template to E2B's API: deleted here too */
	if (hu_snapshot_lookup(hu_req_daemon(r), r->principal, r->param, 0, &snap, &err) == 0) {
		if (hu_snapshot_remove(hu_req_daemon(r), &snap, &err) < 0) {
			hu_reply_err(r, &err);
			return;
		}
		hu_log(HU_LOG_INFO, NULL, r->id, "snapshot %s deleted by team %s", snap.id, r->principal);
		hu_reply_empty(r, 204);
		return;
	}
	if (hu_template_lookup(hu_req_daemon(r), r->principal, r->param, &m, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	int owner = m.team[0] && !strcmp(m.team, r->principal);
	hu_tpl_meta_free(&m);
	if (!owner) {
		hu_reply_error(r, 403, "template '%.64s' belongs to the operator; remove it with `hutch template rm`",
			       r->param);
		return;
	}
	if (hu_sbx_any(hu_req_daemon(r), uses_template, (void *)r->param)) {
		hu_reply_error(r, 409, "template '%.64s' is in use by a sandbox; kill its sandboxes first", r->param);
		return;
	}
	if (hu_snapshot_uses_template(hu_req_daemon(r), r->param)) {
		hu_reply_error(r, 409, "template '%.64s' is under a snapshot; delete its snapshots first", r->param);
		return;
	}
	if (hu_pool_drop_template(hu_req_daemon(r), r->param)) {
		hu_reply_error(r, 409, "template '%.64s' is being built into a warm pool; try again in a moment", r->param);
		return;
	}
	hu_templates_dir(hu_req_daemon(r), dir, sizeof(dir));
	if (hu_tpl_delete(dir, r->param, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	hu_log(HU_LOG_INFO, NULL, r->id, "template %s deleted by team %s", r->param, r->principal);
	hu_reply_empty(r, 204);
}
