/*
 * Who works on a data dir: a POSIX record lock on <data_dir>/hutch.lock.
 *
 * `hutch serve` and `hutch run` hold it shared for as long as they run (any
 * number of them at once); `hutch template rm` takes it exclusive, without
 * waiting, so it removes a template only while nothing can be building a
 * sandbox on it. POSIX locks (not flock) because they belong to the process:
 * a sandbox forked by the daemon never inherits one, so a sandbox that
 * outlives its daemon does not keep the data dir "in use", and the kernel
 * drops the lock when the holder dies, so a crash leaves nothing to clean.
 */
#ifndef HUTCH_DAEMON_DATADIR_LOCK_H
#define HUTCH_DAEMON_DATADIR_LOCK_H

#include <sys/types.h>

#include "util/err.h"

#define HU_DATADIR_LOCK_FILE "hutch.lock"

/* Take the lock shared, waiting while an exclusive holder (a template rm,
 * quick) has it. The fd (close-on-exec) is the lock; closing it releases
 * it. The data dir must exist. */
int hu_datadir_lock_shared(const char *data_dir, hu_err *err);
/* Take it exclusive without waiting: the fd, or -1 with EBUSY and *holder
 * set to the pid of a process holding it (0 if unknown). */
int hu_datadir_lock_exclusive(const char *data_dir, pid_t *holder, hu_err *err);

#endif
