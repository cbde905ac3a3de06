/* Small file-system helpers shared by the runtime, init and the CLI. */
#ifndef HUTCH_UTIL_FILEUTIL_H
#define HUTCH_UTIL_FILEUTIL_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "util/err.h"

/* Write the whole buffer to path (O_WRONLY|O_CLOEXEC, plus `extra_flags` such
 * as O_CREAT|O_TRUNC) with `mode` for a created file. */
int hu_write_file(const char *path, const void *buf, size_t len, int extra_flags, mode_t mode, hu_err *err);

/* Write a NUL-terminated string to an existing file (cgroup and proc knobs). */
int hu_write_str(const char *path, const char *s, hu_err *err);

/* Write a whole buffer to an fd, retrying short writes and EINTR. */
int hu_write_all(int fd, const void *buf, size_t len);

/* Replace entry `name` of directory fd `dirfd` with a new 0600 file holding
 * the n_parts buffers, whole or not at all: they are written under a random
 * temporary name (O_EXCL, never through a symlink) and renamed over `name`,
 * which replaces whatever had it (a refused file, a symlink) without
 * following it. On failure the temporary file is removed. */
int hu_replace_private_at(int dirfd, const char *name, const struct iovec *parts, size_t n_parts, hu_err *err);

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
