/*
 * File metadata from upload headers: every `X-Metadata-<key>: <value>`
 * header of a POST /files is one pair (util/filemeta.h), applied to each
 * file of the upload. A malformed pair is a 400 and nothing is written.
 */
#ifndef HUTCH_DAEMON_META_HEADERS_H
#define HUTCH_DAEMON_META_HEADERS_H

#include <sys/queue.h>

#include <event2/keyvalq_struct.h>
#include <stddef.h>

#include "util/filemeta.h"

struct hu_meta_set {
	char *kv[HU_META_MAX_PAIRS]; /* "key=value", malloc'd */
	size_t n;
};

/* One header: not an X-Metadata-* name -> 0, nothing added; a valid pair ->
 * added (a key given again replaces its value), 0; invalid -> -1 with
 * EINVAL naming the problem. */
int hu_meta_set_add_header(struct hu_meta_set *m, const char *name, const char *value, hu_err *err);
/* Every header of h. */
int hu_meta_set_from_headers(struct hu_meta_set *m, const struct evkeyvalq *h, hu_err *err);
void hu_meta_set_clear(struct hu_meta_set *m);

#endif
