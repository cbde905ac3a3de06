/*
 * A sandbox's network as the API sees it: whether it gets internet access
 * (the client's allow_internet_access and the host's network mode), its
 * allowOut/denyOut rules on create, their JSON echo, and
 * PUT /sandboxes/{id}/network. The runtime does the enforcing (runtime/net.h).
 */
#ifndef HUTCH_DAEMON_SBX_NETWORK_H
#define HUTCH_DAEMON_SBX_NETWORK_H

#include <jansson.h>

#include "daemon/api/api_json.h"
#include "daemon/core/daemon.h"
#include "daemon/sandboxes/registry.h"

/* Decide s->internet and take the request's rules. EINVAL (400) when the
 * client asks for internet access or rules that this host cannot give. */
int hu_sbx_net_init(struct hu_daemon *d, const struct hu_new_sandbox *req, struct hu_sbx *s, hu_err *err);
/* {"allowOut": [...], "denyOut": [...]} or NULL when no rules were given. */
json_t *hu_sbx_json_network(const struct hu_sbx *s);
/* The config file's network_* keys over the runtime's defaults. */
void hu_daemon_net_config(const struct hu_config *cfg, struct hu_runtime_config *rc);
/* PUT /sandboxes/{id}/network */
void hu_api_put_network(struct hu_req *r);

#endif
