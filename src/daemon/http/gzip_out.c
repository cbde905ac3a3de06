#include "daemon/http/gzip_out.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#define OUT_CHUNK 65536

struct hu_gzip_out {
	z_stream z;
	uint8_t out[OUT_CHUNK];
};

/* One list member: coding [; q=value]. Accepted unless q is zero. */
static bool member_accepts_gzip(const char *m, size_t len)
{
	while (len && (*m == ' ' || *m == '\t'))
		m++, len--;
	size_t name = 0;
	while (name < len && m[name] != ';' && m[name] != ' ' && m[name] != '\t')
		name++;
	bool is_gzip = (name == 4 && !strncasecmp(m, "gzip", 4)) || (name == 6 && !strncasecmp(m, "x-gzip", 6)) ||
		       (name == 1 && m[0] == '*');
	if (!is_gzip)
		return false;
	const char *q = memchr(m, ';', len);
	if (!q)
		return true;
	q++;
	size_t rest = len - (size_t)(q - m);
	while (rest && (*q == ' ' || *q == '\t'))
		q++, rest--;
	if (rest < 2 || (q[0] != 'q' && q[0] != 'Q') || q[1] != '=')
		return true; /* some other parameter */
	/* q=0, q=0.0, q=0.000 refuse; anything else accepts */
	for (size_t i = 2; i < rest; i++)
		if (q[i] != '0' && q[i] != '.' && q[i] != ' ')
			return true;
	return false;
}

bool hu_accepts_gzip(const char *v)
{
	if (!v)
		return false;
	while (*v) {
		size_t len = strcspn(v, ",");
		if (member_accepts_gzip(v, len))
			return true;
		v += len;
		if (*v == ',')
			v++;
	}
	return false;
}

int hu_gzip_out_new(struct hu_gzip_out **out, hu_err *err)
{
	struct hu_gzip_out *z = calloc(1, sizeof(*z));
	/* 16 + MAX_WBITS: a gzip header and trailer around the deflate data;
	 * level 1: the sandbox is reading at disk speed, keep up with it. */
	if (!z || deflateInit2(&z->z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(z);
		return hu_err_set(err, ENOMEM, "gzip");
	}
	*out = z;
	return 0;
}

void hu_gzip_out_free(struct hu_gzip_out *z)
{
	if (!z)
		return;
	deflateEnd(&z->z);
	free(z);
}

int hu_gzip_out_write(struct hu_gzip_out *z, const uint8_t *data, size_t len, bool finish,
		      int (*sink)(void *arg, const uint8_t *out, size_t n), void *arg, hu_err *err)
{
	int flush = finish ? Z_FINISH : Z_NO_FLUSH;
	z->z.next_in = (Bytef *)(uintptr_t)data;
	z->z.avail_in = (uInt)len;
	for (;;) {
		z->z.next_out = z->out;
		z->z.avail_out = sizeof(z->out);
		int rc = deflate(&z->z, flush);
		if (rc == Z_STREAM_ERROR)
			return hu_err_set(err, EIO, "gzip: deflate failed");
		size_t n = sizeof(z->out) - z->z.avail_out;
		if (n && sink(arg, z->out, n) < 0)
			return hu_err_set(err, EPIPE, "gzip: the client is gone");
		if (finish ? rc == Z_STREAM_END : z->z.avail_in == 0 && z->z.avail_out != 0)
			return 0;
	}
}
