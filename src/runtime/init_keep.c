/* The sealed hutch-init held between runtimes (init_keep.h). */
#include "runtime/init_keep.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/sysfs_view.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

static const char magic[8] = {'H', 'U', 'I', 'N', 'I', 'T', '1', '\n'};

void hu_init_key_of(const struct stat *st, struct hu_init_key *key)
{
	memset(key, 0, sizeof(*key));
	key->dev = (uint64_t)st->st_dev;
	key->ino = (uint64_t)st->st_ino;
	key->size = (uint64_t)st->st_size;
	key->mtime_s = (uint64_t)st->st_mtim.tv_sec;
	key->mtime_ns = (uint64_t)st->st_mtim.tv_nsec;
	key->ctime_s = (uint64_t)st->st_ctim.tv_sec;
	key->ctime_ns = (uint64_t)st->st_ctim.tv_nsec;
}

int hu_proc_start_time(pid_t pid, uint64_t *ticks, hu_err *err)
{
	char path[32], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (hu_read_file(path, buf, sizeof(buf), err) < 0)
		return -1;
	/* the name (field 2) may hold spaces and parentheses: count from the
	 * last ')', after which field 3 comes */
	char *p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%" SCNu64, ticks) != 1)
		return hu_err_set(err, EPROTO, "%s: no start time", path);
	return 0;
}

/* Only our euid (root) may have written it, and nobody else may read it. */
static int private_to_us(const struct stat *st)
{
	return st->st_uid == geteuid() && (st->st_mode & 077) == 0;
}

int hu_init_keep_record(int dirfd, int memfd, const struct stat *src, int view, int view_netns, hu_err *err)
{
	struct hu_init_keep_record r;

	memset(&r, 0, sizeof(r));
	memcpy(r.magic, magic, sizeof(magic));
	r.pid = (int32_t)getpid();
	r.fd = memfd;
	r.view_fd = view >= 0 && view_netns >= 0 ? view : -1;
	r.view_netns_fd = view >= 0 && view_netns >= 0 ? view_netns : -1;
	hu_init_key_of(src, &r.key);
	if (hu_proc_start_time(getpid(), &r.start_time, err) < 0)
		return -1;
	struct iovec part = {.iov_base = &r, .iov_len = sizeof(r)};
	if (hu_replace_private_at(dirfd, HU_INIT_KEEP_RECORD, &part, 1, err) < 0) {
		hu_err_prefix(err, "init keeper");
		return -1;
	}
	return 0;
}

/* The record, if it is a regular file of root's alone with one name and the
 * record's exact size and magic. */
static int read_record(int dirfd, struct hu_init_keep_record *r)
{
	struct stat st;

	/* O_NOFOLLOW: a symlink is refused (ELOOP), never followed */
	_cleanup_close_ int fd = openat(dirfd, HU_INIT_KEEP_RECORD, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !private_to_us(&st) || st.st_nlink != 1 ||
	    st.st_size != (off_t)sizeof(*r))
		return -1;
	if (pread(fd, r, sizeof(*r), 0) != (ssize_t)sizeof(*r) || memcmp(r->magic, magic, sizeof(magic)) != 0)
		return -1;
	return 0;
}

void hu_init_keep_forget(int dirfd)
{
	struct hu_init_keep_record r;

	if (read_record(dirfd, &r) == 0 && r.pid == (int32_t)getpid())
		unlinkat(dirfd, HU_INIT_KEEP_RECORD, 0);
}

/* A pidfd of the recorded process, or -1 if the pid is gone or now names
 * another process. The start time is read after the pidfd is open: a match
 * then means the pidfd is the recorded process, not a later one. */
static int open_keeper(const struct hu_init_keep_record *r)
{
	uint64_t start;
	hu_err ignore;

	if (r->pid <= 0 || r->fd < 0)
		return -1;
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)r->pid, 0);
	if (pidfd < 0 || hu_proc_start_time(r->pid, &start, &ignore) < 0 || start != r->start_time)
		return -1;
	return hu_take_fd(&pidfd);
}

/* The copy is what it must be: a memfd of the source's size that nobody can
 * change (a file on disk or a tmpfs file cannot carry F_SEAL_WRITE), mode
 * 0555 as hu_runtime_seal_binary makes it. */
static int sealed_copy_of(int fd, const struct hu_init_key *key)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 && (seals & HU_INIT_SEALS) == HU_INIT_SEALS && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       (st.st_mode & 07777) == 0555 && (uint64_t)st.st_size == key->size;
}

/* Descriptor `num` of the process behind pidfd, or -1. */
static int getfd(int pidfd, int32_t num)
{
	return num < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, num, 0);
}

/* The sealed copy from the keeper behind pidfd, if it is one of `src`. */
static int take_init(int pidfd, const struct hu_init_keep_record *r, const struct stat *src)
{
	struct hu_init_key want;

	hu_init_key_of(src, &want);
	if (memcmp(&r->key, &want, sizeof(want)) != 0)
		return -1;
	/* the new descriptor is close-on-exec, as memfd_create's was */
	_cleanup_close_ int fd = getfd(pidfd, r->fd);
	if (fd < 0 || !sealed_copy_of(fd, &want))
		return -1;
	return hu_take_fd(&fd);
}

/* The sysfs view and its namespace from the keeper, if they pass the check. */
static void take_view(int pidfd, const struct hu_init_keep_record *r, int *view, int *netns)
{
	_cleanup_close_ int v = getfd(pidfd, r->view_fd);
	_cleanup_close_ int ns = getfd(pidfd, r->view_netns_fd);
	if (v < 0 || ns < 0 || !hu_sysfs_view_check(v, ns))
		return;
	*view = hu_take_fd(&v);
	*netns = hu_take_fd(&ns);
}

void hu_init_keep_take(int dirfd, const struct stat *src, int *init, int *view, int *netns)
{
	struct hu_init_keep_record r;

	*init = *view = *netns = -1;
	if (read_record(dirfd, &r) < 0)
		return;
	_cleanup_close_ int pidfd = open_keeper(&r);
	if (pidfd < 0)
		return;
	if (src)
		*init = take_init(pidfd, &r, src);
	take_view(pidfd, &r, view, netns);
}
