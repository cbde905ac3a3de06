/* Helper processes started like hutch-init (helper.h). */
#include "runtime/helper.h"

#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/runtime_internal.h"
#include "util/cleanup.h"

int hu_helper_find(const char *name, const char *env_var, char *buf, size_t n, hu_err *err)
{
	const char *env = env_var ? getenv(env_var) : NULL;
	char self[PATH_MAX];

	if (env && *env) {
		snprintf(buf, n, "%s", env);
		return 0;
	}
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		return hu_err_sys(err, "readlink /proc/self/exe");
	self[len] = '\0';
	char *dir = dirname(self);
	const char *where[] = {"", "../libexec/hutch/", "../"};
	for (size_t i = 0; i < HU_ARRAY_LEN(where); i++) {
		snprintf(buf, n, "%s/%s%s", dir, where[i], name);
		if (access(buf, X_OK) == 0)
			return 0;
	}
	return hu_err_set(err, ENOENT, "%s not found next to %s%s%s", name, dir, env_var ? "; set " : "",
			  env_var ? env_var : "");
}

/* Prepared by the parent; the child only moves fds and executes. */
struct helper_args {
	int exe, devnull, procs; /* procs: the group's cgroup.procs (cgroup2), or -1 */
	const int *fds;
	size_t n_fds;
	char *const *argv;
	int *failed_errno;
};

/* Runs on its own stack in the parent's memory (CLONE_VM) while the parent
 * waits (CLONE_VFORK): no allocation, no library state, only system calls. */
__attribute__((no_sanitize("address", "undefined"))) static int helper_child(void *arg)
{
	const struct helper_args *a = arg;
	const int base = 3 + HU_HELPER_MAX_FDS + 3; /* above every target */
	int copy[HU_HELPER_MAX_FDS], nul, exe;
	static char *const no_env[] = {NULL};
	sigset_t none;

	/* into our cgroup before the helper's first instruction */
	if (a->procs >= 0 && write(a->procs, "0", 1) != 1)
		goto fail;
	if ((nul = fcntl(a->devnull, F_DUPFD, base)) < 0 || (exe = fcntl(a->exe, F_DUPFD, base)) < 0)
		goto fail;
	for (size_t i = 0; i < a->n_fds; i++)
		if ((copy[i] = fcntl(a->fds[i], F_DUPFD, base)) < 0)
			goto fail;
	if (dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0)
		goto fail;
	for (size_t i = 0; i < a->n_fds; i++)
		if (dup2(copy[i], 3 + (int)i) < 0)
			goto fail;
	/* the executable sits right after the helper's fds, then everything
	 * else the caller had open is closed */
	int exe_at = 3 + (int)a->n_fds;
	if (dup2(exe, exe_at) < 0 || fcntl(exe_at, F_SETFD, FD_CLOEXEC) < 0)
		goto fail;
	syscall(SYS_close_range, exe_at + 1, ~0U, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	syscall(SYS_execveat, exe_at, "", a->argv, no_env, AT_EMPTY_PATH);
fail:
	*a->failed_errno = errno;
	_exit(127);
}

#define HELPER_STACK (64 * 1024)

int hu_helper_start(struct hu_runtime *rt, const struct hu_helper_spec *spec, struct hu_helper *out, hu_err *err)
{
	int failed = 0, pidfd = -1, procs = -1;
	struct hu_cgroup *cg = NULL;

	*out = (struct hu_helper){.pid = -1, .pidfd = -1};
	if (spec->n_fds > HU_HELPER_MAX_FDS)
		return hu_err_set(err, EINVAL, "a helper takes at most %d fds", HU_HELPER_MAX_FDS);
	_cleanup_close_ int exe = hu_runtime_seal_binary(spec->binary, spec->cgroup, NULL, err);
	if (exe < 0)
		return -1;
	_cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		return hu_err_sys(err, "open /dev/null");
	if (hu_cgroup_create(&rt->cg, spec->cgroup, &spec->limits, &cg, err) < 0)
		return -1;
	int cgfd = hu_cgroup_clone_fd(cg);
	if (cgfd >= 0 && (procs = openat(cgfd, "cgroup.procs", O_WRONLY | O_CLOEXEC)) < 0) {
		hu_err_sys(err, "open cgroup.procs of %s", spec->cgroup);
		goto fail;
	}
	struct helper_args a = {.exe = exe, .devnull = devnull, .procs = procs, .fds = spec->fds,
				.n_fds = spec->n_fds, .argv = spec->argv, .failed_errno = &failed};
	char *stack = malloc(HELPER_STACK);
	if (!stack) {
		hu_err_set(err, ENOMEM, "helper stack");
		goto fail;
	}
	int flags = CLONE_VM | CLONE_VFORK | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_PIDFD | SIGCHLD;
	pid_t pid = clone(helper_child, stack + HELPER_STACK, flags, &a, &pidfd);
	int saved = errno;
	free(stack);
	if (pid < 0) {
		errno = saved;
		hu_err_sys(err, "clone %s", spec->cgroup);
		goto fail;
	}
	*out = (struct hu_helper){.pid = pid, .pidfd = pidfd, .cg = cg};
	if (failed) {
		hu_helper_reap(out, NULL);
		errno = failed;
		hu_err_sys(err, "start %s", spec->binary);
		goto fail_reaped;
	}
	/* v1 hierarchies (and pure v1): the parent moves it, a moment late */
	if (hu_cgroup_attach(cg, pid, procs >= 0, err) < 0) {
		hu_helper_reap(out, NULL);
		goto fail_reaped;
	}
	if (procs >= 0)
		close(procs);
	return 0;
fail:
	hu_cgroup_destroy(cg, &(hu_err){0});
fail_reaped:
	if (procs >= 0)
		close(procs);
	*out = (struct hu_helper){.pid = -1, .pidfd = -1};
	return -1;
}

void hu_helper_reap(struct hu_helper *h, int *status)
{
	hu_err ignore;
	int st = 0;

	if (h->pid > 0) {
		if (h->cg)
			hu_cgroup_kill_all(h->cg, &ignore);
		else
			kill(h->pid, SIGKILL);
		while (waitpid(h->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	if (status)
		*status = st;
	if (h->pidfd >= 0)
		close(h->pidfd);
	if (h->cg)
		hu_cgroup_destroy(h->cg, &ignore);
	*h = (struct hu_helper){.pid = -1, .pidfd = -1};
}
