#include "daemon/http/multipart.h"
#include "util/parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * The body is "preamble, delimiter, part, delimiter, part, ..., close
 * delimiter, epilogue" where a delimiter is CRLF "--" boundary, then either
 * "--" (the close delimiter) or optional blanks and CRLF. The CRLF before
 * the very first delimiter may be missing; the parser starts as if it had
 * just read one. The delimiter's first byte (CR) occurs nowhere else in it
 * (a boundary has no CR), so after a mismatch the bytes matched so far are
 * plain content and only the current byte can start a new match: nothing
 * needs buffering but a counter.
 */

enum state {
	ST_PREAMBLE,    /* before the first delimiter: skipped */
	ST_BODY,        /* a part's content */
	ST_AFTER_DELIM, /* a delimiter matched: is it followed by CRLF or "--"? */
	ST_HEADERS,     /* a part's header block */
	ST_EPILOGUE,    /* after the close delimiter: skipped */
	ST_FAILED,
};

struct hu_multipart {
	struct hu_multipart_cbs cbs;
	char delim[4 + HU_MULTIPART_MAX_BOUNDARY + 1]; /* "\r\n--" boundary */
	size_t dlen;
	enum state st;
	size_t matched;       /* delimiter bytes matched (PREAMBLE, BODY) */
	bool in_part;         /* AFTER_DELIM: the delimiter would end a part */
	uint64_t pos;         /* stream offset of the next byte fed */
	uint64_t delim_start; /* stream offset of the delimiter being matched */
	uint8_t tail[HU_MULTIPART_MAX_PADDING + 2]; /* bytes read after a delimiter */
	size_t tail_len;
	char hdr[HU_MULTIPART_MAX_HEADERS + 1];
	size_t hdr_len;
	uint64_t nparts;
	struct hu_multipart_part part;
	hu_err failure;
};

/* ---- MIME parameters ------------------------------------------------------------ */

static const char *skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static int put_char(char *out, size_t cap, size_t *len, char c, const char *name, hu_err *err)
{
	if (*len + 1 >= cap)
		return hu_err_set(err, -EINVAL, "parameter %s longer than %zu bytes", name, cap - 1);
	out[(*len)++] = c;
	return 0;
}

/* The raw parameter `name` of a header value: type *(";" key "=" (token | quoted-string)). */
static int find_param(const char *value, const char *name, char *out, size_t cap, hu_err *err)
{
	size_t name_len = strlen(name);
	int found = 0;
	const char *s = strchr(value, ';');

	while (s && *s == ';') {
		s = skip_blanks(s + 1);
		if (*s == '\0')
			break; /* a trailing ';' is harmless */
		const char *key = s;
		while (*s && *s != '=' && *s != ';' && *s != ' ' && *s != '\t')
			s++;
		size_t key_len = (size_t)(s - key);
		s = skip_blanks(s);
		if (key_len == 0 || *s != '=')
			return hu_err_set(err, -EINVAL, "malformed parameter in \"%.64s\"", value);
		s = skip_blanks(s + 1);
		bool match = key_len == name_len && !strncasecmp(key, name, name_len);
		if (match && found)
			return hu_err_set(err, -EINVAL, "duplicate parameter %s", name);
		size_t len = 0;
		if (*s == '"') {
			for (s++; *s && *s != '"'; s++) {
				if (*s == '\\' && s[1])
					s++;
				if (match && put_char(out, cap, &len, *s, name, err) < 0)
					return -1;
			}
			if (*s != '"')
				return hu_err_set(err, -EINVAL, "unterminated quoted parameter in \"%.64s\"", value);
			s++;
		} else {
			const char *v = s;
			for (; *s && *s != ';' && *s != ' ' && *s != '\t'; s++)
				if (match && put_char(out, cap, &len, *s, name, err) < 0)
					return -1;
			if (s == v)
				return hu_err_set(err, -EINVAL, "empty parameter value in \"%.64s\"", value);
		}
		if (match) {
			out[len] = '\0';
			found = 1;
		}
		s = skip_blanks(s);
		if (*s && *s != ';')
			return hu_err_set(err, -EINVAL, "malformed parameter in \"%.64s\"", value);
	}
	return found;
}

