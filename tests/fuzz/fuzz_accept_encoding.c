// fuzz-sources: src/daemon/http/gzip_out.c
/*
 * libFuzzer driver for gzip downloads: the input is an Accept-Encoding
 * value (up to the first NUL) and file content (the rest). The header
 * parser must not crash; the content, compressed in two pieces as a
 * download does, must inflate back to itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "daemon/http/gzip_out.h"

struct sink {
	uint8_t *buf;
	size_t len, cap;
};

static int collect(void *arg, const uint8_t *out, size_t n)
{
	struct sink *s = arg;
	if (s->len + n > s->cap) {
		size_t cap = (s->len + n) * 2;
		uint8_t *b = realloc(s->buf, cap);
		if (!b)
			return -1;
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, out, n);
	s->len += n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t hlen = nul ? (size_t)(nul - data) : size;
	char *header = malloc(hlen + 1);
	struct hu_gzip_out *z;
	struct sink s = {0};
	hu_err err;

	if (!header)
		return 0;
	memcpy(header, data, hlen);
	header[hlen] = '\0';
	(void)hu_accepts_gzip(header);
	free(header);

	const uint8_t *content = nul ? nul + 1 : data + size;
	size_t clen = (size_t)(data + size - content), half = clen / 2;
	if (hu_gzip_out_new(&z, &err) < 0)
		return 0;
	if (hu_gzip_out_write(z, content, half, false, collect, &s, &err) < 0 ||
	    hu_gzip_out_write(z, content + half, clen - half, true, collect, &s, &err) < 0)
		abort();
	hu_gzip_out_free(z);

	uint8_t *back = malloc(clen + 1);
	z_stream in = {0};
	if (!back || inflateInit2(&in, 16 + MAX_WBITS) != Z_OK)
		abort();
	in.next_in = s.buf;
	in.avail_in = (uInt)s.len;
	in.next_out = back;
	in.avail_out = (uInt)clen + 1;
	if (inflate(&in, Z_FINISH) != Z_STREAM_END || in.total_out != clen || memcmp(back, content, clen))
		abort();
	inflateEnd(&in);
	free(back);
	free(s.buf);
	return 0;
}
