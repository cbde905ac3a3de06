/*
 * Route tables: which handler answers a method and a path. A pattern is a
 * path with at most one "{id}" segment, e.g. "/sandboxes/{id}/timeout"; the
 * segment it matches lands in r->param. The application keeps its tables
 * (the daemon: src/daemon/routes.c) and picks one per request.
 */
#ifndef HUTCH_DAEMON_HTTP_ROUTE_H
#define HUTCH_DAEMON_HTTP_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/http/request.h"

struct hu_route {
	enum evhttp_cmd_type method;
	const char *pattern;
	unsigned flags; /* the application's (the daemon: which credentials it needs) */
	hu_handler fn;
};

/* Is pattern well formed? (A table is checked once, at start-up.) */
bool hu_route_pattern_valid(const char *pattern);

/* The route of r in table[0..n), with r->param filled; NULL when none
 * matches, and then *status is 404 (no such path) or 405 (the path exists
 * with other methods). */
const struct hu_route *hu_route_find(const struct hu_route *table, size_t n, struct hu_req *r, int *status);

#endif
