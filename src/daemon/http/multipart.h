/*
 * A streaming multipart/form-data parser (RFC 7578 over RFC 2046), for
 * POST /files.
 *
 * Bytes are pushed in with hu_multipart_feed() in pieces of any size (one
 * byte at a time works); parts come out through callbacks. Part content is
 * binary-safe: only the delimiter "CRLF--boundary" followed by optional
 * padding and CRLF (or "--") ends a part, so CRLFs, NULs and even the
 * boundary text inside content pass through. Memory is bounded whatever the
 * input: a part's header block may not exceed HU_MULTIPART_MAX_HEADERS.
 *
 * Every callback also learns the stream offsets of a part's content
 * (data_offset in on_part_begin, data_end in on_part_end), so a caller that
 * holds the whole body in memory can take each part as a span of it instead
 * of copying the data it is handed.
 */
#ifndef HUTCH_DAEMON_MULTIPART_H
#define HUTCH_DAEMON_MULTIPART_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define HU_MULTIPART_MAX_BOUNDARY 70   /* RFC 2046 */
#define HU_MULTIPART_MAX_HEADERS 8192  /* one part's header block, CRLFs included */
#define HU_MULTIPART_MAX_PADDING 64    /* blanks allowed after a boundary */
#define HU_MULTIPART_MAX_NAME 256

struct hu_multipart_part {
	char name[HU_MULTIPART_MAX_NAME];   /* Content-Disposition name, "" when absent */
	bool has_filename;
	char filename[PATH_MAX];            /* as sent: full paths are kept, never basenamed */
	char content_type[HU_MULTIPART_MAX_NAME]; /* "" when absent */
	uint64_t index;                     /* 0 for the first part */
	uint64_t data_offset;               /* stream offset of the first content byte */
};

/* Callbacks may be NULL. A callback returning -1 (with err set) stops the
 * parser: feed returns -1 with that error, and the parser is done. */
struct hu_multipart_cbs {
	int (*on_part_begin)(void *arg, const struct hu_multipart_part *part, hu_err *err);
	int (*on_part_data)(void *arg, const uint8_t *data, size_t len, hu_err *err);
	/* data_end: stream offset one past the part's last content byte. */
	int (*on_part_end)(void *arg, uint64_t data_end, hu_err *err);
	void *arg;
};

struct hu_multipart;

/* The boundary of a "multipart/form-data; boundary=..." Content-Type
 * (quoted or not), checked against RFC 2046's alphabet and length. EINVAL
 * for another media type or a missing or bad boundary. out: at least
 * HU_MULTIPART_MAX_BOUNDARY + 1 bytes. */
int hu_multipart_boundary(const char *content_type, char *out, size_t cap, hu_err *err);

int hu_multipart_new(const char *boundary, const struct hu_multipart_cbs *cbs, struct hu_multipart **out, hu_err *err);
/* Push the next n bytes. -1 (EINVAL, E2BIG, or a callback's error) ends the
 * parse; later calls keep failing. */
int hu_multipart_feed(struct hu_multipart *mp, const uint8_t *p, size_t n, hu_err *err);
/* The input is over: -1 (EINVAL) unless the closing boundary was seen. */
int hu_multipart_finish(struct hu_multipart *mp, hu_err *err);
void hu_multipart_free(struct hu_multipart *mp);

/* One parameter of a MIME header value ("form-data; name=\"file\"",
 * "text/plain; charset=utf-8"), names compared without case, quoted-string
 * escapes resolved. For "filename" an RFC 5987 "filename*=UTF-8''..." takes
 * precedence. 1 = found (out holds it, NUL-terminated), 0 = absent,
 * -1 = malformed, longer than cap-1 or holding a NUL (EINVAL). */
int hu_mime_param(const char *value, const char *name, char *out, size_t cap, hu_err *err);

#endif
