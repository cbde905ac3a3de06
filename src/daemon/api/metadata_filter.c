/* The metadata list filter: E2B's encoding (metadata_filter.h). */
#include "daemon/api/metadata_filter.h"

#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/parse.h"

#define BAD(err, ...) hu_err_set((err), -EINVAL, __VA_ARGS__)

/* URL-unescape s[0..len) into a new NUL-terminated string. A decoded NUL
 * is refused: keys and values are C strings everywhere after this. */
static char *unescape(const char *s, size_t len, const char *what, hu_err *err)
{
	char *out = malloc(len + 1);
	size_t o = 0;

	if (!out) {
		hu_err_set(err, ENOMEM, "metadata filter");
		return NULL;
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '+') {
			out[o++] = ' ';
		} else if (s[i] != '%') {
			out[o++] = s[i];
		} else {
			int hi = i + 2 < len ? hu_hex_digit(s[i + 1]) : -1, lo = i + 2 < len ? hu_hex_digit(s[i + 2]) : -1;
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				BAD(err, "metadata filter: bad %%-escape in %s at byte %zu", what, i);
				free(out);
				return NULL;
			}
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		}
	}
	out[o] = '\0';
	return out;
}

/* One "key=value" pair (still escaped) into the filter object. */
static int add_pair(json_t *filter, const char *pair, size_t len, hu_err *err)
{
	const char *eq = memchr(pair, '=', len);
	_cleanup_free_ char *key = NULL;
	_cleanup_free_ char *val = NULL;

	if (!eq)
		return BAD(err, "metadata filter: '%.*s' is not key=value", (int)(len > 64 ? 64 : len), pair);
	key = unescape(pair, (size_t)(eq - pair), "a key", err);
	if (!key)
		return -1;
	val = unescape(eq + 1, len - (size_t)(eq - pair) - 1, "a value", err);
	if (!val)
		return -1;
	if (!*key)
		return BAD(err, "metadata filter: empty key");
	/* A key twice could only match if both values were equal: a mistake. */
	if (json_object_get(filter, key))
		return BAD(err, "metadata filter: key '%.64s' given twice", key);
	if (json_object_set_new(filter, key, json_string(val)) < 0)
		return BAD(err, "metadata filter: '%.64s' is not valid UTF-8", key);
	return 0;
}

int hu_metadata_filter_parse(const char *value, json_t **filter, hu_err *err)
{
	_cleanup_free_ char *pairs = NULL;
	json_t *f;
	const char *p, *end;

	*filter = NULL;
	pairs = unescape(value, strlen(value), "the query", err);
	if (!pairs)
		return -1;
	f = json_object();
	if (!f)
		return hu_err_set(err, ENOMEM, "metadata filter");
	for (p = pairs; *p; p = *end ? end + 1 : end) {
		end = strchr(p, '&');
		if (!end)
			end = p + strlen(p);
		/* Empty segments ("a=b&" or "&&") carry nothing: skip, as form
		 * decoders do. */
		if (end > p && add_pair(f, p, (size_t)(end - p), err) < 0) {
			json_decref(f);
			return -1;
		}
	}
	*filter = f;
	return 0;
}

int hu_metadata_filter_match(const json_t *filter, const json_t *metadata)
{
	const char *k;
	json_t *want;

	json_object_foreach((json_t *)filter, k, want) {
		const json_t *have = json_object_get(metadata, k);
		if (!json_is_string(have) || !json_equal((json_t *)have, want))
			return 0;
	}
	return 1;
}
