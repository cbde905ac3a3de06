/*
 * The hutch-init wire protocol: how the daemon (or the CLI) talks to the PID 1
 * of a sandbox over a unix stream socket.
 *
 * Every message is a frame: a fixed 12-byte header followed by a payload.
 *
 *   offset size  field
 *   0      1     version   HU_PROTO_VERSION; a frame of any other version is a
 *                          protocol error and the peer closes the connection
 *   1      1     type      enum hu_msg_type
 *   2      2     reserved  must be 0
 *   4      4     id        request id chosen by the client (big endian); replies
 *                          and events carry the id of the request they answer
 *   8      4     len       payload length (big endian), <= HU_PROTO_MAX_PAYLOAD
 *
 * The payload is a sequence of fields, each: u16 tag (big endian), u32 length
 * (big endian), then `length` bytes. Fields may repeat (ARG, ENV, ENTRY, PROC).
 * Integers inside fields are big endian of the width given below. A field that
 * runs past the payload, a frame over the size limit or a wrong version is a
 * protocol error. Unknown tags are skipped, so the protocol can grow.
 *
 * A connection is a session: a process started (SPAWN) or attached (ATTACH)
 * on a connection streams its OUTPUT and EXIT events to that connection. Many
 * connections may be attached to one process. When a connection closes, its
 * processes keep running (E2B semantics: a client disconnect does not kill).
 * Only peers outside the sandbox's PID namespace may connect (init checks
 * SO_PEERCRED: the peer pid reads as 0 from inside).
 */
#ifndef HUTCH_PROTO_INITPROTO_H
#define HUTCH_PROTO_INITPROTO_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define HU_PROTO_VERSION 1
#define HU_PROTO_HEADER_SIZE 12
#define HU_PROTO_MAX_PAYLOAD (1u << 20) /* 1 MiB */
#define HU_PROTO_CHUNK 65536            /* data chunk size for OUTPUT/READ_DATA */

enum hu_msg_type {
	/* client -> init requests (id = request id) */
	HU_MSG_PING = 1,         /* -> PONG, after the events the connection's watches had
	                          * queued in the kernel */
	HU_MSG_SPAWN = 2,        /* ARG+ ENV* CWD? USER? PTY_ROWS/PTY_COLS? STDIN? TAG? -> SPAWNED{PID} | ERROR */
	HU_MSG_ATTACH = 3,       /* PID | TAG -> ATTACHED{PID} (+ EXIT at once if it already ended) | ERROR */
	HU_MSG_STDIN = 4,        /* PID DATA -> OK | ERROR */
	HU_MSG_CLOSE_STDIN = 5,  /* PID -> OK | ERROR */
	HU_MSG_SIGNAL = 6,       /* PID SIGNUM -> OK | ERROR (sent to the process group) */
	HU_MSG_RESIZE = 7,       /* PID PTY_ROWS PTY_COLS -> OK | ERROR */
	HU_MSG_LIST_PROCS = 8,   /* -> PROCS{PROC*} */
	HU_MSG_STAT = 20,        /* PATH USER? -> ENTRIES{ENTRY} | ERROR */
	HU_MSG_LIST_DIR = 21,    /* PATH DEPTH? USER? -> ENTRIES{MORE ENTRY*}* ENTRIES{ENTRY*} | ERROR */
	HU_MSG_MKDIR = 22,       /* PATH USER? -> ENTRIES{ENTRY} | ERROR (EEXIST if it exists) */
	HU_MSG_MOVE = 23,        /* PATH DEST USER? -> ENTRIES{ENTRY of DEST} | ERROR */
	HU_MSG_REMOVE = 24,      /* PATH USER? -> OK | ERROR (directories recursively) */
	HU_MSG_READ = 25,        /* PATH USER? -> READ_DATA* then READ_END | ERROR */
	HU_MSG_WRITE_OPEN = 26,  /* PATH USER? META* -> OK | ERROR; creates parents, truncates, sets META */
	HU_MSG_WRITE_DATA = 27,  /* DATA (same id as WRITE_OPEN) -> nothing unless ERROR */
	HU_MSG_WRITE_CLOSE = 28, /* (same id) -> ENTRIES{ENTRY} | ERROR */
	HU_MSG_WATCH_START = 29, /* PATH DEPTH? USER? -> OK, then WATCH_EVENT* until the
	                          * connection closes, or ERROR (also what ends a running
	                          * watch: overflow, the directory removed). DEPTH 1 (the
	                          * default) watches the directory itself; DEPTH n > 1 also
	                          * its subdirectories n-1 levels down, new ones included */
	HU_MSG_PORT_CONNECT = 30, /* PORT -> PORT_SOCKET | ERROR. init connects a TCP socket to
	                           * 127.0.0.1:PORT inside the sandbox's network namespace and
	                           * passes it back (SCM_RIGHTS on the reply's bytes), so a
	                           * loopback-only server is reachable without any route in.
	                           * The socket may still be connecting (non-blocking): the
	                           * client waits for it to become writable and reads SO_ERROR.
	                           * Only on a connection with nothing else in flight: the
	                           * reply is sent at once, ahead of any queued bytes */

