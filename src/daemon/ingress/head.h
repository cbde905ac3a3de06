/*
 * The request head sent to a sandbox's server, rebuilt from the parsed
 * request: what reaches the server is what the client sent, apart from the
 * hop-by-hop headers (RFC 9110 7.6.1, and those the client's Connection
 * header names), hutch's own traffic token, and the X-Forwarded-* headers,
 * which are set here and never passed on from the client (they would let it
 * spoof its address).
 */
#ifndef HUTCH_DAEMON_INGRESS_HEAD_H
#define HUTCH_DAEMON_INGRESS_HEAD_H

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct hu_head_in {
	const char *method;
	const char *target;           /* the raw request target */
	const struct evkeyvalq *headers;
	int64_t body_length;          /* the body's Content-Length, -1: chunked (sent chunked) */
	bool body_expected;           /* POST/PUT/PATCH: a Content-Length even when 0 */
	const char *client_addr;      /* X-Forwarded-For */
	const char *proto;            /* X-Forwarded-Proto: "http" or "https" */
	const char *host;             /* the Host to send instead of the client's (maskRequestHost), or NULL */
};

/* Append the head to out. *upgrade is set when the request asks for an
 * Upgrade (the relay is then two-way). -1 on a target or header that cannot
 * be sent as is (CR or LF in it), or out of memory. */
int hu_head_build(const struct hu_head_in *in, struct evbuffer *out, bool *upgrade, hu_err *err);

#endif
