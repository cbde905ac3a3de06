/*
 * The `metadata` query filter of GET /sandboxes and GET /v2/sandboxes.
 *
 * The SDK encodes {user:'alice','a b':'c&d'} three times: each key and value
 * with encodeURIComponent, the pairs with URLSearchParams, and the whole
 * string once more as a query value. After the HTTP layer's normal query
 * decoding, `value` here is "user=alice&a%2520b=c%2526d"; this module
 * URL-unescapes it once, splits on '&' then '=', and unescapes each key and
 * value ('+' is a space in both steps, as form decoding has it).
 */
#ifndef HUTCH_DAEMON_METADATA_FILTER_H
#define HUTCH_DAEMON_METADATA_FILTER_H

#include <jansson.h>

#include "util/err.h"

/* Decode into a new object of key -> value. An empty value gives an empty
 * object (no filter). EINVAL for a malformed %-escape, a pair without '=',
 * an empty key, a NUL byte or a key given twice. */
int hu_metadata_filter_parse(const char *value, json_t **filter, hu_err *err);

/* 1 when every filter pair is in metadata with the same value (AND). */
int hu_metadata_filter_match(const json_t *filter, const json_t *metadata);

#endif
