/*
 * Shared pieces of the control plane (api_sandboxes.c, api_list.c,
 * sbx_view.c): the E2B JSON views of a sandbox and the team-scoped lookup.
 */
#ifndef HUTCH_DAEMON_API_SANDBOXES_H
#define HUTCH_DAEMON_API_SANDBOXES_H

#include <jansson.h>

#include "daemon/core/daemon.h"
#include "daemon/sandboxes/registry.h"

/* The sandbox named by the route's {id} if it belongs to the caller's team;
 * otherwise replies 404 (another team's sandbox is indistinguishable from a
 * missing one) and returns NULL. */
struct hu_sbx *hu_api_own_sandbox(struct hu_req *r);

/* What a list shows of a sandbox (ListedSandbox), from this node's
 * registry or from another node's row in the store (api_list.c). */
struct hu_listed {
	char id[HU_ID_MAX];
	char template_id[HU_ID_MAX];
	enum hu_sbx_state state;
	int64_t started_at_ms;
	int64_t end_at_ms;
	int cpu_count;
	uint64_t memory_bytes, disk_bytes;
	json_t *metadata; /* a reference of the view's own (hu_listed_clear) */
};
void hu_listed_of_sbx(const struct hu_sbx *s, struct hu_listed *out);
/* A row's view; the row's metadata is taken (row->metadata NULL after). */
void hu_listed_of_row(const struct hu_daemon *d, struct hu_sandbox_row *row, struct hu_listed *out);
void hu_listed_clear(struct hu_listed *v);
json_t *hu_listed_json(const struct hu_listed *v);

/* E2B views (sbx_view.c); NULL on allocation failure. */
json_t *hu_sbx_json_sandbox(const struct hu_sbx *s); /* Sandbox: create, connect, resume */
json_t *hu_sbx_json_listed(const struct hu_sbx *s);  /* ListedSandbox */
json_t *hu_sbx_json_detail(const struct hu_sbx *s);  /* SandboxDetail */

#endif
