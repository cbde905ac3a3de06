/* Small file-system helpers shared by the runtime, init and the CLI. */
#ifndef HUTCH_UTIL_FILEUTIL_H
#define HUTCH_UTIL_FILEUTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "util/err.h"

/* Write the whole buffer to path (O_WRONLY|O_CLOEXEC, plus `extra_flags` such
 * as O_CREAT|O_TRUNC) with `mode` for a created file. */
int hu_write_file(const char *path, const void *buf, size_t len, int extra_flags, mode_t mode, hu_err *err);

/* Write a NUL-terminated string to an existing file (cgroup and proc knobs). */
int hu_write_str(const char *path, const char *s, hu_err *err);

/* Write a whole buffer to an fd, retrying short writes and EINTR. */
int hu_write_all(int fd, const void *buf, size_t len);

/* Read up to cap-1 bytes of a file into buf and NUL-terminate it; returns the
 * byte count. */
ssize_t hu_read_file(const char *path, char *buf, size_t cap, hu_err *err);

/* mkdir -p with `mode` for the created directories. */
int hu_mkdir_p(const char *path, mode_t mode, hu_err *err);

/* rm -rf that never crosses into another mount (so a forgotten bind mount is
 * never emptied) and never follows symlinks. Missing path is success. */
int hu_rm_rf(const char *path, hu_err *err);
/* The same for entry `name` of directory fd `parent` (same mount only). */
int hu_rm_at(int parent, const char *name, hu_err *err);

#endif
