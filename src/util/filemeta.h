/*
 * File metadata (envd 0.6.2): string pairs a client attaches to a file on
 * upload (`X-Metadata-<key>: <value>` headers), kept in the file's
 * `user.e2b.<key>` extended attributes and reported back in EntryInfo's
 * `metadata`. The rules are the SDK's: a key is a non-empty HTTP token
 * (letters, digits and !#$%&'*+-.^_`|~), a value printable US-ASCII. On the
 * hutch-init protocol a pair travels as one META string "key=value" (a token
 * never holds '='). Pure functions, shared by the daemon and hutch-init.
 */
#ifndef HUTCH_UTIL_FILEMETA_H
#define HUTCH_UTIL_FILEMETA_H

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

#define HU_META_XATTR_PREFIX "user.e2b."
#define HU_META_MAX_PAIRS 64
#define HU_META_KEY_MAX 200    /* keeps "user.e2b." + key under XATTR_NAME_MAX (255) */
#define HU_META_VALUE_MAX 4096

bool hu_meta_key_valid(const char *key, size_t len);
bool hu_meta_value_valid(const char *value, size_t len);
/* Split a META "key=value" string; -1 with EINVAL naming what is wrong. */
int hu_meta_split(const char *kv, const char **value, size_t *key_len, hu_err *err);

#endif
