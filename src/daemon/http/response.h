/*
 * The response head a sandbox's server sends, before it is passed on: read
 * whole (bounded, so a server sending endless headers gets its client a
 * 502 instead of holding it), and, for a plain response, its connection
 * headers replaced by `Connection: close`. The client then knows the
 * connection ends with this response and never sends another request on it
 * (which the server, told `Connection: close`, would not read). A 101
 * Switching Protocols head passes unchanged; interim 1xx heads (103 Early
 * Hints) pass unchanged and the next head is read.
 */
#ifndef HUTCH_DAEMON_HTTP_RESPONSE_H
#define HUTCH_DAEMON_HTTP_RESPONSE_H

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon/http/framing.h"
#include "util/err.h"

#define HU_RESPONSE_HEAD_MAX (64u * 1024)

/* Move complete heads from `in` to `out`. 1: the final head is in out
 * (*status its code, 101 for a switch), and what follows it stays in in;
 * 0: more bytes needed; -1: not an HTTP/1.x response, or a head over
 * HU_RESPONSE_HEAD_MAX. */
int hu_response_head(struct evbuffer *in, struct evbuffer *out, int *status, hu_err *err);
/* The same, and *keep_alive says whether the server's connection may carry
 * another request after this response: an HTTP/1.1 final head without
 * `Connection: close` (the port ingress keeps such connections for reuse). */
int hu_response_head_conn(struct evbuffer *in, struct evbuffer *out, int *status, bool *keep_alive, hu_err *err);

/* The final head of what hu_response_head wrote (interim 1xx heads before
 * it are skipped): its status, reason phrase and headers (appended to
 * `headers`, in order; the `Connection: close` it added is left out). -1
 * (EPROTO) on a header line that is not "name: value" (folded lines
 * included). */
int hu_response_fields(struct evbuffer *heads, int *status, char *reason, size_t cap, struct evkeyvalq *headers,
		       hu_err *err);

/* How the body after a final head with fields `headers` and `status` is
 * framed (RFC 9112 6.3): empty for the answer to a HEAD request and for
 * 1xx, 204 and 304; chunked; Content-Length bytes; else until the
 * connection closes. `limit` as for hu_framing_init. -1 (EPROTO) when the
 * Transfer-Encoding is anything but chunked alone, or the Content-Length
 * is not a number. */
int hu_response_framing(const struct evkeyvalq *headers, int status, bool head_request, uint64_t limit,
			struct hu_framing *f, hu_err *err);

#endif