	/* init -> client replies and events */
	HU_MSG_PONG = 64,
	HU_MSG_OK = 65,
	HU_MSG_ERROR = 66,    /* ERRNO MESSAGE */
	HU_MSG_SPAWNED = 67,  /* PID */
	HU_MSG_ATTACHED = 68, /* PID */
	HU_MSG_OUTPUT = 69,   /* id = request id of SPAWN/ATTACH; PID STREAM DATA */
	HU_MSG_EXIT = 70,     /* id = request id of SPAWN/ATTACH; PID EXIT_CODE | SIGNUM */
	HU_MSG_PROCS = 71,    /* PROC* */
	HU_MSG_ENTRIES = 72,  /* ENTRY* */
	HU_MSG_READ_DATA = 73,/* DATA */
	HU_MSG_READ_END = 74, /* SIZE */
	HU_MSG_WATCH_EVENT = 75, /* id = request id of WATCH_START; NAME (path relative to
	                          * the watched directory, "." for itself) EVENT ENTRY? */
	HU_MSG_PORT_SOCKET = 76, /* id = request id of PORT_CONNECT; no fields, one descriptor */
};

enum hu_field_tag {
	HU_F_ARG = 1,        /* string, repeated: argv[0..] */
	HU_F_ENV = 2,        /* string "KEY=VALUE", repeated */
	HU_F_CWD = 3,        /* string */
	HU_F_USER = 4,       /* string "root" | "user" (default "user") */
	HU_F_PTY_ROWS = 5,   /* u16; present => run on a pty */
	HU_F_PTY_COLS = 6,   /* u16 */
	HU_F_STDIN = 7,      /* u8 1 = keep stdin open for STDIN messages; else /dev/null */
	HU_F_TAG = 8,        /* string, a name for the process (E2B tag) */
	HU_F_PID = 9,        /* u32 */
	HU_F_DATA = 10,      /* bytes */
	HU_F_STREAM = 11,    /* u8: 1 stdout, 2 stderr, 3 pty */
	HU_F_SIGNUM = 12,    /* u32 */
	HU_F_EXIT_CODE = 13, /* i32 (exit status when the process exited normally) */
	HU_F_ERRNO = 14,     /* u32 errno value */
	HU_F_MESSAGE = 15,   /* string */
	HU_F_PATH = 16,      /* string */
	HU_F_DEST = 17,      /* string */
	HU_F_DEPTH = 18,     /* u32 */
	HU_F_SIZE = 19,      /* u64 */
	HU_F_PROC = 20,      /* nested fields: PID TAG? ARG* ENV* CWD? */
	HU_F_ENTRY = 21,     /* nested fields: NAME PATH TYPE SIZE MODE UID GID OWNER GROUP MTIME_NS SYMLINK? META* */
	HU_F_NAME = 22,      /* string */
	HU_F_TYPE = 23,      /* u8: 1 file, 2 dir, 3 symlink, 4 other */
	HU_F_MODE = 24,      /* u32 st_mode */
	HU_F_UID = 25,       /* u32 */
	HU_F_GID = 26,       /* u32 */
	HU_F_OWNER = 27,     /* string */
	HU_F_GROUP = 28,     /* string */
	HU_F_MTIME_NS = 29,  /* u64 nanoseconds since the epoch */
	HU_F_SYMLINK = 30,   /* string, target of a symlink */
	HU_F_MORE = 31,      /* u8 1 on an ENTRIES reply that more ENTRIES follow
	                      * (a big LIST_DIR is split to stay under the frame
	                      * limit); the last ENTRIES (or an ERROR) has none */
	HU_F_EVENT = 32,     /* u8: enum hu_watch_event */
	HU_F_META = 33,      /* string "key=value", repeated (util/filemeta.h): on WRITE_OPEN the
	                      * file's metadata, replacing what it had; in an ENTRY its
	                      * user.e2b.* extended attributes */
	HU_F_WITH_ENTRY = 34, /* u8 1 on WATCH_START: each WATCH_EVENT carries the ENTRY of
	                       * the changed path when it still exists (envd includeEntry) */
	HU_F_PORT = 35,      /* u16, a TCP port (PORT_CONNECT), never 0 */
};

