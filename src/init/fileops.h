/*
 * File requests of hutch-init (STAT, LIST_DIR, MKDIR, MOVE, REMOVE, READ,
 * WRITE_*), performed with the requesting user's file-system identity
 * (setfsuid/setfsgid/setgroups) so the kernel's permission checks are the
 * user's, not init's.
 */
#ifndef HUTCH_INIT_FILEOPS_H
#define HUTCH_INIT_FILEOPS_H

#include <stdbool.h>
#include <sys/types.h>

#include "init/conn.h"
#include "init/request.h"
#include "init/users.h"

#define HU_FILEOPS_MAX_WRITES 16      /* open WRITE_OPENs per connection */
#define HU_FILEOPS_MAX_ENTRIES 100000 /* entries of one LIST_DIR */

void hu_fileops_handle(struct hu_conn *c, const struct hu_request *req);
/* c is closing: abandon its transfers (a half-written file stays as is). */
void hu_fileops_forget_conn(struct hu_conn *c);
/* c has room in its queue again: continue its READ streams. */
void hu_fileops_conn_drained(struct hu_conn *c);

/* Append one ENTRY field for path (st from lstat; at_fd/name locate it for
 * readlinkat, AT_FDCWD/path will do). */
struct hu_buf;
struct stat;
void hu_fileops_put_entry(struct hu_buf *b, const char *path, const struct stat *st, int at_fd, const char *name);

/* Init's own file-system identity, saved while it acts as a user. */
struct hu_fs_identity {
	bool switched;
	uid_t fsuid;
	gid_t fsgid;
	gid_t groups[HU_USER_MAX_GROUPS];
	int ngroups;
};

/* Take the user's file-system identity (fsuid, fsgid, groups) so the
 * kernel checks the user's permissions; a no-op when init is unprivileged
 * (tests). Undo with hu_fs_become_init before serving anyone else. */
int hu_fs_become_user(const struct hu_user *u, struct hu_fs_identity *saved, hu_err *err);
void hu_fs_become_init(struct hu_fs_identity *saved);

/* Lexically normalise `in` into `out` (PATH_MAX bytes): relative paths are
 * taken from `home`, "." and ".." and repeated slashes are resolved. */
int hu_path_normalize(const char *in, const char *home, char *out, size_t cap, hu_err *err);

#endif
