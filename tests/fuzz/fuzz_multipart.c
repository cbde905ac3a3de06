// fuzz-sources: src/daemon/http/multipart.c
/*
 * libFuzzer driver for the multipart/form-data parser. Input: one byte that
 * picks a feed step, a Content-Type line ending in '\n', then the body. The
 * body is parsed twice, whole and in pieces of `step` bytes: both runs must
 * agree on success, the number of parts, every part's bytes (hashed) and
 * offsets. Crashes, leaks and disagreements are bugs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/multipart.h"

struct summary {
	uint64_t parts;
	uint64_t bytes;
	uint64_t hash;
	uint64_t offsets;
	const uint8_t *body;
	uint64_t cur_begin, cur_len;
};

static int on_begin(void *arg, const struct hu_multipart_part *part, hu_err *err)
{
	struct summary *s = arg;
	s->parts++;
	s->cur_begin = part->data_offset;
	s->cur_len = 0;
	for (const char *p = part->filename; *p; p++)
		s->hash = s->hash * 31 + (uint8_t)*p;
	return 0;
}

static int on_data(void *arg, const uint8_t *p, size_t n, hu_err *err)
{
	struct summary *s = arg;
	for (size_t i = 0; i < n; i++)
		s->hash = s->hash * 131 + p[i];
	s->bytes += n;
	s->cur_len += n;
	return 0;
}

static int on_end(void *arg, uint64_t end, hu_err *err)
{
	struct summary *s = arg;
	/* The offsets must frame exactly the bytes handed out. */
	if (end < s->cur_begin || end - s->cur_begin != s->cur_len)
		abort();
	s->offsets = s->offsets * 7 + end;
	return 0;
}

static int run(const char *boundary, const uint8_t *body, size_t len, size_t step, struct summary *s)
{
	struct hu_multipart_cbs cbs = {on_begin, on_data, on_end, s};
	struct hu_multipart *mp;
	hu_err err;
	int r = 0;

	memset(s, 0, sizeof(*s));
	if (hu_multipart_new(boundary, &cbs, &mp, &err) < 0)
		return -1;
	for (size_t off = 0; off < len && r == 0; off += step)
		r = hu_multipart_feed(mp, body + off, len - off < step ? len - off : step, &err);
	if (r == 0)
		r = hu_multipart_finish(mp, &err);
	if (r < 0 && (err.code == 0 || err.msg[0] == '\0'))
		abort(); /* every failure says why */
	hu_multipart_free(mp);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t step = (size_t)data[0] % 64 + 1;
	const uint8_t *nl = memchr(data + 1, '\n', size - 1);
	if (!nl)
		return 0;
	size_t ct_len = (size_t)(nl - (data + 1));
	char *ct = malloc(ct_len + 1);
	if (!ct)
		return 0;
	memcpy(ct, data + 1, ct_len);
	ct[ct_len] = '\0';

	char out[256], boundary[HU_MULTIPART_MAX_BOUNDARY + 1];
	hu_err err;
	(void)hu_mime_param(ct, "name", out, sizeof(out), &err);
	(void)hu_mime_param(ct, "filename", out, sizeof(out), &err);
	(void)hu_mime_param(ct, "filename", out, 4, &err);

	if (hu_multipart_boundary(ct, boundary, sizeof(boundary), &err) == 0) {
		const uint8_t *body = nl + 1;
		size_t len = size - (size_t)(body - data);
		struct summary whole, pieces;
		int a = run(boundary, body, len, len ? len : 1, &whole);
		int b = run(boundary, body, len, step, &pieces);
		if (a != b || whole.parts != pieces.parts || whole.bytes != pieces.bytes || whole.hash != pieces.hash ||
		    whole.offsets != pieces.offsets)
			abort();
	}
	free(ct);
	return 0;
}
