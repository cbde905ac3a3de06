/*
 * JSON helpers every layer of the daemon shares (json.c), on jansson.
 */
#ifndef HUTCH_DAEMON_COMMON_JSON_H
#define HUTCH_DAEMON_COMMON_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* A JSON string of s; bytes that are not valid UTF-8 become '?' (error
 * messages may echo client input, and json_string() refuses such bytes). */
json_t *hu_json_text(const char *s);
/* Parse buf as one JSON object; -1 with EINVAL and the reason otherwise. */
int hu_json_parse_object(const uint8_t *buf, size_t len, json_t **out, hu_err *err);

#endif
