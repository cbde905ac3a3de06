/*
 * Codec of the hutch-init wire protocol (see initproto.h for the format).
 *
 * Building never fails half-way in a way the caller has to unwind: an
 * allocation failure sets b->oom and turns every later append into a no-op,
 * and hu_frame_end() reports it once. Parsing never trusts a length before it
 * has been checked against what is actually there.
 */
#include "proto/initproto.h"

#include <stdlib.h>
#include <string.h>

/* ---- big-endian helpers --------------------------------------------------- */

static void be16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint16_t be16_get(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static uint32_t be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- building -------------------------------------------------------------- */

#define FIELD_HDR_SIZE 6 /* u16 tag + u32 length */

void hu_buf_free(struct hu_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->oom = 0;
}

void hu_buf_reset(struct hu_buf *b)
{
	b->len = 0;
	b->oom = 0;
}

/* Make room for n more bytes and return where they go, or NULL (and oom). */
static uint8_t *buf_grow(struct hu_buf *b, size_t n)
{
	if (b->oom)
		return NULL;
	if (n > SIZE_MAX / 2 - b->len) {
		b->oom = 1;
		return NULL;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *d = realloc(b->data, cap);
		if (!d) {
			b->oom = 1;
			return NULL;
		}
		b->data = d;
		b->cap = cap;
	}
	uint8_t *at = b->data + b->len;
	b->len += n;
	return at;
}

size_t hu_frame_begin(struct hu_buf *b, uint8_t type, uint32_t id)
{
	size_t off = b->len;
	uint8_t *h = buf_grow(b, HU_PROTO_HEADER_SIZE);
	if (h) {
		h[0] = HU_PROTO_VERSION;
		h[1] = type;
		h[2] = h[3] = 0;
		be32_put(h + 4, id);
		be32_put(h + 8, 0);
	}
	return off;
}

int hu_frame_end(struct hu_buf *b, size_t off)
{
	if (b->oom || off + HU_PROTO_HEADER_SIZE > b->len)
		return -1;
	size_t payload = b->len - off - HU_PROTO_HEADER_SIZE;
	if (payload > HU_PROTO_MAX_PAYLOAD)
		return -1;
	be32_put(b->data + off + 8, (uint32_t)payload);
	return 0;
}

void hu_put_bytes(struct hu_buf *b, uint16_t tag, const void *p, size_t n)
{
	if (n > UINT32_MAX) {
		b->oom = 1;
		return;
	}
	uint8_t *f = buf_grow(b, FIELD_HDR_SIZE + n);
	if (!f)
		return;
	be16_put(f, tag);
	be32_put(f + 2, (uint32_t)n);
	if (n)
		memcpy(f + FIELD_HDR_SIZE, p, n);
}

void hu_put_str(struct hu_buf *b, uint16_t tag, const char *s)
{
	hu_put_bytes(b, tag, s, strlen(s));
}

void hu_put_u8(struct hu_buf *b, uint16_t tag, uint8_t v)
{
	hu_put_bytes(b, tag, &v, 1);
}

void hu_put_u16(struct hu_buf *b, uint16_t tag, uint16_t v)
{
	uint8_t p[2];
	be16_put(p, v);
	hu_put_bytes(b, tag, p, sizeof(p));
}

void hu_put_u32(struct hu_buf *b, uint16_t tag, uint32_t v)
{
	uint8_t p[4];
	be32_put(p, v);
	hu_put_bytes(b, tag, p, sizeof(p));
}

void hu_put_i32(struct hu_buf *b, uint16_t tag, int32_t v)
{
	hu_put_u32(b, tag, (uint32_t)v);
}

void hu_put_u64(struct hu_buf *b, uint16_t tag, uint64_t v)
{
	uint8_t p[8];
	be32_put(p, (uint32_t)(v >> 32));
	be32_put(p + 4, (uint32_t)v);
	hu_put_bytes(b, tag, p, sizeof(p));
}

size_t hu_put_nested_begin(struct hu_buf *b, uint16_t tag)
{
	size_t off = b->len;
	hu_put_bytes(b, tag, NULL, 0);
	return off;
}

void hu_put_nested_end(struct hu_buf *b, size_t off)
{
	if (b->oom || off + FIELD_HDR_SIZE > b->len)
		return;
	size_t n = b->len - off - FIELD_HDR_SIZE;
	if (n > UINT32_MAX) {
		b->oom = 1;
		return;
	}
	be32_put(b->data + off + 2, (uint32_t)n);
}

/* ---- parsing ---------------------------------------------------------------- */

int hu_frame_parse_hdr(const uint8_t *p, size_t n, struct hu_frame_hdr *hdr, hu_err *err)
{
	if (n < HU_PROTO_HEADER_SIZE)
		return hu_err_set(err, EPROTO, "short frame header (%zu bytes)", n);
	if (p[0] != HU_PROTO_VERSION)
		return hu_err_set(err, EPROTO, "unsupported protocol version %u", p[0]);
	if (p[2] || p[3])
		return hu_err_set(err, EPROTO, "reserved header bytes are not zero");
	hdr->version = p[0];
	hdr->type = p[1];
	hdr->id = be32_get(p + 4);
	hdr->len = be32_get(p + 8);
	if (hdr->len > HU_PROTO_MAX_PAYLOAD)
		return hu_err_set(err, EMSGSIZE, "frame payload of %u bytes exceeds %u", hdr->len,
				  HU_PROTO_MAX_PAYLOAD);
	return 0;
}

void hu_fields_init(struct hu_field_iter *it, const uint8_t *p, size_t len)
{
	it->p = p;
	it->len = len;
	it->off = 0;
}

int hu_fields_next(struct hu_field_iter *it, struct hu_field *f, hu_err *err)
{
	if (it->off >= it->len)
		return 0;
	size_t left = it->len - it->off;
	if (left < FIELD_HDR_SIZE)
		return hu_err_set(err, EPROTO, "truncated field header at offset %zu", it->off);
	const uint8_t *h = it->p + it->off;
	uint16_t tag = be16_get(h);
	uint32_t flen = be32_get(h + 2);
	if (flen > left - FIELD_HDR_SIZE)
		return hu_err_set(err, EPROTO, "field %u of %u bytes runs past the payload", tag, flen);
	f->tag = tag;
	f->len = flen;
	f->val = h + FIELD_HDR_SIZE;
	it->off += FIELD_HDR_SIZE + flen;
	return 1;
}

static int check_width(const struct hu_field *f, uint32_t want, hu_err *err)
{
	if (f->len != want)
		return hu_err_set(err, EPROTO, "field %u has %u bytes, expected %u", f->tag, f->len, want);
	return 0;
}

int hu_field_u8(const struct hu_field *f, uint8_t *v, hu_err *err)
{
	if (check_width(f, 1, err) < 0)
		return -1;
	*v = f->val[0];
	return 0;
}

int hu_field_u16(const struct hu_field *f, uint16_t *v, hu_err *err)
{
	if (check_width(f, 2, err) < 0)
		return -1;
	*v = be16_get(f->val);
	return 0;
}

int hu_field_u32(const struct hu_field *f, uint32_t *v, hu_err *err)
{
	if (check_width(f, 4, err) < 0)
		return -1;
	*v = be32_get(f->val);
	return 0;
}

int hu_field_i32(const struct hu_field *f, int32_t *v, hu_err *err)
{
	uint32_t u;
	if (hu_field_u32(f, &u, err) < 0)
		return -1;
	*v = (int32_t)u;
	return 0;
}

int hu_field_u64(const struct hu_field *f, uint64_t *v, hu_err *err)
{
	if (check_width(f, 8, err) < 0)
		return -1;
	*v = (uint64_t)be32_get(f->val) << 32 | be32_get(f->val + 4);
	return 0;
}

int hu_field_strdup(const struct hu_field *f, char **out, hu_err *err)
{
	if (memchr(f->val, '\0', f->len))
		return hu_err_set(err, EPROTO, "string field %u contains a NUL byte", f->tag);
	char *s = malloc((size_t)f->len + 1);
	if (!s)
		return hu_err_set(err, ENOMEM, "string field %u", f->tag);
	if (f->len)
		memcpy(s, f->val, f->len);
	s[f->len] = '\0';
	*out = s;
	return 0;
}

/* What a known tag holds; validation checks integer widths and that strings
 * carry no NUL, so a request that validates can be decoded without surprises.
 * Tags not listed are unknown and skipped (the protocol may grow). */
enum field_kind { KIND_UNKNOWN, KIND_BYTES, KIND_STR, KIND_U8, KIND_U16, KIND_U32, KIND_U64, KIND_NESTED };

static enum field_kind field_kind(uint16_t tag)
{
	switch (tag) {
	case HU_F_DATA:
		return KIND_BYTES;
	case HU_F_ARG:
	case HU_F_ENV:
	case HU_F_CWD:
	case HU_F_USER:
	case HU_F_TAG:
	case HU_F_MESSAGE:
	case HU_F_PATH:
	case HU_F_DEST:
	case HU_F_NAME:
	case HU_F_OWNER:
	case HU_F_GROUP:
	case HU_F_SYMLINK:
		return KIND_STR;
	case HU_F_STDIN:
	case HU_F_STREAM:
	case HU_F_TYPE:
	case HU_F_MORE:
		return KIND_U8;
	case HU_F_PTY_ROWS:
	case HU_F_PTY_COLS:
		return KIND_U16;
	case HU_F_PID:
	case HU_F_SIGNUM:
	case HU_F_EXIT_CODE:
	case HU_F_ERRNO:
	case HU_F_DEPTH:
	case HU_F_MODE:
	case HU_F_UID:
	case HU_F_GID:
		return KIND_U32;
	case HU_F_SIZE:
	case HU_F_MTIME_NS:
		return KIND_U64;
	case HU_F_PROC:
	case HU_F_ENTRY:
		return KIND_NESTED;
	default:
		return KIND_UNKNOWN;
	}
}

/* A payload is depth 1, the fields of a PROC/ENTRY are depth 2; nothing nests
 * deeper, which also bounds the recursion on hostile input. */
#define MAX_NESTING 2

static int validate_at(const uint8_t *p, size_t len, int depth, hu_err *err)
{
	struct hu_field_iter it;
	struct hu_field f;
	int r;

	hu_fields_init(&it, p, len);
	while ((r = hu_fields_next(&it, &f, err)) > 0) {
		switch (field_kind(f.tag)) {
		case KIND_U8:
			r = check_width(&f, 1, err);
			break;
		case KIND_U16:
			r = check_width(&f, 2, err);
			break;
		case KIND_U32:
			r = check_width(&f, 4, err);
			break;
		case KIND_U64:
			r = check_width(&f, 8, err);
			break;
		case KIND_STR:
			r = memchr(f.val, '\0', f.len) ? hu_err_set(err, EPROTO, "string field %u contains a NUL byte", f.tag) : 0;
			break;
		case KIND_NESTED:
			if (depth >= MAX_NESTING)
				r = hu_err_set(err, EPROTO, "field %u nested deeper than %d levels", f.tag, MAX_NESTING);
			else
				r = validate_at(f.val, f.len, depth + 1, err);
			break;
		case KIND_BYTES:
		case KIND_UNKNOWN:
			r = 0;
			break;
		}
		if (r < 0)
			return -1;
	}
	return r;
}

int hu_payload_validate(const uint8_t *p, size_t len, hu_err *err)
{
	if (len > HU_PROTO_MAX_PAYLOAD)
		return hu_err_set(err, EMSGSIZE, "payload of %zu bytes exceeds %u", len, HU_PROTO_MAX_PAYLOAD);
	return validate_at(p, len, 1, err);
}
