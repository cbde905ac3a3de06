/*
 * Scope-bound cleanup (as in crun and systemd): a variable declared with one of
 * these attributes is released on every return path of its scope.
 */
#ifndef HUTCH_UTIL_CLEANUP_H
#define HUTCH_UTIL_CLEANUP_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

static inline void hu_freep(void *p)
{
	free(*(void **)p);
}

static inline void hu_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

#define _cleanup_free_ __attribute__((cleanup(hu_freep)))
#define _cleanup_close_ __attribute__((cleanup(hu_closep)))

/* Hand ownership out of a cleanup-scoped variable. */
static inline int hu_take_fd(int *fd)
{
	int r = *fd;
	*fd = -1;
	return r;
}

#define HU_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* The struct of type `type` whose member `member` ptr points at. */
#define HU_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#endif