enum hu_stream_kind { HU_STREAM_STDOUT = 1, HU_STREAM_STDERR = 2, HU_STREAM_PTY = 3 };
enum hu_entry_type { HU_ENTRY_FILE = 1, HU_ENTRY_DIR = 2, HU_ENTRY_SYMLINK = 3, HU_ENTRY_OTHER = 4 };
/* What happened to a watched name; the numbers are envd's EventType. */
enum hu_watch_event {
	HU_WATCH_CREATE = 1,
	HU_WATCH_WRITE = 2,
	HU_WATCH_REMOVE = 3,
	HU_WATCH_RENAME = 4,
	HU_WATCH_CHMOD = 5,
};

/* A parsed frame header. */
struct hu_frame_hdr {
	uint8_t version;
	uint8_t type;
	uint32_t id;
	uint32_t len;
};

/* ---- building frames ---------------------------------------------------- */

/* A growable output buffer holding one or more encoded frames. */
struct hu_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	int oom; /* set when an allocation failed; every later append is a no-op */
};

void hu_buf_free(struct hu_buf *b);
void hu_buf_reset(struct hu_buf *b);

/* Begin a frame of `type`/`id` in b; fields appended until hu_frame_end()
 * belong to it. Returns the offset of the frame (pass it to hu_frame_end). */
size_t hu_frame_begin(struct hu_buf *b, uint8_t type, uint32_t id);
/* Patch the payload length of the frame begun at `off`; -1 if it grew past
 * HU_PROTO_MAX_PAYLOAD or an allocation failed. */
int hu_frame_end(struct hu_buf *b, size_t off);

void hu_put_bytes(struct hu_buf *b, uint16_t tag, const void *p, size_t n);
void hu_put_str(struct hu_buf *b, uint16_t tag, const char *s);
void hu_put_u8(struct hu_buf *b, uint16_t tag, uint8_t v);
void hu_put_u16(struct hu_buf *b, uint16_t tag, uint16_t v);
void hu_put_u32(struct hu_buf *b, uint16_t tag, uint32_t v);
void hu_put_i32(struct hu_buf *b, uint16_t tag, int32_t v);
void hu_put_u64(struct hu_buf *b, uint16_t tag, uint64_t v);
/* Nested fields (PROC, ENTRY): begin returns an offset, end patches the length. */
size_t hu_put_nested_begin(struct hu_buf *b, uint16_t tag);
void hu_put_nested_end(struct hu_buf *b, size_t off);

/* ---- parsing frames ------------------------------------------------------ */

/* Parse a header from at least HU_PROTO_HEADER_SIZE bytes. Checks version,
 * reserved bits and the length limit; -1 with err set on a bad header. */
int hu_frame_parse_hdr(const uint8_t *p, size_t n, struct hu_frame_hdr *hdr, hu_err *err);

/* Iterates over the fields of a payload (or of a nested field). */
struct hu_field_iter {
	const uint8_t *p;
	size_t len;
	size_t off;
};
struct hu_field {
	uint16_t tag;
	uint32_t len;
	const uint8_t *val;
};

void hu_fields_init(struct hu_field_iter *it, const uint8_t *p, size_t len);
/* 1 = a field was read into f, 0 = end of payload, -1 = malformed (err set). */
int hu_fields_next(struct hu_field_iter *it, struct hu_field *f, hu_err *err);

/* Typed reads of one field; -1 with err set when the width is wrong. */
int hu_field_u8(const struct hu_field *f, uint8_t *v, hu_err *err);
int hu_field_u16(const struct hu_field *f, uint16_t *v, hu_err *err);
int hu_field_u32(const struct hu_field *f, uint32_t *v, hu_err *err);
int hu_field_i32(const struct hu_field *f, int32_t *v, hu_err *err);
int hu_field_u64(const struct hu_field *f, uint64_t *v, hu_err *err);
/* Copy a string field into a malloc'd NUL-terminated string; rejects embedded
 * NUL bytes (they would truncate paths and argv silently). */
int hu_field_strdup(const struct hu_field *f, char **out, hu_err *err);

/* Validate a whole payload: every field (and nested field) well formed.
 * Used by the fuzz driver and by init before acting on a request. */
int hu_payload_validate(const uint8_t *p, size_t len, hu_err *err);

#endif
