#include "daemon/http/framing.h"

#include "util/parse.h"

/* The chunked grammar, one state per place a byte can be in:
 *   chunk      = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
 *   last-chunk = 1*"0" [ chunk-ext ] CRLF, then trailer lines, then CRLF.
 * A bare LF is taken for CRLF, as most servers do; since hutch re-frames
 * every body it forwards, no later parser can read it differently. */
enum {
	CH_SIZE,       /* hex digits of a chunk size */
	CH_BWS,        /* blanks after the size: only ';' (an extension) or the line end may follow */
	CH_EXT,        /* an extension, up to the line end */
	CH_SIZE_LF,    /* CR seen at the end of the size line */
	CH_DATA,       /* chunk content */
	CH_DATA_CR,    /* after the content: CR or LF */
	CH_DATA_LF,    /* CR seen after the content */
	CH_TRAILER,    /* start of a trailer line, or the final empty line */
	CH_TRAILER_IN, /* inside a trailer line */
	CH_TRAILER_LF, /* CR seen: LF ends the line */
	CH_END_LF,     /* CR of the final empty line seen */
};

#define MAX_SIZE_DIGITS 15 /* 60 bits: no overflow, and far beyond any limit */

void hu_framing_init(struct hu_framing *f, enum hu_framing_mode mode, uint64_t length, uint64_t limit)
{
	*f = (struct hu_framing){.mode = mode, .limit = limit, .st = CH_SIZE};
	if (mode == HU_FRAMING_LENGTH) {
		f->left = length;
		f->done = length == 0;
	}
}

static int over_limit(struct hu_framing *f, uint64_t more, hu_err *err)
{
	if (f->limit && (more > f->limit || f->total > f->limit - more))
		return hu_err_set(err, -E2BIG, "the body is larger than %llu bytes", (unsigned long long)f->limit);
	return 0;
}

/* Content spans: LENGTH, CLOSE, and a chunk's data. */
static int take_data(struct hu_framing *f, size_t n, size_t *used, size_t *data_len, hu_err *err)
{
	uint64_t k = f->mode == HU_FRAMING_CLOSE || f->left > n ? n : f->left;
	if (over_limit(f, k, err) < 0)
		return -1;
	f->total += k;
	if (f->mode != HU_FRAMING_CLOSE)
		f->left -= k;
	*used = (size_t)k;
	*data_len = (size_t)k;
	return 0;
}

static int line_byte(struct hu_framing *f, size_t cap, hu_err *err)
{
	if (++f->line > cap)
		return hu_err_set(err, -EINVAL, cap == HU_FRAMING_MAX_LINE ? "a chunk-size line is longer than %zu bytes"
									     : "the trailers are longer than %zu bytes",
				  cap);
	return 0;
}

static int end_size_line(struct hu_framing *f, hu_err *err)
{
	if (f->digits == 0)
		return hu_err_set(err, -EINVAL, "a chunk has no size");
	if (f->left == 0) {
		f->st = CH_TRAILER;
		f->line = 0;
		return 0;
	}
	if (over_limit(f, f->left, err) < 0)
		return -1;
	f->st = CH_DATA;
	return 0;
}

