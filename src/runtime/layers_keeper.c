/*
 * The layers image's keeper (layers.h, hu_layers_linger).
 *
 * Mounting hutch's btrfs image costs 50-350 ms and unmounting it 30 ms or
 * more (btrfs reads its trees and commits), several times a whole `hutch
 * run -- true`. A daemon pays that once; `hutch run` paid it on every run,
 * being the last runtime out each time. The last one out now leaves a
 * keeper behind: a process of its own that holds layers.users shared (so a
 * runtime opening in the meantime finds the image mounted and is not the
 * last out, and the keeper's unmount check fails while one is open), for
 * the linger time, and then does what the last runtime would have done.
 * Nothing stays: the mount and its loop device go at most linger_ms after
 * the last run ends, as they went at its end before.
 *
 * While it lingers, the keeper also holds the last runtime's sealed copy of
 * hutch-init and its sysfs view, so that the next run takes them instead of
 * copying the binary and making a network namespace again (init_keep.h;
 * docs/security.md says why that is safe).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/init_keep.h"
#include "runtime/layers.h"
#include "util/cleanup.h"

/* Keep only the descriptors in `keep` (n of them; -1 entries are skipped):
 * the caller's stdout, pipes and sockets must not stay open for the linger
 * time (a `$(hutch run ...)` would wait for them). */
static int keep_only(const int *keep, size_t n)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	unsigned from = 3;

	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		return -1;
	if (null > 2)
		close(null);
	/* close the gaps between the kept descriptors, lowest first */
	for (;;) {
		int next = -1;
		for (size_t i = 0; i < n; i++)
			if (keep[i] >= (int)from && (next < 0 || keep[i] < next))
				next = keep[i];
		if (next < 0)
			return close_range(from, ~0u, 0);
		if ((unsigned)next > from && close_range(from, (unsigned)next - 1, 0) < 0)
			return -1;
		from = (unsigned)next + 1;
	}
}

/* Hold the sealed hutch-init and the sysfs view for the runtimes that open
 * while we linger, and say where they are (init_keep.h). Without them they
 * make their own. */
static void offer_init(const struct hu_layers *ly)
{
	hu_err ignore;

	if (ly->keep_init_fd >= 0 && ly->keep_dir_fd >= 0 && ly->keep_init_stat.st_ino != 0)
		hu_init_keep_record(ly->keep_dir_fd, ly->keep_init_fd, &ly->keep_init_stat, ly->keep_view_fd,
				    ly->keep_view_netns_fd, &ignore);
}

/* Sleep for ms, or until SIGTERM, SIGINT or SIGHUP (decide at once). */
static void linger(unsigned ms)
{
	struct timespec end, now;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		struct timespec left = {end.tv_sec - now.tv_sec, end.tv_nsec - now.tv_nsec};
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0)
			return;
		if (sigtimedwait(&set, NULL, &left) >= 0 || errno != EINTR)
			return; /* a signal, or the time is up (EAGAIN) */
	}
}

static _Noreturn void keeper(struct hu_layers *ly)
{
	int keep[] = {ly->lock_fd,     ly->users_fd,     ly->keep_init_fd,
		      ly->keep_dir_fd, ly->keep_view_fd, ly->keep_view_netns_fd};

	prctl(PR_SET_NAME, "hutch-layers");
	if (chdir("/") < 0 || keep_only(keep, HU_ARRAY_LEN(keep)) < 0)
		_exit(1);
	/* from the last one out (both exclusive) to one user among others: the
	 * change of layers.users happens under layers.lock, so no other closer
	 * can look in between */
	if (flock(ly->users_fd, LOCK_SH) < 0 || flock(ly->lock_fd, LOCK_UN) < 0)
		_exit(1);
	offer_init(ly);
	linger(ly->linger_ms);
	if (ly->keep_dir_fd >= 0)
		hu_init_keep_forget(ly->keep_dir_fd);
	if (hu_layers_last_out(ly))
		umount2(ly->root, MNT_DETACH);
	_exit(0);
}

int hu_layers_linger(struct hu_layers *ly)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* detached twice: no session, no terminal, and not our child (the
		 * caller does not wait for it) */
		if (setsid() < 0)
			_exit(1);
		pid = fork();
		if (pid < 0)
			_exit(1);
		if (pid > 0)
			_exit(0);
		keeper(ly);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	/* the keeper has the locks (the same open files as ours) from here;
	 * on a failure the caller still holds them and unmounts itself */
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}
