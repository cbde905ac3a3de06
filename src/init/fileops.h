/*
 * File requests of hutch-init (STAT, LIST_DIR, MKDIR, MOVE, REMOVE, READ,
 * WRITE_*), performed with the requesting user's file-system identity
 * (setfsuid/setfsgid/setgroups) so the kernel's permission checks are the
 * user's, not init's.
 */
#ifndef HUTCH_INIT_FILEOPS_H
#define HUTCH_INIT_FILEOPS_H

#include "init/conn.h"
#include "init/request.h"

#define HU_FILEOPS_MAX_WRITES 16      /* open WRITE_OPENs per connection */
#define HU_FILEOPS_MAX_ENTRIES 100000 /* entries of one LIST_DIR */

void hu_fileops_handle(struct hu_conn *c, const struct hu_request *req);
/* c is closing: abandon its transfers (a half-written file stays as is). */
void hu_fileops_forget_conn(struct hu_conn *c);
/* c has room in its queue again: continue its READ streams. */
void hu_fileops_conn_drained(struct hu_conn *c);

/* Lexically normalise `in` into `out` (PATH_MAX bytes): relative paths are
 * taken from `home`, "." and ".." and repeated slashes are resolved. */
int hu_path_normalize(const char *in, const char *home, char *out, size_t cap, hu_err *err);

#endif
