/* Lower-case hex: tokens, keys and hashes. */
#ifndef HUTCH_UTIL_HEX_H
#define HUTCH_UTIL_HEX_H

#include <stddef.h>

#include "util/err.h"

/* Write 2 * n hex digits and a NUL to out (2 * n + 1 bytes). */
void hu_hex_encode(const void *in, size_t n, char *out);
/* n random bytes from getrandom(), as 2 * n hex digits and a NUL. */
int hu_random_hex(char *out, size_t n, hu_err *err);

#endif
