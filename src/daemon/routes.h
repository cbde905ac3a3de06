/*
 * Every route of hutch serve, in two tables (routes.c): the control plane
 * (E2B REST, by X-API-KEY) and the data plane (envd, for the sandbox named
 * by E2b-Sandbox-Id). The dispatcher (dispatch.c) picks the table; adding an
 * endpoint is one line here and a handler in api/ or envd/.
 */
#ifndef HUTCH_DAEMON_ROUTES_H
#define HUTCH_DAEMON_ROUTES_H

#include <stddef.h>

#include "daemon/http/route.h"
#include "util/err.h"

/* The credentials a control-plane route needs (struct hu_route.flags). */
enum hu_auth {
	HU_AUTH_NONE = 0,    /* GET /metrics */
	HU_AUTH_API_KEY = 1, /* X-API-KEY -> the team (r->principal) */
};

extern const struct hu_route hu_control_routes[];
extern const size_t hu_n_control_routes;
extern const struct hu_route hu_data_routes[];
extern const size_t hu_n_data_routes;

/* Every pattern of both tables is well formed (checked at start-up). */
int hu_routes_check(hu_err *err);

#endif
