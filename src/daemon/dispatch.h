/*
 * The dispatcher (dispatch.c): the hooks hutch serve gives its HTTP server.
 */
#ifndef HUTCH_DAEMON_DISPATCH_H
#define HUTCH_DAEMON_DISPATCH_H

#include <stdbool.h>

#include "daemon/core/daemon.h"

/* Every request: pick the plane, authenticate, route (struct hu_http_hooks.dispatch). */
void hu_dispatch(struct hu_req *r);
/* Bodies streamed to their handler (struct hu_http_hooks.streams_body). */
bool hu_dispatch_streams_body(struct hu_req *r);
/* A data-plane stream keeps its sandbox from idling while it is open. */
void hu_dispatch_stream_opened(struct hu_req *r);
void hu_dispatch_stream_closed(void *app, const char *target_id);

#endif
