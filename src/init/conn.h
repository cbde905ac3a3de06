/*
 * Client connections of hutch-init: accepting (with the SO_PEERCRED check),
 * reading frames, and a bounded output queue per connection.
 *
 * The bound is what gives backpressure end to end: while a connection's queue
 * is over HU_CONN_OUT_BOUND, init stops reading requests from it and stops
 * reading the output of processes it is subscribed to (proc.c), so a slow
 * client slows its processes down instead of growing init's memory.
 */
#ifndef HUTCH_INIT_CONN_H
#define HUTCH_INIT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "init/loop.h"
#include "proto/initproto.h"
#include "util/err.h"

#define HU_CONN_OUT_BOUND (256u * 1024)
#define HU_CONN_MAX 1024

struct hu_proc;
struct hu_fileop_read;
struct hu_fileop_write;

struct hu_conn {
	struct hu_watch watch;
	bool dead;
	struct hu_conn *prev, *next;

	/* The frame being read: header first, then its payload. */
	uint8_t hdr_bytes[HU_PROTO_HEADER_SIZE];
	size_t hdr_got;
	struct hu_frame_hdr hdr;
	uint8_t *payload;
	size_t payload_got;

	/* Encoded frames not yet written; bytes before out_off are sent. */
	struct hu_buf out;
	size_t out_off;

	/* Set while a STDIN request of this connection waits for room in a
	 * process's stdin buffer; requests are not read meanwhile. */
	struct hu_proc *stdin_wait;

	/* File transfers in progress (fileops.c owns them). */
	struct hu_fileop_read *reads;
	struct hu_fileop_write *writes;
};

/* Start accepting on the listening socket. */
int hu_conn_listen(int listen_fd, bool allow_local_peers, hu_err *err);
/* Serve `fd`, a connected socket the runtime handed over in the setup
 * stage's "go" message (hu_sandbox_spec.first_conn_fd), as a client that was
 * accepted: what its peer wrote before init started is read at once. The
 * same peer check applies. fd is closed on failure. */
int hu_conn_adopt(int fd, hu_err *err);
/* Close every connection and the listener (at exit). */
void hu_conn_shutdown(void);

/* Bytes queued and not yet written. */
size_t hu_conn_queued(const struct hu_conn *c);
static inline bool hu_conn_over_bound(const struct hu_conn *c)
{
	return hu_conn_queued(c) > HU_CONN_OUT_BOUND;
}

/* Append complete encoded frames to the output queue. A connection that
 * cannot take them (allocation failure) is closed. */
void hu_conn_send(struct hu_conn *c, const struct hu_buf *frames);
/* Reply helpers for the common shapes. */
void hu_conn_send_empty(struct hu_conn *c, uint8_t type, uint32_t id);
void hu_conn_send_pid(struct hu_conn *c, uint8_t type, uint32_t id, uint32_t pid);
void hu_conn_send_error(struct hu_conn *c, uint32_t id, const hu_err *err);

/* Re-evaluate whether requests are read from c (after stdin_wait or the
 * queue changed). */
void hu_conn_update_interest(struct hu_conn *c);

/* Iterate over live connections. */
struct hu_conn *hu_conn_first(void);

#endif
