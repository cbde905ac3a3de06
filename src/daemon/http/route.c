/* Route tables (route.h). */
#include "daemon/http/route.h"

#include <string.h>

#define ROUTE_PATTERN_MAX 256

bool hu_route_pattern_valid(const char *pattern)
{
	const char *brace = strchr(pattern, '{');

	return pattern[0] == '/' && strlen(pattern) < ROUTE_PATTERN_MAX &&
	       (!brace || (brace[-1] == '/' && !strncmp(brace, "{id}", 4) && (brace[4] == '/' || !brace[4]) &&
			   !strchr(brace + 1, '{')));
}

/* Segment-by-segment match; "{id}" takes one non-empty segment into param. */
static int route_match(const char *pat, const char *path, char *param, size_t cap)
{
	param[0] = '\0';
	while (*pat && *path) {
		if (*pat != '/' || *path != '/')
			return 0;
		pat++;
		path++;
		size_t pl = strcspn(pat, "/"), sl = strcspn(path, "/");
		if (pl == 4 && !memcmp(pat, "{id}", 4)) {
			if (sl == 0 || sl >= cap)
				return 0;
			memcpy(param, path, sl);
			param[sl] = '\0';
		} else if (pl != sl || memcmp(pat, path, pl)) {
			return 0;
		}
		pat += pl;
		path += sl;
	}
	return !*pat && !*path;
}

const struct hu_route *hu_route_find(const struct hu_route *table, size_t n, struct hu_req *r, int *status)
{
	int path_known = 0;

	for (size_t i = 0; i < n; i++) {
		if (!route_match(table[i].pattern, r->path, r->param, sizeof(r->param)))
			continue;
		path_known = 1;
		if (table[i].method == r->method)
			return &table[i];
	}
	r->param[0] = '\0';
	*status = path_known ? 405 : 404;
	return NULL;
}
