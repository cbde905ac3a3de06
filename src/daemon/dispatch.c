/*
 * The dispatcher of hutch serve: which plane a request is for, who is
 * asking, and which handler answers (routes.c holds the tables).
 *
 * Planes: a request that carries E2b-Sandbox-Id is for that sandbox's envd
 * (data plane, authenticated by X-Access-Token or a signed URL); a signed
 * /files URL names its sandbox through its signature alone; anything else is
 * the E2B REST API (control plane, X-API-KEY), or GET /health. A paused
 * sandbox with autoResume is resumed by an authenticated data-plane request.
 */
#include "daemon/dispatch.h"

#include <event2/buffer.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/api/handlers.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/volume_route.h"
#include "daemon/cluster/template_fetch.h"
#include "daemon/common/json.h"
#include "daemon/common/stats.h"
#include "daemon/envd/signed_url.h"
#include "daemon/ingress/ingress.h"
#include "daemon/routes.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/store/store.h"
#include "util/base64.h"

#define BASIC_AUTH_MAX 128 /* base64 characters of "user:password"; bytes never exceed it */

/* envd's Connect procedures live at /<package.Service>/<Method>. */
static int is_connect_path(const char *path)
{
	const char *svc = path + 1, *slash = strchr(svc, '/');
	return slash && memchr(svc, '.', (size_t)(slash - svc)) != NULL;
}

/* A data-plane error in the shape its client parses: Connect code strings
 * on Connect procedures, {"code": status} on envd's REST paths. */
static void plane_error(struct hu_req *r, int status, const char *connect_code, const char *msg)
{
	if (r->target && is_connect_path(r->path))
		hu_reply_error_body(r, status, json_string(connect_code), msg);
	else
		hu_reply_error_body(r, status, json_integer(status), msg);
}

static int authenticate_api_key(struct hu_req *r)
{
	const char *key = hu_req_header(r, "X-API-KEY");
	hu_err err;

	if (!key || !*key) {
		hu_reply_error(r, 401, "missing X-API-KEY header");
		return -1;
	}
	if (!hu_req_daemon(r)->store) {
		hu_reply_error(r, 401, "invalid API key");
		return -1;
	}
	if (hu_store_key_team(hu_req_daemon(r)->store, key, r->principal, sizeof(r->principal), &err) < 0) {
		if (err.code == ENOENT) {
			hu_reply_error(r, 401, "invalid API key");
		} else {
			/* a store out of reach for now is 503 with Retry-After */
			hu_err_prefix(&err, "checking the API key");
			hu_reply_err(r, &err);
		}
		return -1;
	}
	return 0;
}

/* A control-plane route that acts on one sandbox: /sandboxes/{id}... */
static bool acts_on_sandbox(const struct hu_route *rt)
{
	return !strncmp(rt->pattern, "/sandboxes/{id}", 15) || !strncmp(rt->pattern, "/v2/sandboxes/{id}", 18);
}

/* How a control-plane call's answer comes back from another node: the log
 * reads stream theirs (api_logs.c), every other answer is one sized reply. */
static enum hu_fwd_answer answer_of(const struct hu_route *rt)
{
	if (rt->fn == hu_api_get_logs_v1 || rt->fn == hu_api_get_logs_v2)
		return HU_FWD_RELAYED;
	return HU_FWD_BUFFERED;
}

/* A node of a cluster answers for the others (cluster/forward.h): a call
 * for another node's sandbox goes to that node, and a create to the node
 * placement picks. 1 when r was answered so; otherwise *placement is the
 * reservation of a create placed here. */