/* RFC 5987 ext-value: charset "'" [language] "'" percent-encoded bytes. */
static int decode_ext_value(const char *ext, char *out, size_t cap, hu_err *err)
{
	const char *q1 = strchr(ext, '\'');
	const char *q2 = q1 ? strchr(q1 + 1, '\'') : NULL;
	if (!q2)
		return hu_err_set(err, -EINVAL, "malformed extended parameter \"%.64s\"", ext);
	size_t cs_len = (size_t)(q1 - ext);
	if (!((cs_len == 5 && !strncasecmp(ext, "utf-8", 5)) || (cs_len == 8 && !strncasecmp(ext, "us-ascii", 8))))
		return hu_err_set(err, -EINVAL, "unsupported charset in \"%.64s\"", ext);
	size_t len = 0;
	for (const char *s = q2 + 1; *s; s++) {
		char c = *s;
		if (c == '%') {
			int hi = hu_hex_digit(s[1]), lo = hi < 0 ? -1 : hu_hex_digit(s[2]);
			if (lo < 0)
				return hu_err_set(err, -EINVAL, "bad percent escape in \"%.64s\"", ext);
			c = (char)(hi * 16 + lo);
			if (c == '\0')
				return hu_err_set(err, -EINVAL, "NUL byte in \"%.64s\"", ext);
			s += 2;
		}
		if (put_char(out, cap, &len, c, "filename*", err) < 0)
			return -1;
	}
	out[len] = '\0';
	return 1;
}

int hu_mime_param(const char *value, const char *name, char *out, size_t cap, hu_err *err)
{
	if (cap == 0)
		return hu_err_set(err, -EINVAL, "no room for parameter %s", name);
	if (!strcasecmp(name, "filename")) {
		char *ext = malloc(cap * 3 + 64); /* percent-encoded: up to 3 bytes per byte */
		if (!ext)
			return hu_err_set(err, ENOMEM, "parameter %s", name);
		int r = find_param(value, "filename*", ext, cap * 3 + 64, err);
		if (r == 1)
			r = decode_ext_value(ext, out, cap, err);
		free(ext);
		if (r != 0)
			return r;
	}
	return find_param(value, name, out, cap, err);
}

/* ---- the boundary ---------------------------------------------------------------- */

static bool is_bchar(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || strchr("'()+_,-./:=? ", c);
}

int hu_multipart_boundary(const char *content_type, char *out, size_t cap, hu_err *err)
{
	static const char prefix[] = "multipart/";
	if (!content_type || strncasecmp(skip_blanks(content_type), prefix, sizeof(prefix) - 1))
		return hu_err_set(err, -EINVAL, "Content-Type %.64s is not multipart", content_type ? content_type : "(none)");
	char b[HU_MULTIPART_MAX_BOUNDARY + 2];
	int r = find_param(content_type, "boundary", b, sizeof(b), err);
	if (r < 0)
		return hu_err_set(err, -EINVAL, "multipart boundary longer than %d bytes or malformed",
				  HU_MULTIPART_MAX_BOUNDARY);
	if (r == 0)
		return hu_err_set(err, -EINVAL, "multipart Content-Type without a boundary");
	size_t len = strlen(b);
	if (len == 0 || len > HU_MULTIPART_MAX_BOUNDARY || b[len - 1] == ' ')
		return hu_err_set(err, -EINVAL, "multipart boundary of bad length or ending in a space");
	for (size_t i = 0; i < len; i++)
		if (!is_bchar(b[i]))
			return hu_err_set(err, -EINVAL, "multipart boundary with a character outside RFC 2046's set");
	if (len + 1 > cap)
		return hu_err_set(err, ENAMETOOLONG, "multipart boundary");
	memcpy(out, b, len + 1);
	return 0;
}

/* ---- the parser ----------------------------------------------------------------- */

int hu_multipart_new(const char *boundary, const struct hu_multipart_cbs *cbs, struct hu_multipart **out, hu_err *err)
{
	size_t len = strlen(boundary);
	if (len == 0 || len > HU_MULTIPART_MAX_BOUNDARY || strpbrk(boundary, "\r\n"))
		return hu_err_set(err, -EINVAL, "bad multipart boundary");
	struct hu_multipart *mp = calloc(1, sizeof(*mp));
	if (!mp)
		return hu_err_set(err, ENOMEM, "multipart parser");
	if (cbs)
		mp->cbs = *cbs;
	mp->dlen = (size_t)snprintf(mp->delim, sizeof(mp->delim), "\r\n--%s", boundary);
	mp->st = ST_PREAMBLE;
	mp->matched = 2; /* the first delimiter may open the body without its CRLF */
	*out = mp;
	return 0;
}

