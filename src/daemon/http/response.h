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

#include "util/err.h"

#define HU_RESPONSE_HEAD_MAX (64u * 1024)

/* Move complete heads from `in` to `out`. 1: the final head is in out
 * (*status its code, 101 for a switch), and what follows it stays in in;
 * 0: more bytes needed; -1: not an HTTP/1.x response, or a head over
 * HU_RESPONSE_HEAD_MAX. */
int hu_response_head(struct evbuffer *in, struct evbuffer *out, int *status, hu_err *err);
/* As hu_response_head, and once the final head is in out (1), *kept tells
 * whether the server keeps its connection open after this response: HTTP/1.1
 * without `Connection: close` (a client of its own may send it another
 * request then, forwarding between nodes: cluster/forward.c). */
int hu_response_head_kept(struct evbuffer *in, struct evbuffer *out, int *status, bool *kept, hu_err *err);

/* The final head of what hu_response_head wrote (interim 1xx heads before
 * it are skipped): its status, reason phrase and headers (appended to
 * `headers`, in order; the `Connection: close` it added is left out). -1
 * (EPROTO) on a header line that is not "name: value" (folded lines
 * included). */
int hu_response_fields(struct evbuffer *heads, int *status, char *reason, size_t cap, struct evkeyvalq *headers,
		       hu_err *err);

#endif
