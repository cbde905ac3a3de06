/*
 * A sandbox's egress rules as JSON, {"allowOut": [...], "denyOut": [...]}:
 * the form the API takes and echoes and the store keeps. Pure code over
 * runtime/net.h (fuzzed through the API decoder).
 */
#ifndef HUTCH_DAEMON_SANDBOXES_NET_RULES_JSON_H
#define HUTCH_DAEMON_SANDBOXES_NET_RULES_JSON_H

#include <jansson.h>

#include "runtime/net.h"
#include "util/err.h"

/* The rules as JSON (a new reference), NULL when out of memory: IPv4
 * entries, then IPv6 ones, then domain names in their canonical form. */
json_t *hu_net_rules_json(const struct hu_net_rules *r);
/* rules from such JSON (absent or null lists are empty), checked as the
 * runtime needs them; EINVAL with a message naming the entry. */
int hu_net_rules_from_json(const json_t *net, struct hu_net_rules *rules, hu_err *err);

#endif
