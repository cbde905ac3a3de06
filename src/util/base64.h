/*
 * Base64 (RFC 4648) for the wire formats that carry bytes as text: proto3
 * JSON `bytes` fields on the envd data plane, signatures. jansson has none.
 *
 * Encoding is always the standard alphabet with padding (what protobuf JSON
 * writers emit). Decoding is as lenient as protobuf JSON readers are: it
 * accepts the standard and the URL-safe alphabet, with or without padding,
 * but nothing else (no whitespace, no stray characters, no data after
 * padding): bytes that do not decode are an error, never silently dropped.
 */
#ifndef HUTCH_UTIL_BASE64_H
#define HUTCH_UTIL_BASE64_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Characters hu_base64_encode writes for n bytes, without the NUL. */
size_t hu_base64_encoded_len(size_t n);
/* Encode n bytes into out, which has room for hu_base64_encoded_len(n) + 1
 * characters; out is NUL-terminated. Returns the length written. */
size_t hu_base64_encode(const void *in, size_t n, char *out);
/* The same into a malloc'd string; NULL when out of memory. */
char *hu_base64_encode_alloc(const void *in, size_t n);

/* The 6-bit value of a character of either alphabet, or -1. */
int hu_base64_sextet(unsigned char c);
/* An upper bound of the bytes n characters decode to. */
size_t hu_base64_decoded_max(size_t n);
/* Decode n characters into out (room for hu_base64_decoded_max(n) bytes);
 * *out_len gets the byte count. -1 with EINVAL on malformed input. */
int hu_base64_decode(const char *in, size_t n, uint8_t *out, size_t *out_len, hu_err *err);
/* The same into a malloc'd buffer (never NULL on success, even for 0 bytes). */
int hu_base64_decode_alloc(const char *in, size_t n, uint8_t **out, size_t *out_len, hu_err *err);

#endif
