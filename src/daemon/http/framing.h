/*
 * HTTP/1.1 message body framing (RFC 9112 section 6-7): a body of a known
 * length, or chunked. A pure decoder: bytes go in in pieces of any size, the
 * body's own bytes come out as spans of the input, and the framing bytes
 * (chunk-size lines, extensions, CRLFs, trailers) are consumed. Memory is a
 * few counters whatever the input: a chunk-size line (with its extensions)
 * may not exceed HU_FRAMING_MAX_LINE bytes and the trailer section
 * HU_FRAMING_MAX_TRAILERS, and a chunk size that does not fit in 62 bits is
 * an error, as is a total that passes the decoder's limit.
 *
 * Used for request bodies (http/body.c), for the responses of servers
 * inside sandboxes (ingress/) and for those of other nodes (cluster/), so
 * all are parsed by the same code.
 */
#ifndef HUTCH_DAEMON_HTTP_FRAMING_H
#define HUTCH_DAEMON_HTTP_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define HU_FRAMING_MAX_LINE 4096
#define HU_FRAMING_MAX_TRAILERS (16u << 10)

enum hu_framing_mode {
	HU_FRAMING_LENGTH,  /* Content-Length bytes */
	HU_FRAMING_CHUNKED, /* Transfer-Encoding: chunked */
	HU_FRAMING_CLOSE,   /* until the connection closes (responses only) */
};

struct hu_framing {
	enum hu_framing_mode mode;
	int st;              /* chunked: where in the grammar */
	uint64_t left;       /* LENGTH: bytes to go; CHUNKED: of the current chunk */
	uint64_t total;      /* body bytes so far */
	uint64_t limit;      /* more body bytes than this is an error (E2BIG); 0: none */
	size_t line;         /* bytes of the current size line or trailer section */
	unsigned digits;     /* hex digits of the current chunk size */
	bool done;
};

void hu_framing_init(struct hu_framing *f, enum hu_framing_mode mode, uint64_t length, uint64_t limit);
/* Consume some of p[0..n): *used bytes, of which the span
 * p[*data_off .. *data_off + *data_len) is body content (possibly empty).
 * Call again with the rest. 1: the body is complete (nothing after *used
 * belongs to it), 0: more to come, -1: malformed (EINVAL) or over the limit
 * (E2BIG); err says which. LENGTH and CLOSE framing never read the bytes:
 * p may be NULL there (a caller passes how many bytes it holds, unread). */
int hu_framing_step(struct hu_framing *f, const uint8_t *p, size_t n, size_t *used, size_t *data_off,
		    size_t *data_len, hu_err *err);
/* The input ended (EOF). 0 if the body was complete (CLOSE framing always
 * is), else -1 (EINVAL, "truncated"). */
int hu_framing_eof(struct hu_framing *f, hu_err *err);

#endif