void hu_multipart_free(struct hu_multipart *mp)
{
	free(mp);
}

static int emit(struct hu_multipart *mp, const uint8_t *p, size_t n, hu_err *err)
{
	if (mp->st != ST_BODY || n == 0 || !mp->cbs.on_part_data)
		return 0;
	return mp->cbs.on_part_data(mp->cbs.arg, p, n, err);
}

/* PREAMBLE and BODY: look for the delimiter; content before it goes out.
 * *used is how much of p was consumed (all of it unless a delimiter ended). */
static int scan_body(struct hu_multipart *mp, const uint8_t *p, size_t n, size_t *used, hu_err *err)
{
	size_t i = 0;

	while (i < n) {
		if (mp->matched == 0) {
			const uint8_t *cr = memchr(p + i, '\r', n - i);
			size_t run = cr ? (size_t)(cr - (p + i)) : n - i;
			if (emit(mp, p + i, run, err) < 0)
				return -1;
			i += run;
			if (!cr)
				break;
			mp->delim_start = mp->pos + i;
			mp->matched = 1;
			i++;
			continue;
		}
		if (p[i] == (uint8_t)mp->delim[mp->matched]) {
			i++;
			if (++mp->matched == mp->dlen) {
				mp->matched = 0;
				mp->in_part = mp->st == ST_BODY;
				mp->tail_len = 0;
				mp->st = ST_AFTER_DELIM;
				break;
			}
			continue;
		}
		/* Not a delimiter after all: what matched was content. */
		if (emit(mp, (const uint8_t *)mp->delim, mp->matched, err) < 0)
			return -1;
		mp->matched = 0;
	}
	*used = i;
	return 0;
}

/* The delimiter text was followed by something else: it was content. */
static int reject_delimiter(struct hu_multipart *mp, hu_err *err)
{
	mp->st = mp->in_part ? ST_BODY : ST_PREAMBLE;
	if (emit(mp, (const uint8_t *)mp->delim, mp->dlen, err) < 0 || emit(mp, mp->tail, mp->tail_len, err) < 0)
		return -1;
	mp->tail_len = 0;
	return 0;
}

static int end_part(struct hu_multipart *mp, hu_err *err)
{
	if (!mp->in_part || !mp->cbs.on_part_end)
		return 0;
	return mp->cbs.on_part_end(mp->cbs.arg, mp->delim_start, err);
}

/* One byte after a delimiter. *used is 0 when the byte must be looked at
 * again in the state the parser returned to. */
static int after_delim(struct hu_multipart *mp, uint8_t c, size_t *used, hu_err *err)
{
	uint8_t last = mp->tail_len ? mp->tail[mp->tail_len - 1] : 0;

	*used = 1;
	if (last == '\r') {
		if (c != '\n')
			goto reject;
		if (end_part(mp, err) < 0)
			return -1;
		mp->hdr_len = 0;
		mp->st = ST_HEADERS;
		return 0;
	}
	if (mp->tail_len == 1 && last == '-') {
		if (c != '-')
			goto reject;
		if (end_part(mp, err) < 0)
			return -1;
		mp->st = ST_EPILOGUE;
		return 0;
	}
	bool keep = (c == '-' && mp->tail_len == 0) || c == '\r' || ((c == ' ' || c == '\t') && last != '-');
	if (!keep || mp->tail_len >= HU_MULTIPART_MAX_PADDING)
		goto reject;
	mp->tail[mp->tail_len++] = c;
	return 0;
reject:
	*used = 0;
	return reject_delimiter(mp, err);
}

