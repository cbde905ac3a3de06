/*
 * The client side of the hutch-init protocol (proto/initproto.h): blocking
 * helpers for the CLI, the daemon and tests. All functions follow the error
 * convention of util/err.h.
 */
#ifndef HUTCH_RUNTIME_INITCLIENT_H
#define HUTCH_RUNTIME_INITCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/initproto.h"
#include "util/err.h"

/* Connect to init's unix socket at sock_path; *fd is CLOEXEC and blocking. */
int hu_init_connect(const char *sock_path, int *fd, hu_err *err);
/* Bound every later hu_init_recv on fd (0 = wait forever); a recv that
 * times out fails with ETIMEDOUT. */
int hu_init_set_timeout(int fd, unsigned timeout_ms, hu_err *err);

/* Write all frames in b. */
int hu_init_send(int fd, const struct hu_buf *b, hu_err *err);
/* Read exactly one frame: the header is validated (version, reserved bytes,
 * size limit) and so is the payload's field structure. *payload is malloc'd
 * (never NULL on success, even for an empty payload); the caller frees it.
 * ECONNRESET when the peer closed the connection. */
int hu_init_recv(int fd, struct hu_frame_hdr *hdr, uint8_t **payload, hu_err *err);

/* Turn an ERROR payload into err (code = ERRNO, msg = MESSAGE verbatim).
 * Always returns -1, so `return hu_init_parse_error(...)` reads naturally. */
int hu_init_parse_error(const uint8_t *payload, size_t len, hu_err *err);

/* ---- request builders: each appends one complete frame to b ---------------- */

struct hu_spawn_req {
	const char *const *argv; /* argc entries; argv[0] is searched in PATH */
	size_t argc;
	const char *const *envv; /* "KEY=VALUE", override the defaults */
	size_t envc;
	const char *cwd;         /* NULL: the user's home */
	const char *user;        /* "root" or "user"; NULL: "user" */
	const char *tag;         /* NULL: none */
	bool pty;                /* run on a pseudo-terminal of pty_rows x pty_cols */
	uint16_t pty_rows, pty_cols;
	bool stdin_open;         /* keep stdin open for STDIN (pipes; a pty always has it) */
};

int hu_init_build_spawn(struct hu_buf *b, uint32_t id, const struct hu_spawn_req *req, hu_err *err);
/* STDIN; data longer than HU_PROTO_CHUNK is split into several frames. */
int hu_init_build_stdin(struct hu_buf *b, uint32_t id, uint32_t pid, const void *data, size_t len, hu_err *err);
int hu_init_build_close_stdin(struct hu_buf *b, uint32_t id, uint32_t pid, hu_err *err);
int hu_init_build_signal(struct hu_buf *b, uint32_t id, uint32_t pid, int signum, hu_err *err);
int hu_init_build_resize(struct hu_buf *b, uint32_t id, uint32_t pid, uint16_t rows, uint16_t cols, hu_err *err);
/* ATTACH by pid (tag NULL) or by tag (pid 0). */
int hu_init_build_attach(struct hu_buf *b, uint32_t id, uint32_t pid, const char *tag, hu_err *err);
/* A request with no fields (PING, LIST_PROCS, WRITE_CLOSE). */
int hu_init_build_simple(struct hu_buf *b, uint8_t type, uint32_t id, hu_err *err);
/* A file request: PATH, and DEST (MOVE), DEPTH (LIST_DIR, 0 = default) and
 * USER when given. */
int hu_init_build_file(struct hu_buf *b, uint8_t type, uint32_t id, const char *path, const char *dest,
		       uint32_t depth, const char *user, hu_err *err);
/* WATCH_START; with_entry: events carry the changed path's ENTRY. */
int hu_init_build_watch(struct hu_buf *b, uint32_t id, const char *path, uint32_t depth, const char *user,
			bool with_entry, hu_err *err);
/* WRITE_OPEN with the file's metadata ("key=value" strings, util/filemeta.h). */
int hu_init_build_write_open(struct hu_buf *b, uint32_t id, const char *path, const char *user,
			     const char *const *meta, size_t nmeta, hu_err *err);
/* WRITE_DATA for an open write; split into HU_PROTO_CHUNK frames. */
int hu_init_build_write_data(struct hu_buf *b, uint32_t id, const void *data, size_t len, hu_err *err);

/* ---- events --------------------------------------------------------------- */

/* The common fields of a reply or event, decoded; pointers point into the
 * payload it was parsed from. */
struct hu_init_event {
	uint8_t type;
	uint32_t id;
	uint32_t pid;
	uint8_t stream;
	const uint8_t *data;
	size_t data_len;
	bool exited;     /* EXIT: either exit_code or signum is set */
	int32_t exit_code;
	uint32_t signum; /* 0 unless killed by a signal */
	uint64_t size;   /* READ_END */
	bool more;       /* ENTRIES: more ENTRIES frames follow */
};

int hu_init_parse_event(const struct hu_frame_hdr *hdr, const uint8_t *payload, struct hu_init_event *ev, hu_err *err);

#endif
