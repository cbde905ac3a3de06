/*
 * Decoding of a client request into a plain struct, separate from acting on
 * it: every field is checked here (width, NUL bytes, counts, sizes, which
 * fields a request type needs), so the handlers can trust what they get, and
 * the fuzz driver can hammer exactly the code that sees hostile bytes.
 * Depends only on src/proto and src/util (the fuzz build links nothing else).
 */
#ifndef HUTCH_INIT_REQUEST_H
#define HUTCH_INIT_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/initproto.h"
#include "util/err.h"

#define HU_REQ_MAX_LIST 4096      /* ARG and ENV entries per SPAWN */
#define HU_REQ_MAX_STR 65536      /* one ARG/ENV string */
#define HU_REQ_MAX_PATH 4096      /* PATH, DEST, CWD (PATH_MAX) */
#define HU_REQ_MAX_NAME 256       /* USER, TAG */
#define HU_REQ_MAX_DEPTH 64       /* LIST_DIR recursion */

struct hu_request {
	uint8_t type;
	uint32_t id;

	char **argv; /* NULL-terminated, argc entries */
	size_t argc;
	char **envv; /* NULL-terminated, envc entries, each KEY=VALUE */
	size_t envc;
	char **metav; /* NULL-terminated, metac entries, each key=value (WRITE_OPEN) */
	size_t metac;
	char *cwd;
	char *user;
	char *tag;
	char *path;
	char *dest;

	bool pty;
	uint16_t rows, cols;
	bool stdin_open;
	bool with_entry; /* WATCH_START: events carry the ENTRY */

	bool has_pid;
	uint32_t pid;
	int signum;
	uint32_t depth;
	uint16_t port; /* PORT_CONNECT */

	/* DATA points into the payload the request was decoded from. */
	const uint8_t *data;
	size_t data_len;
};

/* Decode and check a request frame. On failure req holds nothing to free and
 * err says what was wrong (EPROTO: malformed, EINVAL: a missing or bad value,
 * EOPNOTSUPP: not a request type). */
int hu_request_decode(const struct hu_frame_hdr *hdr, const uint8_t *payload, struct hu_request *req, hu_err *err);
void hu_request_free(struct hu_request *req);

#endif
