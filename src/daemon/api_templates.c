/*
 * The template routes the SDK needs today: whether an alias exists
 * (Template.exists) and what a template id resolves to. Building templates
 * is the warm-pool/templates issue; only the built-in `base` exists.
 */
#include <string.h>

#include "daemon/routes.h"
#include "daemon/sandbox_ops.h"

/* GET /templates/aliases/{alias} -> 200 {templateID, public} | 404 */
static void get_alias(struct hu_req *r)
{
	const char *tpl = hu_template_resolve(r->param);

	if (!tpl) {
		hu_reply_error(r, 404, "template alias '%.64s' not found", r->param);
		return;
	}
	hu_reply_json(r, 200, json_pack("{s:s,s:b}", "templateID", r->param, "public", 1));
}

void hu_api_templates_register(struct hu_daemon *d)
{
	hu_route(d, EVHTTP_REQ_GET, "/templates/aliases/{id}", HU_AUTH_API_KEY, get_alias);
}
