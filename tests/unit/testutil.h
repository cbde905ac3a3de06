/* Helpers shared by unit tests (header-only; tests are built one file each,
 * with -Itests). */
#ifndef HUTCH_TESTS_TESTUTIL_H
#define HUTCH_TESTS_TESTUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The hutch-init of the tree this test binary belongs to (HUTCH_INIT
 * overrides): tests run from the repository root. */
static inline const char *hu_test_init_path(void)
{
	char self[PATH_MAX];
	const char *env = getenv("HUTCH_INIT");
	if (env && *env)
		return env;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	return strstr(self, "build-san") ? "build-san/hutch-init" : "build/hutch-init";
}

/* errno of a call that returned rc (0 when it succeeded): probes in forked
 * children report results, not crashes. */
static inline int hu_test_errno_of(int rc)
{
	return rc < 0 ? errno : 0;
}

/* Try openat(dirfd, path, flags) and close at once: 0 or the errno. */
static inline int hu_test_open_errno(int dirfd, const char *path, int flags)
{
	int fd = openat(dirfd, path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* Run probe(arg, out) in a forked child (for irreversible steps such as
 * confinement) and copy the n bytes it fills into out. Returns 0 when the
 * child filled them and exited 0, -1 otherwise. */
static inline int hu_test_in_child(void (*probe)(void *arg, void *out), void *arg, void *out, size_t n)
{
	int pfd[2], status;

	if (pipe(pfd) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(pfd[0]);
		probe(arg, out);
		_exit(write(pfd[1], out, n) == (ssize_t)n ? 0 : 4);
	}
	close(pfd[1]);
	ssize_t got = read(pfd[0], out, n);
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return got == (ssize_t)n && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

#endif