static int parse_header_line(struct hu_multipart *mp, char *line, bool *seen_disposition, hu_err *err)
{
	struct hu_multipart_part *part = &mp->part;

	if (line[0] == ' ' || line[0] == '\t')
		return hu_err_set(err, -EINVAL, "folded part header lines are not supported");
	char *colon = strchr(line, ':');
	if (!colon || colon == line)
		return hu_err_set(err, -EINVAL, "malformed part header \"%.64s\"", line);
	*colon = '\0';
	char *value = (char *)skip_blanks(colon + 1);
	size_t vlen = strlen(value);
	while (vlen > 0 && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
		value[--vlen] = '\0';

	if (!strcasecmp(line, "Content-Disposition")) {
		if (*seen_disposition)
			return hu_err_set(err, -EINVAL, "duplicate Content-Disposition in a part");
		*seen_disposition = true;
		if (hu_mime_param(value, "name", part->name, sizeof(part->name), err) < 0)
			return -1;
		int r = hu_mime_param(value, "filename", part->filename, sizeof(part->filename), err);
		if (r < 0)
			return -1;
		part->has_filename = r == 1;
	} else if (!strcasecmp(line, "Content-Type")) {
		if (vlen >= sizeof(part->content_type))
			return hu_err_set(err, -EINVAL, "part Content-Type longer than %zu bytes", sizeof(part->content_type) - 1);
		memcpy(part->content_type, value, vlen + 1);
	}
	return 0;
}

/* The header block (ending in an empty line) is complete: decode it and
 * open the part. */
static int begin_part(struct hu_multipart *mp, hu_err *err)
{
	struct hu_multipart_part *part = &mp->part;
	bool seen_disposition = false;

	mp->hdr[mp->hdr_len] = '\0';
	if (memchr(mp->hdr, '\0', mp->hdr_len))
		return hu_err_set(err, -EINVAL, "NUL byte in part headers");
	memset(part, 0, sizeof(*part));
	part->index = mp->nparts++;
	part->data_offset = mp->pos + 1; /* just after the LF being consumed */

	char *line = mp->hdr;
	for (;;) {
		char *crlf = strstr(line, "\r\n");
		*crlf = '\0'; /* the block ends in CRLF, so there is one */
		if (strpbrk(line, "\r\n"))
			return hu_err_set(err, -EINVAL, "bare CR or LF in part headers");
		if (line[0] == '\0')
			break;
		if (parse_header_line(mp, line, &seen_disposition, err) < 0)
			return -1;
		line = crlf + 2;
	}
	mp->st = ST_BODY;
	mp->matched = 0;
	if (mp->cbs.on_part_begin)
		return mp->cbs.on_part_begin(mp->cbs.arg, part, err);
	return 0;
}

static int header_byte(struct hu_multipart *mp, uint8_t c, hu_err *err)
{
	if (mp->hdr_len >= HU_MULTIPART_MAX_HEADERS)
		return hu_err_set(err, -E2BIG, "part headers longer than %d bytes", HU_MULTIPART_MAX_HEADERS);
	mp->hdr[mp->hdr_len++] = (char)c;
	if (c != '\n' || mp->hdr_len < 2 || mp->hdr[mp->hdr_len - 2] != '\r')
		return 0;
	/* An empty line ends the block: "\r\n" alone or "...\r\n\r\n". */
	if (mp->hdr_len == 2 || (mp->hdr_len >= 4 && !memcmp(mp->hdr + mp->hdr_len - 4, "\r\n\r\n", 4)))
		return begin_part(mp, err);
	return 0;
}

static int fail(struct hu_multipart *mp, hu_err *err)
{
	mp->st = ST_FAILED;
	mp->failure = *err;
	return -1;
}

int hu_multipart_feed(struct hu_multipart *mp, const uint8_t *p, size_t n, hu_err *err)
{
	size_t i = 0;

	if (mp->st == ST_FAILED) {
		*err = mp->failure;
		return -1;
	}
	while (i < n) {
		size_t used = 1;
		int r = 0;
		switch (mp->st) {
		case ST_PREAMBLE:
		case ST_BODY:
			r = scan_body(mp, p + i, n - i, &used, err);
			break;
		case ST_AFTER_DELIM:
			r = after_delim(mp, p[i], &used, err);
			break;
		case ST_HEADERS:
			r = header_byte(mp, p[i], err);
			break;
		case ST_EPILOGUE:
			used = n - i;
			break;
		case ST_FAILED:
			return -1;
		}
		if (r < 0)
			return fail(mp, err);
		i += used;
		mp->pos += used;
	}
	return 0;
}

int hu_multipart_finish(struct hu_multipart *mp, hu_err *err)
{
	if (mp->st == ST_FAILED) {
		*err = mp->failure;
		return -1;
	}
	if (mp->st != ST_EPILOGUE) {
		hu_err_set(err, -EINVAL, "truncated: no closing boundary after %llu bytes",
			   (unsigned long long)mp->pos);
		return fail(mp, err);
	}
	return 0;
}
