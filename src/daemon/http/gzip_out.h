/*
 * gzip for GET /files answers: a client that sends `Accept-Encoding: gzip`
 * (the SDK's `read(path, {gzip: true})`) gets the file compressed on the
 * fly, chunk by chunk, so a large file never sits whole in memory.
 */
#ifndef HUTCH_DAEMON_GZIP_OUT_H
#define HUTCH_DAEMON_GZIP_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct hu_gzip_out;

/* Does an Accept-Encoding value accept gzip? ("gzip", "x-gzip", or "*",
 * as a list member without q=0.) Pure, fuzzed. */
bool hu_accepts_gzip(const char *accept_encoding);

int hu_gzip_out_new(struct hu_gzip_out **out, hu_err *err);
void hu_gzip_out_free(struct hu_gzip_out *z);
/* Compress len bytes (finish: and end the gzip member), handing every
 * piece of output to sink. sink returns -1 to stop. */
int hu_gzip_out_write(struct hu_gzip_out *z, const uint8_t *data, size_t len, bool finish,
		      int (*sink)(void *arg, const uint8_t *out, size_t n), void *arg, hu_err *err);

#endif
