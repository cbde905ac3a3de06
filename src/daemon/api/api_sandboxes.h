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

/* E2B views (sbx_view.c); NULL on allocation failure. */
json_t *hu_sbx_json_sandbox(const struct hu_sbx *s); /* Sandbox: create, connect, resume */
json_t *hu_sbx_json_listed(const struct hu_sbx *s);  /* ListedSandbox */
json_t *hu_sbx_json_detail(const struct hu_sbx *s);  /* SandboxDetail */

#endif