static int for_another_node(struct hu_req *r, const struct hu_route *rt, bool forwarded, char *placement)
{
	struct hu_daemon *d = hu_req_daemon(r);

	if (!d->cluster)
		return 0;
	if (acts_on_sandbox(rt) && r->param[0] && (!d->reg || !hu_registry_get(d->reg, r->param)))
		return hu_cluster_route_elsewhere(r, r->param, r->principal, forwarded, answer_of(rt));
	if (rt->fn == hu_api_create_sandbox) /* POST /sandboxes, /v2/sandboxes */
		return hu_cluster_place(r, forwarded, placement, rt->fn);
	/* DELETE /volumes/{id}: its mounts and files are on its node */
	if (rt->method == EVHTTP_REQ_DELETE && !strcmp(rt->pattern, "/volumes/{id}"))
		return hu_cluster_route_volume(r, r->param, r->principal, forwarded);
	return 0;
}

/* Answer r from `table`: 404/405 in the plane's error shape, the API key
 * checked where the route needs one, then the handler. */
static void route(struct hu_req *r, const struct hu_route *table, size_t n, int data_plane, bool forwarded)
{
	struct hu_daemon *d = hu_req_daemon(r);
	char placement[HU_PLACEMENT_ID_MAX] = "";
	int status;
	const struct hu_route *found = hu_route_find(table, n, r, &status);

	if (!found) {
		const char *why = status == 405 ? "method not allowed" : "no such endpoint";
		if (data_plane)
			plane_error(r, status, "unimplemented", why);
		else
			hu_reply_error(r, status, "%s %s: %s", hu_http_method_name(r->method), r->path, why);
		return;
	}
	if (!data_plane && found->flags == HU_AUTH_API_KEY && authenticate_api_key(r) < 0)
		return;
	if (!data_plane && for_another_node(r, found, forwarded, placement))
		return;
	found->fn(r); /* r may be gone now */
	/* a create placed here has written its row (or failed): the
	 * reservation placement made for it is no longer needed */
	if (placement[0])
		hu_cluster_placed(d, placement);
}

static int token_ok(const struct hu_sbx *s, const char *given)
{
	size_t n = strlen(s->access_token);
	/* A sandbox without a token is a bug elsewhere: refuse, never open. */
	if (!given || n == 0 || strlen(given) != n)
		return 0;
	return CRYPTO_memcmp(given, s->access_token, n) == 0;
}

/* Authorization: Basic base64("<user>:") names the user a call runs as. */
static int parse_user(struct hu_req *r)
{
	const char *h = hu_req_header(r, "Authorization");
	uint8_t out[BASIC_AUTH_MAX];
	size_t len, n;
	hu_err err;

	if (!h)
		return 0;
	if (strncasecmp(h, "Basic ", 6)) {
		plane_error(r, 400, "invalid_argument", "Authorization must be Basic base64(user:)");
		return -1;
	}
	h += 6;
	while (*h == ' ')
		h++;
	len = strlen(h);
	if (len > BASIC_AUTH_MAX || hu_base64_decode(h, len, out, &n, &err) < 0) {
		plane_error(r, 400, "invalid_argument", "Authorization: malformed base64");
		return -1;
	}
	const uint8_t *colon = memchr(out, ':', n);
	size_t ulen = colon ? (size_t)(colon - out) : n;
	if (ulen == 4 && !memcmp(out, "root", 4)) {
		r->user = "root";
	} else if (ulen == 4 && !memcmp(out, "user", 4)) {
		r->user = "user";
	} else {
		char msg[160];
		snprintf(msg, sizeof(msg), "user '%.*s' not found (hutch sandboxes have root and user)",
			 (int)(ulen < 64 ? ulen : 64), (const char *)out);
		plane_error(r, 400, "invalid_argument", msg);
		return -1;
	}
	return 0;
}

/* A signed URL acts as the user it was signed for: the `username` parameter
 * (inside the signature; absent or "" is the default user), never a header.
 * An Authorization header naming anyone else is refused rather than ignored,
 * so that a client relying on it learns why. */
static int signed_user(struct hu_req *r)
{
	const char *u = hu_req_query(r, "username");
	const char *link = u && *u ? u : "user";

	if (parse_user(r) < 0)
		return -1;
	if (r->user && strcmp(r->user, link)) {
		plane_error(r, 403, "permission_denied",
			    "a signed URL acts as the user it was signed for; Authorization cannot change it");
		return -1;
	}
	r->user = u && *u ? u : NULL;
	return 0;
}

