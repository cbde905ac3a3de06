// fuzz-sources: src/daemon/http/framing.c
/*
 * libFuzzer driver for the body framing decoder (http/framing.c), which
 * reads every request body and every proxied response body. Input: one byte
 * for the mode (length, chunked, until close) and a feed step, 4 bytes of
 * length (for the length mode), then the bytes. They are decoded twice,
 * whole and in pieces of `step` bytes: both runs must agree on the result,
 * the body's bytes (hashed) and where the body ended; every data span must
 * lie inside what was fed and `used` never exceed it. Crashes, leaks and
 * disagreements are bugs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/framing.h"

struct run {
	int rc;           /* 1 complete, 0 more wanted, -1 error */
	uint64_t bytes, hash;
	size_t end;       /* input offset just after the body (complete) */
};

static struct run decode(enum hu_framing_mode mode, uint64_t length, const uint8_t *p, size_t n, size_t step)
{
	struct hu_framing f;
	struct run r = {0};
	size_t pos = 0;
	hu_err err;

	hu_framing_init(&f, mode, length, 1u << 20);
	while (pos < n || (f.done && r.rc == 0)) {
		size_t piece = n - pos < step ? n - pos : step;
		size_t used, off, len;
		int rc = hu_framing_step(&f, p + pos, piece, &used, &off, &len, &err);
		if (used > piece || (len && (off > used || len > used - off)))
			abort();
		for (size_t i = 0; i < len; i++)
			r.hash = r.hash * 131 + p[pos + off + i];
		r.bytes += len;
		pos += used;
		if (rc != 0) {
			r.rc = rc;
			r.end = pos;
			return r;
		}
		if (used == 0 && piece > 0)
			abort(); /* no progress on a non-empty input */
		if (piece == 0)
			break;
	}
	r.rc = hu_framing_eof(&f, &err) == 0 && mode == HU_FRAMING_CLOSE ? 1 : 0;
	r.end = pos;
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 5)
		return 0;
	enum hu_framing_mode mode = (enum hu_framing_mode)(data[0] % 3);
	size_t step = (size_t)(data[0] / 3) % 17 + 1;
	uint64_t length = (uint64_t)data[1] << 24 | (uint64_t)data[2] << 16 | (uint64_t)data[3] << 8 | data[4];
	data += 5;
	size -= 5;
	struct run whole = decode(mode, length, data, size, size ? size : 1);
	struct run parts = decode(mode, length, data, size, step);
	if (whole.rc != parts.rc || whole.bytes != parts.bytes || whole.hash != parts.hash ||
	    (whole.rc == 1 && whole.end != parts.end))
		abort();
	return 0;
}
