/*
 * File metadata (util/filemeta.h) kept in a file's user.e2b.* extended
 * attributes, as envd keeps it: written on upload, read into every ENTRY.
 * Runs with the requesting user's file-system identity like every file
 * request, so the kernel's xattr permission checks are the user's.
 */
#ifndef HUTCH_INIT_XATTRMETA_H
#define HUTCH_INIT_XATTRMETA_H

#include <stddef.h>

#include "proto/initproto.h"
#include "util/err.h"

/* Remove every user.e2b.* attribute of the open file fd, then set the
 * metac "key=value" pairs of metav (already validated by the decoder). */
int hu_xmeta_replace(int fd, char *const *metav, size_t metac, hu_err *err);
/* Append a META field for each user.e2b.* attribute of path (not following
 * a final symlink). Attributes that are unreadable, too big or not valid
 * metadata are left out: they are not hutch's to report. */
void hu_xmeta_put(struct hu_buf *b, const char *path);

#endif