static void reply_sandbox_unavailable(struct hu_req *r, const char *id, const struct hu_sbx *s)
{
	char msg[HU_ERR_MSG_MAX];
	json_t *body = json_object();

	/* a holder of its token learns why it is gone (init_death.h) */
	const char *died = s ? NULL : hu_registry_death(hu_req_daemon(r)->reg, id, NULL, hu_req_header(r, "X-Access-Token"));
	/* E2B's own wording for an unknown sandbox: its SDK tests compare the
	 * message (the id is in sandboxId beside it) */
	if (died)
		snprintf(msg, sizeof(msg), "The sandbox was not found: %s", died);
	else if (s)
		snprintf(msg, sizeof(msg), "sandbox '%.64s' is paused", id);
	else
		snprintf(msg, sizeof(msg), "The sandbox was not found");
	if (body) {
		json_object_set_new(body, "sandboxId", hu_json_text(id));
		json_object_set_new(body, "message", hu_json_text(msg));
		json_object_set_new(body, "code", json_integer(502));
	}
	hu_reply_json(r, 502, body);
}

/* `s` is the sandbox a signed URL resolved to (already verified), or NULL
 * to look sbx_id up and check X-Access-Token (or a signature). */
static void dispatch_data_plane(struct hu_req *r, const char *sbx_id, struct hu_sbx *s, bool forwarded)
{
	struct hu_daemon *d = hu_req_daemon(r);
	bool signature_ok = s != NULL;

	if (!s && d->reg && strlen(sbx_id) < HU_ID_MAX)
		s = hu_registry_get(d->reg, sbx_id);
	/* envd's health probe carries no token: the SDK uses it to tell a dead
	 * or paused sandbox (502) from a live one. It never resumes one: an
	 * unauthenticated request must not wake sandboxes up. */
	if (!s && strlen(sbx_id) < HU_ID_MAX && hu_cluster_route_elsewhere(r, sbx_id, NULL, forwarded, HU_FWD_RELAYED))
		return;
	if (!s || (s->state != HU_SBX_RUNNING && (!s->auto_resume || !strcmp(r->path, "/health")))) {
		reply_sandbox_unavailable(r, sbx_id, s);
		return;
	}
	r->target = s;
	snprintf(r->target_id, sizeof(r->target_id), "%s", s->id);
	if (r->method == EVHTTP_REQ_GET && !strcmp(r->path, "/health")) {
		hu_reply_empty(r, 204);
		return;
	}
	if (!signature_ok && !hu_req_header(r, "X-Access-Token") && hu_signed_present(r)) {
		if (!hu_signed_check(r, s))
			return; /* answered */
		signature_ok = true;
	}
	if (!signature_ok && !token_ok(s, hu_req_header(r, "X-Access-Token"))) {
		plane_error(r, 401, "unauthenticated", "missing or wrong X-Access-Token");
		return;
	}
	if (signature_ok ? signed_user(r) < 0 : parse_user(r) < 0)
		return;
	/* autoResume: the request goes on as if the sandbox had never slept */
	if (s->state == HU_SBX_PAUSED) {
		hu_err err;
		if (hu_sbx_resume(d, s, 0, &err) < 0) {
			hu_log(HU_LOG_WARN, s->id, r->id, "auto-resume: %s", err.msg);
			/* no room for it now (admission, docs/operations.md): 503 and
			 * Retry-After, so the client comes back rather than taking
			 * the sandbox for gone */
			if (err.code == ENOMEM)
				hu_reply_err(r, &err);
			else
				reply_sandbox_unavailable(r, sbx_id, s);
			return;
		}
		hu_stat_add(HU_STAT_AUTO_RESUMES, 1);
	}
	if (r->ev)
		hu_stat_add(HU_STAT_DATA_BYTES_IN, evbuffer_get_length(evhttp_request_get_input_buffer(r->ev)));
	hu_sbx_touch(s);
	route(r, hu_data_routes, hu_n_data_routes, 1, forwarded);
}

