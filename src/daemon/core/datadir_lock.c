/* The data dir lock (datadir_lock.h). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/daemon.h"
#include "daemon/core/datadir_lock.h"
#include "util/cleanup.h"

/* O_RDWR: a shared (read) lock needs read access, an exclusive one write
 * access; O_NOFOLLOW: a symlink planted at the name is refused. */
static int open_lock(const char *data_dir, hu_err *err)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", data_dir, HU_DATADIR_LOCK_FILE) >= sizeof(path))
		return hu_err_set(err, -ENAMETOOLONG, "data dir path too long");
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return hu_err_sys(err, "open %s", path);
	return fd;
}

static void whole_file(struct flock *fl, short type)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET; /* l_start = l_len = 0: the whole file */
}

/* The pid of a process whose lock keeps one of `type` off the whole file,
 * or 0 (none now: it may be gone by the time it is asked). */
static pid_t holder_of(int fd, short type)
{
	struct flock fl;

	whole_file(&fl, type);
	return fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? fl.l_pid : 0;
}

int hu_datadir_lock_shared(const char *data_dir, hu_err *err)
{
	struct flock fl;
	_cleanup_close_ int fd = open_lock(data_dir, err);

	if (fd < 0)
		return -1;
	whole_file(&fl, F_RDLCK);
	if (fcntl(fd, F_SETLK, &fl) == 0)
		return hu_take_fd(&fd);
	/* held exclusively (a `hutch template rm`): say why the start waits */
	pid_t holder = holder_of(fd, F_RDLCK);
	if (holder)
		hu_log(HU_LOG_INFO, NULL, 0, "data dir %s is locked by pid %d (hutch template rm); waiting", data_dir,
		       (int)holder);
	while (fcntl(fd, F_SETLKW, &fl) < 0)
		if (errno != EINTR)
			return hu_err_sys(err, "lock %s/%s", data_dir, HU_DATADIR_LOCK_FILE);
	return hu_take_fd(&fd);
}

int hu_datadir_lock_exclusive(const char *data_dir, pid_t *holder, hu_err *err)
{
	struct flock fl;
	_cleanup_close_ int fd = open_lock(data_dir, err);

	*holder = 0;
	if (fd < 0)
		return -1;
	whole_file(&fl, F_WRLCK);
	if (fcntl(fd, F_SETLK, &fl) == 0)
		return hu_take_fd(&fd);
	if (errno != EAGAIN && errno != EACCES)
		return hu_err_sys(err, "lock %s/%s", data_dir, HU_DATADIR_LOCK_FILE);
	*holder = holder_of(fd, F_WRLCK); /* for the message */
	return hu_err_set(err, -EBUSY, "data dir %s is in use", data_dir);
}
