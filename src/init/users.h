/*
 * User and group lookups for hutch-init, by reading the sandbox's own
 * /etc/passwd and /etc/group. No NSS: init must not dlopen modules from the
 * sandbox image, and the files are all a sandbox has.
 */
#ifndef HUTCH_INIT_USERS_H
#define HUTCH_INIT_USERS_H

#include <stddef.h>
#include <sys/types.h>

#include "util/err.h"

#define HU_USER_MAX_GROUPS 64
#define HU_USER_FALLBACK_ID 1000

struct hu_user {
	char name[64];
	uid_t uid;
	gid_t gid;
	char home[1024];
	char shell[256];
	gid_t groups[HU_USER_MAX_GROUPS]; /* supplementary groups, primary first */
	size_t ngroups;
};

/* Resolve "root" or "user" (NULL means "user"). "root" is uid 0 whatever the
 * files say; "user" comes from /etc/passwd, falling back to uid/gid 1000 with
 * home /home/user when the image has no such entry. */
int hu_user_resolve(const char *name, struct hu_user *u, hu_err *err);

/* Names for STAT's OWNER/GROUP; NULL when the id has no name. The returned
 * string lives until the next hu_users_refresh(). */
const char *hu_user_name_of(uid_t uid);
const char *hu_group_name_of(gid_t gid);

/* Re-read the files if they changed; called once per request so a long
 * LIST_DIR scans memory, not the disk. */
void hu_users_refresh(void);
/* Drop the cached files (at exit, so leak checkers stay quiet). */
void hu_users_free(void);

#endif
