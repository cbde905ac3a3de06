#include "util/base64.h"

#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t hu_base64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

size_t hu_base64_encode(const void *in, size_t n, char *out)
{
	const uint8_t *p = in;
	char *o = out;
	size_t i = 0;

	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = alphabet[v >> 18];
		*o++ = alphabet[(v >> 12) & 63];
		*o++ = alphabet[(v >> 6) & 63];
		*o++ = alphabet[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		*o++ = alphabet[v >> 18];
		*o++ = alphabet[(v >> 12) & 63];
		*o++ = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return (size_t)(o - out);
}

char *hu_base64_encode_alloc(const void *in, size_t n)
{
	char *out = malloc(hu_base64_encoded_len(n) + 1);
	if (out)
		hu_base64_encode(in, n, out);
	return out;
}

size_t hu_base64_decoded_max(size_t n)
{
	return (n + 3) / 4 * 3;
}

int hu_base64_sextet(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int hu_base64_decode(const char *in, size_t n, uint8_t *out, size_t *out_len, hu_err *err)
{
	size_t data = n;

	/* Padding, when present, must complete the last quantum exactly. */
	if (n > 0 && in[n - 1] == '=') {
		data = n - 1;
		if (data > 0 && in[data - 1] == '=')
			data--;
		if (n % 4 != 0)
			return hu_err_set(err, EINVAL, "base64: padding does not end a 4-character group");
	}
	if (data % 4 == 1)
		return hu_err_set(err, EINVAL, "base64: truncated input (%zu characters)", data);

	uint8_t *o = out;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < data; i++) {
		int v = hu_base64_sextet((unsigned char)in[i]);
		if (v < 0)
			return hu_err_set(err, EINVAL, "base64: invalid character at offset %zu", i);
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			*o++ = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	*out_len = (size_t)(o - out);
	return 0;
}

int hu_base64_decode_alloc(const char *in, size_t n, uint8_t **out, size_t *out_len, hu_err *err)
{
	size_t max = hu_base64_decoded_max(n);
	uint8_t *buf = malloc(max ? max : 1);
	if (!buf)
		return hu_err_set(err, ENOMEM, "base64: %zu characters", n);
	if (hu_base64_decode(in, n, buf, out_len, err) < 0) {
		free(buf);
		return -1;
	}
	*out = buf;
	return 0;
}
