/*
 * A sandbox's network as the API sees it: whether it gets internet access
 * (the client's allow_internet_access and the host's network mode), its
 * allowOut/denyOut rules on create and their JSON echo (PUT
 * /sandboxes/{id}/network is api/api_network.c). The runtime does the
 * enforcing (runtime/net.h).
 */
#ifndef HUTCH_DAEMON_SBX_NETWORK_H
#define HUTCH_DAEMON_SBX_NETWORK_H

#include <jansson.h>

#include "daemon/sandboxes/new_sandbox.h"
#include "daemon/core/daemon.h"
#include "daemon/sandboxes/registry.h"

/* Decide s->internet and take the request's rules. EINVAL (400) when the
 * client asks for internet access or rules that this host cannot give. */
int hu_sbx_net_init(struct hu_daemon *d, const struct hu_new_sandbox *req, struct hu_sbx *s, hu_err *err);
/* {"allowOut": [...], "denyOut": [...]} or NULL when no rules were given. */
json_t *hu_sbx_json_network(const struct hu_sbx *s);
/* PUT /sandboxes/{id}/network: s gets `rules` (allow_internet: -1 when not
 * given, else it must match what s has), live at once unless its memory
 * is released, and stored. EINVAL when s has no internet access. A failure
 * changes nothing. */
int hu_sbx_set_network(struct hu_daemon *d, struct hu_sbx *s, const struct hu_net_rules *rules, int allow_internet,
		       hu_err *err);
/* The config file's network_* keys over the runtime's defaults. */
void hu_daemon_net_config(const struct hu_config *cfg, struct hu_runtime_config *rc);

#endif
