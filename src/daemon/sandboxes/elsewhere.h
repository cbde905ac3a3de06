/*
 * A sandbox that this node does not have, but another node of the shared
 * store owns (store.h "nodes"): the caller is told where it is instead of
 * a plain 404. While the owner's lease is expired the answer is 503 with
 * Retry-After naming the node (it is down, its sandboxes may come back
 * with it); while it is alive, 421 naming the node (calls are not
 * forwarded between nodes: send them to the owner).
 */
#ifndef HUTCH_DAEMON_SANDBOXES_ELSEWHERE_H
#define HUTCH_DAEMON_SANDBOXES_ELSEWHERE_H

#include "daemon/http/request.h"

/* 1 when r was answered so, 0 when no other node owns the sandbox (the
 * caller answers as it would on one host). `team`: the caller's team (the
 * control plane: another team's sandbox stays not found, and the answer
 * names the owner's address); NULL on the data plane, whose caller is not
 * authenticated yet (the answer names the node only). */
int hu_sbx_answer_elsewhere(struct hu_req *r, const char *id, const char *team);

#endif
