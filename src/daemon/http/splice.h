/*
 * A sized body moved from one socket to another without passing through
 * the daemon's memory: splice(2) from the source socket into a pipe and
 * from the pipe into the destination socket, in steps as large as the pipe
 * (1 MiB where the kernel allows it). Backpressure is the pipe's: while the
 * destination does not take what the pipe holds, the source is not read
 * (and TCP carries the pressure back to its sender).
 *
 * Both sockets must be non-blocking and stay owned by the caller; their
 * other users (bufferevents) must neither read the source nor write the
 * destination while a splice runs. Bytes the destination was owed before
 * the body (a response head queued in an evbuffer) go out first.
 */
#ifndef HUTCH_DAEMON_HTTP_SPLICE_H
#define HUTCH_DAEMON_HTTP_SPLICE_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

struct hu_splice;

struct hu_splice_cbs {
	/* all `len` bytes were written to the destination */
	void (*on_done)(void *arg);
	/* the move failed: the source ended early or failed (from_source),
	 * or the destination failed or did not take anything for the write
	 * timeout */
	void (*on_fail)(void *arg, bool from_source, const char *why);
	void *arg;
};

/* Start moving `len` bytes from `from` to `to`, after what `queued` holds:
 * NULL (nothing) or a socket bufferevent's output, whose writes are off
 * (it is drained as it is written, and must not be added to meanwhile). `write_timeout` (NULL: none) bounds how long the destination
 * may take nothing. NULL with err when no pipe can be had (the caller moves
 * the body its usual way then). The callbacks are the last thing the splice
 * does: the owner may free it from them. */
struct hu_splice *hu_splice_start(struct event_base *base, int from, int to, uint64_t len, struct evbuffer *queued,
				  const struct timeval *write_timeout, const struct hu_splice_cbs *cbs, hu_err *err);
/* Body bytes written to the destination so far. */
uint64_t hu_splice_moved(const struct hu_splice *sp);
/* Stop and free (NULL: nothing). What the pipe held is lost: the owner cuts
 * the destination's connection unless the splice was done. */
void hu_splice_free(struct hu_splice *sp);

#endif