/* One framing byte of a chunked body. 1: the body ended with it. */
static int chunked_byte(struct hu_framing *f, uint8_t c, hu_err *err)
{
	int hex;

	switch (f->st) {
	case CH_SIZE:
		if ((hex = hu_hex_digit((char)c)) >= 0) {
			if (++f->digits > MAX_SIZE_DIGITS)
				return hu_err_set(err, -EINVAL, "a chunk size of more than %d hex digits", MAX_SIZE_DIGITS);
			f->left = f->left * 16 + (uint64_t)hex;
			return line_byte(f, HU_FRAMING_MAX_LINE, err);
		}
		if (f->digits == 0)
			return hu_err_set(err, -EINVAL, "a chunk size is not hexadecimal");
		if (c == '\n')
			return end_size_line(f, err);
		if (c == '\r') {
			f->st = CH_SIZE_LF;
			return 0;
		}
		/* blanks or an extension: */
		__attribute__((fallthrough));
	case CH_BWS:
		if (c == ' ' || c == '\t')
			f->st = CH_BWS;
		else if (c == ';')
			f->st = CH_EXT;
		else if (f->st == CH_BWS && c == '\n')
			return end_size_line(f, err);
		else if (f->st == CH_BWS && c == '\r')
			f->st = CH_SIZE_LF;
		else
			return hu_err_set(err, -EINVAL, "a chunk size is followed by 0x%02x", c);
		return f->st == CH_SIZE_LF ? 0 : line_byte(f, HU_FRAMING_MAX_LINE, err);
	case CH_EXT:
		if (c == '\n')
			return end_size_line(f, err);
		if (c == '\r') {
			f->st = CH_SIZE_LF;
			return 0;
		}
		if (c != '\t' && (c < 0x20 || c == 0x7f))
			return hu_err_set(err, -EINVAL, "a control byte in a chunk extension");
		return line_byte(f, HU_FRAMING_MAX_LINE, err);
	case CH_SIZE_LF:
		if (c != '\n')
			return hu_err_set(err, -EINVAL, "CR without LF in a chunk-size line");
		return end_size_line(f, err);
	case CH_DATA_CR:
		if (c == '\n')
			goto next_chunk;
		if (c != '\r')
			return hu_err_set(err, -EINVAL, "chunk data longer than its size");
		f->st = CH_DATA_LF;
		return 0;
	case CH_DATA_LF:
		if (c != '\n')
			return hu_err_set(err, -EINVAL, "CR without LF after chunk data");
	next_chunk:
		f->st = CH_SIZE;
		f->digits = 0;
		f->left = 0;
		f->line = 0;
		return 0;
	case CH_TRAILER:
		if (c == '\n')
			return 1;
		if (c == '\r') {
			f->st = CH_END_LF;
			return 0;
		}
		f->st = CH_TRAILER_IN;
		return line_byte(f, HU_FRAMING_MAX_TRAILERS, err);
	case CH_TRAILER_IN:
		if (c == '\n')
			f->st = CH_TRAILER;
		else if (c == '\r')
			f->st = CH_TRAILER_LF;
		return line_byte(f, HU_FRAMING_MAX_TRAILERS, err);
	case CH_TRAILER_LF:
		if (c != '\n')
			return hu_err_set(err, -EINVAL, "CR without LF in the trailers");
		f->st = CH_TRAILER;
		return line_byte(f, HU_FRAMING_MAX_TRAILERS, err);
	case CH_END_LF:
		if (c != '\n')
			return hu_err_set(err, -EINVAL, "CR without LF at the end of the body");
		return 1;
	default:
		return hu_err_set(err, -EINVAL, "chunked decoder state");
	}
}

int hu_framing_step(struct hu_framing *f, const uint8_t *p, size_t n, size_t *used, size_t *data_off,
		    size_t *data_len, hu_err *err)
{
	*used = 0;
	*data_off = 0;
	*data_len = 0;
	if (f->done)
		return 1;
	if (f->mode != HU_FRAMING_CHUNKED) {
		if (f->mode == HU_FRAMING_LENGTH && over_limit(f, f->left, err) < 0)
			return -1;
		if (n && take_data(f, n, used, data_len, err) < 0)
			return -1;
		f->done = f->mode == HU_FRAMING_LENGTH && f->left == 0;
		return f->done;
	}
	size_t i = 0;
	while (i < n) {
		if (f->st == CH_DATA) {
			/* a data span is returned alone, after the framing before it */
			if (i > 0)
				break;
			if (take_data(f, n, used, data_len, err) < 0)
				return -1;
			if (f->left == 0)
				f->st = CH_DATA_CR;
			return 0;
		}
		int rc = chunked_byte(f, p[i++], err);
		if (rc < 0)
			return -1;
		if (rc == 1) {
			f->done = true;
			*used = i;
			return 1;
		}
	}
	*used = i;
	return 0;
}

int hu_framing_eof(struct hu_framing *f, hu_err *err)
{
	if (f->done || f->mode == HU_FRAMING_CLOSE)
		return 0;
	if (f->mode == HU_FRAMING_LENGTH)
		return hu_err_set(err, -EINVAL, "truncated: the connection closed %llu bytes before the body's end",
				  (unsigned long long)f->left);
	return hu_err_set(err, -EINVAL, "truncated: the connection closed inside the chunked body");
}
