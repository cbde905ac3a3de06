/* The request (request.h): its target, parsed once, and the accessors of
 * its headers, query and body. */
#include <ctype.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/common/json.h"
#include "daemon/http/http_internal.h"

const uint8_t *hu_req_body(struct hu_req *r, size_t *len)
{
	struct evbuffer *in;
	const uint8_t *data;

	*len = 0;
	if (!r->ev)
		return (const uint8_t *)"";
	in = evhttp_request_get_input_buffer(r->ev);
	*len = evbuffer_get_length(in);
	if (*len == 0)
		return (const uint8_t *)"";
	data = evbuffer_pullup(in, -1);
	if (!data)
		*len = 0;
	return data ? data : (const uint8_t *)"";
}

int hu_req_json(struct hu_req *r, json_t **out)
{
	size_t len;
	const uint8_t *body = hu_req_body(r, &len);
	hu_err err;

	if (len == 0) {
		*out = json_object();
		if (*out)
			return 0;
		hu_reply_error(r, 500, "out of memory");
		return -1;
	}
	if (hu_json_parse_object(body, len, out, &err) < 0) {
		hu_reply_error(r, 400, "request body: %s", err.msg);
		return -1;
	}
	return 0;
}

const char *hu_req_header(struct hu_req *r, const char *name)
{
	if (!r->ev)
		return NULL;
	return evhttp_find_header(evhttp_request_get_input_headers(r->ev), name);
}

const char *hu_req_query(struct hu_req *r, const char *name)
{
	return r->query_kv ? evhttp_find_header(r->query_kv, name) : NULL;
}

static int percent_encoding_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '%' && (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
				    !isxdigit((unsigned char)s[i + 2])))
			return 0;
	return 1;
}

int hu_req_parse_target(struct hu_req *r)
{
	struct req_priv *p = hu_req_priv(r);
	const char *target = evhttp_request_get_uri(r->ev);
	const char *path = target, *query = NULL;
	size_t path_len;

	/* Until the path is decoded, logs show the raw target. */
	snprintf(r->path, sizeof(r->path), "%s", target ? target : "");

	/* Absolute-form ("http://host/p?q", proxies): take its path and query. */
	if (target && target[0] != '/') {
		const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(r->ev);
		path = u ? evhttp_uri_get_path(u) : NULL;
		query = u ? evhttp_uri_get_query(u) : NULL;
		if (!path || !*path)
			path = "/";
		if (path[0] != '/') {
			hu_reply_error(r, 400, "request target must be a path");
			return -1;
		}
		path_len = strlen(path);
	} else if (target) {
		path_len = strcspn(target, "?#");
		if (target[path_len] == '?') {
			size_t qlen = strcspn(target + path_len + 1, "#");
			p->query_buf = strndup(target + path_len + 1, qlen);
			if (!p->query_buf) {
				hu_reply_error(r, 500, "out of memory");
				return -1;
			}
		}
	} else {
		hu_reply_error(r, 400, "no request target");
		return -1;
	}
	if (query && !(p->query_buf = strdup(query))) {
		hu_reply_error(r, 500, "out of memory");
		return -1;
	}

	if (!percent_encoding_valid(path, path_len)) {
		hu_reply_error(r, 400, "bad percent-encoding in the request path");
		return -1;
	}
	_cleanup_free_ char *raw = strndup(path, path_len);
	size_t n = 0;
	_cleanup_free_ char *decoded = raw ? evhttp_uridecode(raw, 0, &n) : NULL;
	if (!decoded) {
		hu_reply_error(r, 500, "out of memory");
		return -1;
	}
	if (n != strlen(decoded)) {
		hu_reply_error(r, 400, "the request path contains a NUL byte");
		return -1;
	}
	if (n >= sizeof(r->path)) {
		hu_reply_error(r, 414, "the request path is longer than %zu bytes", sizeof(r->path) - 1);
		return -1;
	}
	memcpy(r->path, decoded, n + 1);

	r->query = p->query_buf;
	if (r->query) {
		if (evhttp_parse_query_str(r->query, &p->query_kv) < 0) {
			hu_reply_error(r, 400, "malformed query string");
			return -1;
		}
		r->query_kv = &p->query_kv;
	}
	return 0;
}