/* A port other than envd's. With public traffic (the default, as on E2B)
 * the port needs no credential; a sandbox created with allowPublicTraffic
 * false needs its traffic token on every request. Only a request that got
 * this far may resume a paused sandbox (autoResume). */
static void dispatch_port(struct hu_req *r, const char *sbx_id, uint16_t port, bool forwarded)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct hu_sbx *s = d->reg && strlen(sbx_id) < HU_ID_MAX ? hu_registry_get(d->reg, sbx_id) : NULL;

	if (!s && strlen(sbx_id) < HU_ID_MAX && hu_cluster_route_elsewhere(r, sbx_id, NULL, forwarded, HU_FWD_RELAYED))
		return;
	if (!s || (s->state != HU_SBX_RUNNING && !s->auto_resume)) {
		reply_sandbox_unavailable(r, sbx_id, s);
		return;
	}
	r->target = s;
	snprintf(r->target_id, sizeof(r->target_id), "%s", s->id);
	if (s->traffic_token[0]) {
		const char *given = hu_req_header(r, "E2B-Traffic-Access-Token");
		size_t n = strlen(s->traffic_token);
		if (!given || strlen(given) != n || CRYPTO_memcmp(given, s->traffic_token, n) != 0) {
			hu_reply_error(r, 403, "port %u of sandbox %s needs its E2B-Traffic-Access-Token", (unsigned)port,
				       s->id);
			return;
		}
	}
	if (s->state == HU_SBX_PAUSED) {
		hu_err err;
		if (hu_sbx_resume(d, s, 0, &err) < 0) {
			hu_log(HU_LOG_WARN, s->id, r->id, "auto-resume: %s", err.msg);
			reply_sandbox_unavailable(r, sbx_id, s);
			return;
		}
		hu_stat_add(HU_STAT_AUTO_RESUMES, 1);
	}
	hu_sbx_touch(s);
	hu_ingress_handle(r, s, port);
}

/* E2b-Sandbox-Port as a port number; 0 when absent or not one. */
static uint16_t header_port(struct hu_req *r)
{
	const char *h = hu_req_header(r, "E2b-Sandbox-Port");
	size_t n = h ? strspn(h, "0123456789") : 0;
	if (!h || n == 0 || n > 5 || h[n])
		return 0;
	unsigned long v = strtoul(h, NULL, 10);
	return v <= 65535 ? (uint16_t)v : 0;
}

/* Host `<port>-<id>.<sandbox_domain>[:listen port]` -> port and id. */
static uint16_t host_port(struct hu_req *r, char *id, size_t cap)
{
	const char *host = hu_req_header(r, "Host");
	const char *domain = hu_req_daemon(r)->cfg.sandbox_domain;
	size_t digits, dlen = strlen(domain);

	if (!host || !hu_signed_host_id(host, id, cap))
		return 0;
	digits = strspn(host, "0123456789");
	const char *rest = host + digits + 1 + strlen(id) + 1; /* after "<port>-<id>." */
	size_t rlen = strcspn(rest, ":");
	if (rlen != dlen || strncasecmp(rest, domain, dlen) || (rest[rlen] && strspn(rest + rlen + 1, "0123456789") !=
									       strlen(rest + rlen + 1)))
		return 0;
	unsigned long v = strtoul(host, NULL, 10);
	return v >= 1 && v <= 65535 ? (uint16_t)v : 0;
}

/* A signed URL for another node's sandbox (hu_signed_resolve): it goes to
 * the owner named, which checks the signature against that sandbox's token
 * with one hash, as for a client that sent E2b-Sandbox-Id. */
static void signed_elsewhere(struct hu_req *r, const char *id, bool forwarded)
{
	struct evkeyvalq *hs = evhttp_request_get_input_headers(r->ev);

	if (evhttp_add_header(hs, "E2b-Sandbox-Id", id) < 0) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	if (!hu_cluster_route_elsewhere(r, id, NULL, forwarded, HU_FWD_RELAYED))
		hu_reply_error(r, 401, "invalid signature");
}

