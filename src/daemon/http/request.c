/* The accessors of a request's headers, query and body (request.h). */
#include <ctype.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/common/json.h"
#include "daemon/http/request.h"

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