void hu_dispatch(struct hu_req *r)
{
	const char *sbx_id = hu_req_header(r, "E2b-Sandbox-Id");
	struct hu_sbx *signed_for;
	char host_id[HU_ID_MAX];
	bool forwarded;
	uint16_t port;

	/* a call another node forwarded proves it (cluster/forward_auth.h) */
	if (hu_cluster_accept_forwarded(r, &forwarded) < 0)
		return;
	if (sbx_id && (port = header_port(r)) && port != HU_ENVD_PORT)
		dispatch_port(r, sbx_id, port, forwarded);
	else if (sbx_id)
		dispatch_data_plane(r, sbx_id, NULL, forwarded);
	else if ((port = host_port(r, host_id, sizeof(host_id))) && port != HU_ENVD_PORT)
		dispatch_port(r, host_id, port, forwarded);
	else if (port == HU_ENVD_PORT)
		dispatch_data_plane(r, host_id, NULL, forwarded);
	else if (hu_signed_present(r)) {
		/* a signed /files URL names its sandbox only through the signature */
		if ((signed_for = hu_signed_resolve(r, host_id, sizeof(host_id))))
			dispatch_data_plane(r, signed_for->id, signed_for, forwarded);
		else if (host_id[0])
			signed_elsewhere(r, host_id, forwarded);
	} else if (!strcmp(r->path, "/health") && r->method == EVHTTP_REQ_GET)
		hu_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
	else if (!strncmp(r->path, HU_TPL_FETCH_PATH, strlen(HU_TPL_FETCH_PATH)))
		hu_cluster_template_serve(r, forwarded); /* node to node only */
	else
		route(r, hu_control_routes, hu_n_control_routes, 0, forwarded);
}

/* Bodies that go on to a sandbox as they arrive (never held whole): what a
 * port's server is sent, and envd uploads. Decided from the head alone,
 * the same way hu_dispatch routes. */
static bool held_here(struct hu_req *r, const char *id)
{
	struct hu_daemon *d = hu_req_daemon(r);

	/* one host: an unknown sandbox is a 404 whatever its body */
	if (!d->cluster)
		return true;
	return d->reg && strlen(id) < HU_ID_MAX && hu_registry_get(d->reg, id);
}

bool hu_dispatch_streams_body(struct hu_req *r)
{
	const char *sbx_id = hu_req_header(r, "E2b-Sandbox-Id");
	char host_id[HU_ID_MAX];
	uint16_t port;

	/* A call for another node's sandbox is forwarded, and cluster/forward.c
	 * sends on a body it has whole (bounded by max_body): streaming through
	 * a forwarding node is not built yet. */
	if (sbx_id && !held_here(r, sbx_id))
		return false;
	if (sbx_id && (port = header_port(r)) && port != HU_ENVD_PORT)
		return true;
	bool data_plane = sbx_id != NULL;
	if (!sbx_id && (port = host_port(r, host_id, sizeof(host_id)))) {
		if (!held_here(r, host_id))
			return false;
		if (port != HU_ENVD_PORT)
			return true;
		data_plane = true;
	}
	if (!data_plane && !hu_signed_present(r))
		return false;
	/* a signed upload that names no sandbox may be for another node's,
	 * known only once the signature is checked: held whole, as above */
	if (!data_plane && hu_req_daemon(r)->cluster)
		return false;
	return r->method == EVHTTP_REQ_POST && !strcmp(r->path, "/files");
}

void hu_dispatch_stream_opened(struct hu_req *r)
{
	hu_sbx_stream_begin(hu_req_sbx(r));
}

void hu_dispatch_stream_closed(void *app, const char *target_id)
{
	struct hu_daemon *d = app;
	struct hu_sbx *s = d->reg ? hu_registry_get(d->reg, target_id) : NULL;
	if (s) /* NULL once the sandbox is gone */
		hu_sbx_stream_end(s);
}
