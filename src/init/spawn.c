#include "init/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init/pty.h"
#include "init/users.h"
#include "runtime/caps.h"
#include "util/cleanup.h"

#define DEFAULT_PATH "/opt/hutch/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* How long SPAWN waits for the child to reach execve. Only a child stuck
 * before exec (say, chdir into a hung mount) takes long; SPAWN must not hang
 * init with it. */
#define EXEC_WAIT_MS 10000

/*
 * How the child is made. The plain build uses clone(CLONE_VM) on a stack of
 * its own: no copy of init's page tables and no copy-on-write faults on
 * either side afterwards, on the critical path of every command start
 * (issue 20).
 *
 * The child then runs in init's memory until it execs, and init waits for it
 * (wait_exec: the CLOEXEC error pipe closes at the exec, after the kernel has
 * given the child a memory of its own, or at its exit) with everything the
 * child reads left alone: the plan and what it points to are changed or freed
 * only after that wait. So everything the child calls, from child_main to the
 * execvp, keeps to these rules:
 *  - no malloc/free, no stdio streams, no writes to init's globals: what it
 *    needs the parent prepared (struct child_plan), messages are formatted
 *    into a hu_err on its own stack (vsnprintf into a buffer takes no lock
 *    and allocates nothing for these formats; util/err.c avoids strerror's
 *    gettext locks). The one global written is environ, for execvp's PATH
 *    search; the parent puts init's back after the wait (spawn_vm_done).
 *    errno is shared too (the child runs on init's thread pointer): the
 *    parent's only calls meanwhile (close, poll, read; kill and waitpid) set
 *    it only when they fail, which they do not on a pipe it owns and a child
 *    of its own, and nothing of the child's path reads it but right after
 *    its own calls;
 *  - the calls it makes are system calls or glibc functions that only make
 *    them: signal/sigprocmask, setsid, open/dup2/ioctl/close, the set*id
 *    wrappers (a direct system call while the process is single-threaded,
 *    which init is: it never starts a thread), prctl/capset (runtime/caps.c:
 *    an open/read/strtol on its own stack), chdir, umask, close_range, and
 *    execvp, which searches PATH in a buffer on the stack (whose size
 *    spawn_vm gives it);
 *  - no signal handler of init may run in the child: the parent blocks every
 *    signal around the clone, the child sets every disposition to the
 *    default and only then unblocks (hu_spawn_reset_signals).
 *
 * Not CLONE_VFORK (glibc's posix_spawn's choice): its parent sleeps in the
 * kernel until the child execs or exits, so the 10 s limit would have to be
 * the child's own (a POSIX timer, which execve deletes), and a root process
 * of the sandbox that sends SIGSTOP to the next pids catches the child before
 * it can arm one: tried, init stays suspended for as long as the child is
 * stopped. Here init's poll gives up after EXEC_WAIT_MS whatever the child
 * does, as it did after fork.
 *
 * The sanitizer build keeps fork(): ASan knows only the thread's own stack
 * and poisons the frames' redzones in the shadow memory it shares with init.
 * Tried (the unit tests of init with CLONE_VM | CLONE_VFORK forced on under
 * ASan): every child warns "ASan is ignoring requested
 * __asan_handle_no_return" (a stack it does not know) and, once a mapping
 * reuses a freed child stack's addresses, the redzones left there poisoned
 * are reported as a stack-buffer-overflow. The plain build, the one users
 * run, is what tests/unit (build), the e2e runs with `build` and the
 * benchmarks exercise.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SPAWN_VM 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPAWN_VM 0
#endif
#endif
#ifndef SPAWN_VM
#define SPAWN_VM 1
#endif

/* The CLONE_VM child's stack: its own frames (child_main, hu_err_sys's
 * vsnprintf, execvp's PATH buffer of up to PATH_MAX + NAME_MAX) with room to
 * spare, plus execvp's copy of argv when it runs a script through /bin/sh,
 * sized per call. A PROT_NONE page below it turns an overflow into a crash
 * of the child instead of a write into init's memory. */
#define CHILD_STACK (64 * 1024)

extern char **environ;

void hu_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

/* ---- environment ---------------------------------------------------------- */

struct envbuild {
	char **v;
	size_t n, cap;
	bool oom;
};

/* Set KEY=VALUE in e, replacing an earlier entry of the same key. */
static void env_put(struct envbuild *e, const char *kv)
{
	size_t keylen = strcspn(kv, "=");
	char *copy = strdup(kv);
	if (!copy) {
		e->oom = true;
		return;
	}
	for (size_t i = 0; i < e->n; i++) {
		if (!strncmp(e->v[i], kv, keylen) && e->v[i][keylen] == '=') {
			free(e->v[i]);
			e->v[i] = copy;
			return;
		}
	}
	if (e->n + 2 > e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 16;
		char **v = realloc(e->v, cap * sizeof(*v));
		if (!v) {
			free(copy);
			e->oom = true;
			return;
		}
		e->v = v;
		e->cap = cap;
	}
	e->v[e->n++] = copy;
	e->v[e->n] = NULL;
}

static void env_putf(struct envbuild *e, const char *key, const char *val)
{
	char *kv;
	if (asprintf(&kv, "%s=%s", key, val) < 0) {
		e->oom = true;
		return;
	}
	env_put(e, kv);
	free(kv);
}

/* A clean environment: nothing of init's own leaks into the sandbox's
 * processes; the request's ENV entries override the defaults. */
static char **build_env(const struct hu_request *req, const struct hu_user *u, hu_err *err)
{
	struct envbuild e = {0};

	env_putf(&e, "PATH", DEFAULT_PATH);
	env_putf(&e, "HOME", u->home);
	env_putf(&e, "USER", u->name);
	env_putf(&e, "LOGNAME", u->name);
	env_putf(&e, "SHELL", u->shell);
	if (req->pty)
		env_putf(&e, "TERM", "xterm-256color"); /* a pty without TERM confuses most tools */
	for (size_t i = 0; i < req->envc; i++)
		env_put(&e, req->envv[i]);
	if (e.oom) {
		hu_strv_free(e.v);
		hu_err_set(err, ENOMEM, "build environment");
		return NULL;
	}
	return e.v;
}

/* ---- the child ---------------------------------------------------------------- */

/* Everything the child needs, prepared by the parent so the child only makes
 * system calls between fork and exec. */
struct child_plan {
	const struct hu_request *req;
	const struct hu_user *user;
	char **envv;
	const char *cwd;  /* NULL: home, falling back to / */
	int pty_slave;    /* or -1 */
	int stdin_rd;     /* pipe read end, or -1 for /dev/null (unused with a pty) */
	int stdout_wr, stderr_wr;
	int errpipe_wr;
};

static _Noreturn void child_fail(int errpipe, const hu_err *err)
{
	/* A hu_err is well under PIPE_BUF, so this write is atomic. */
	(void)!write(errpipe, err, sizeof(*err));
	_exit(127);
}

void hu_spawn_reset_signals(void)
{
	sigset_t none;
	/* init ignores SIGPIPE and blocks SIGCHLD; a program must start with the
	 * defaults it would get from any shell. */
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static int setup_stdio(const struct child_plan *p, hu_err *err)
{
	if (p->pty_slave >= 0)
		return hu_pty_make_controlling(p->pty_slave, err);
	int in = p->stdin_rd;
	if (in < 0) {
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (in < 0)
			return hu_err_sys(err, "open /dev/null");
	}
	/* dup2 clears CLOEXEC on the copies; the originals close at exec. */
	if (dup2(in, 0) < 0 || dup2(p->stdout_wr, 1) < 0 || dup2(p->stderr_wr, 2) < 0)
		return hu_err_sys(err, "set up stdio");
	return 0;
}

/* Become the user. The bounding set is reduced while still root (that needs
 * CAP_SETPCAP, which a non-root uid no longer has), then the ids change, then
 * the remaining sets are cut: together this is hu_caps_drop_to() split around
 * setresuid so it also works for "user". */
int hu_spawn_become(const struct hu_user *u, hu_err *err)
{
	uint64_t keep = u->uid == 0 ? HU_CAPS_ROOT_DEFAULT : 0;

	if (geteuid() != 0)
		return 0; /* an unprivileged init (tests) has nothing to give away */
	if (hu_caps_bound_to(keep, err) < 0)
		return -1;
	if (setgroups(u->ngroups, u->groups) < 0)
		return hu_err_sys(err, "setgroups");
	if (setresgid(u->gid, u->gid, u->gid) < 0)
		return hu_err_sys(err, "setresgid %u", (unsigned)u->gid);
	if (setresuid(u->uid, u->uid, u->uid) < 0)
		return hu_err_sys(err, "setresuid %u", (unsigned)u->uid);
	return hu_caps_set(keep, err);
}

static _Noreturn void child_main(const struct child_plan *p)
{
	hu_err err;

	hu_spawn_reset_signals();
	if (setsid() < 0) {
		hu_err_sys(&err, "setsid");
		child_fail(p->errpipe_wr, &err);
	}
	if (setup_stdio(p, &err) < 0 || hu_spawn_become(p->user, &err) < 0)
		child_fail(p->errpipe_wr, &err);
	umask(022);
	if (p->cwd) {
		/* a relative cwd is taken from the user's home, as envd resolves it */
		if ((p->cwd[0] != '/' && chdir(p->user->home) < 0) || chdir(p->cwd) < 0) {
			hu_err_sys(&err, "chdir %s", p->cwd);
			child_fail(p->errpipe_wr, &err);
		}
	} else if (chdir(p->user->home) < 0 && chdir("/") < 0) {
		hu_err_sys(&err, "chdir /");
		child_fail(p->errpipe_wr, &err);
	}
	/* Nothing of init's may reach the program; marking instead of closing
	 * keeps the error pipe usable until execve itself succeeds. */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
		hu_err_sys(&err, "close_range");
		child_fail(p->errpipe_wr, &err);
	}
	/* execvp searches the PATH of the environment it runs in. With
	 * SPAWN_VM this writes init's environ: spawn_vm_done restores it. */
	environ = p->envv;
	execvp(p->req->argv[0], p->req->argv);
	hu_err_sys(&err, "exec %s", p->req->argv[0]);
	child_fail(p->errpipe_wr, &err);
}

/* ---- the parent ----------------------------------------------------------------- */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int set_nonblock(int fd, hu_err *err)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return hu_err_sys(err, "set O_NONBLOCK");
	return 0;
}

/* Wait for the child to exec (the error pipe closes) or to report why not. */
static int wait_exec(pid_t pid, int errpipe_rd, hu_err *err)
{
	struct pollfd pfd = {.fd = errpipe_rd, .events = POLLIN};
	hu_err child_err;
	size_t got = 0;

	while (got < sizeof(child_err)) {
		int r = poll(&pfd, 1, EXEC_WAIT_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return r == 0 ? hu_err_set(err, ETIMEDOUT, "process did not reach exec") : hu_err_sys(err, "poll");
		}
		ssize_t n = read(errpipe_rd, (char *)&child_err + got, sizeof(child_err) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 && got == 0)
			return 0; /* closed by a successful execve */
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	/* The child failed and exits 127 right after writing; reap it here so it
	 * never shows up as a process. */
	waitpid(pid, NULL, 0);
	if (got < sizeof(child_err))
		return hu_err_set(err, EIO, "spawn: truncated error report from the child");
	child_err.msg[sizeof(child_err.msg) - 1] = '\0';
	*err = child_err;
	if (err->code <= 0)
		err->code = EIO;
	return -1;
}

static int child_entry(void *arg)
{
	child_main(arg);
}

/* The CLONE_VM child's stack and init's environ, kept until it is done. */
struct vm_child {
	char *stack;
	size_t size;
	char **init_env;
};

/* Start the child with CLONE_VM (the rules at the top); spawn_vm_done once
 * it has exec'd or is gone. glibc's clone(): nothing here needs clone3
 * (runtime/clone3.h is there for CLONE_INTO_CGROUP). */
static pid_t spawn_vm(struct child_plan *p, struct vm_child *vm, hu_err *err)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t argv_bytes = (p->req->argc + 3) * sizeof(char *);
	sigset_t all, old;

	vm->size = page + CHILD_STACK + (argv_bytes + page - 1) / page * page;
	vm->init_env = environ;
	vm->stack = mmap(NULL, vm->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (vm->stack == MAP_FAILED) {
		vm->stack = NULL;
		return hu_err_sys(err, "map the child's stack");
	}
	if (mprotect(vm->stack, page, PROT_NONE) < 0) {
		hu_err_sys(err, "guard the child's stack");
		munmap(vm->stack, vm->size);
		vm->stack = NULL;
		return -1;
	}
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(child_entry, vm->stack + vm->size, CLONE_VM | SIGCHLD, p);
	int saved = errno;
	/* the child has its own mask (all blocked) and its own copy of the
	 * dispositions from here on */
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		munmap(vm->stack, vm->size);
		vm->stack = NULL;
		errno = saved;
		return hu_err_sys(err, "clone");
	}
	return pid;
}

/* The child has exec'd or is gone: its stack goes, its environ write is
 * undone. */
static void spawn_vm_done(struct vm_child *vm)
{
	if (!vm->stack)
		return;
	environ = vm->init_env;
	munmap(vm->stack, vm->size);
	vm->stack = NULL;
}

static pid_t start_child(struct child_plan *p, struct vm_child *vm, hu_err *err)
{
	if (SPAWN_VM)
		return spawn_vm(p, vm, err);
	pid_t pid = fork();
	if (pid < 0)
		return hu_err_sys(err, "fork");
	if (pid == 0)
		child_main(p);
	return pid;
}

/* Pipes and pty, both ends CLOEXEC. The child's ends are its plan's; the
 * parent's go to res. */
static int make_stdio(const struct hu_request *req, struct child_plan *plan, struct hu_spawned *res, hu_err *err)
{
	int p[2];

	if (req->pty) {
		if (hu_pty_open(req->rows, req->cols, &res->out_fd[0], &plan->pty_slave, err) < 0)
			return -1;
		res->pty = true;
		res->stdin_fd = fcntl(res->out_fd[0], F_DUPFD_CLOEXEC, 3);
		if (res->stdin_fd < 0)
			return hu_err_sys(err, "dup pty master");
		return set_nonblock(res->out_fd[0], err);
	}
	for (int i = 0; i < 2; i++) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return hu_err_sys(err, "pipe");
		res->out_fd[i] = p[0];
		*(i == 0 ? &plan->stdout_wr : &plan->stderr_wr) = p[1];
		if (set_nonblock(p[0], err) < 0)
			return -1;
	}
	if (req->stdin_open) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return hu_err_sys(err, "pipe");
		plan->stdin_rd = p[0];
		res->stdin_fd = p[1];
		if (set_nonblock(p[1], err) < 0)
			return -1;
	}
	return 0;
}

static void close_plan(struct child_plan *plan)
{
	close_fd(&plan->pty_slave);
	close_fd(&plan->stdin_rd);
	close_fd(&plan->stdout_wr);
	close_fd(&plan->stderr_wr);
	close_fd(&plan->errpipe_wr);
}

static void close_spawned(struct hu_spawned *res)
{
	close_fd(&res->out_fd[0]);
	close_fd(&res->out_fd[1]);
	close_fd(&res->stdin_fd);
	hu_strv_free(res->envv);
	res->envv = NULL;
	free(res->cwd);
	res->cwd = NULL;
}

int hu_spawn(const struct hu_request *req, struct hu_spawned *res, hu_err *err)
{
	struct hu_user user;
	struct child_plan plan = {.req = req, .user = &user, .cwd = req->cwd, .pty_slave = -1, .stdin_rd = -1,
				  .stdout_wr = -1, .stderr_wr = -1, .errpipe_wr = -1};
	_cleanup_close_ int errpipe_rd = -1;
	int p[2];

	*res = (struct hu_spawned){.pid = -1, .out_fd = {-1, -1}, .stdin_fd = -1};
	if (hu_user_resolve(req->user, &user, err) < 0)
		return -1;
	res->envv = build_env(req, &user, err);
	if (!res->envv)
		return -1;
	plan.envv = res->envv;
	if (req->cwd && req->cwd[0] != '/') {
		if (asprintf(&res->cwd, "%s/%s", user.home, req->cwd) < 0)
			res->cwd = NULL;
	} else {
		res->cwd = strdup(req->cwd ? req->cwd : user.home);
	}
	if (!res->cwd) {
		hu_err_set(err, ENOMEM, "spawn");
		goto fail;
	}
	if (make_stdio(req, &plan, res, err) < 0)
		goto fail;
	if (pipe2(p, O_CLOEXEC) < 0) {
		hu_err_sys(err, "pipe");
		goto fail;
	}
	errpipe_rd = p[0];
	plan.errpipe_wr = p[1];

	struct vm_child vm = {0};
	pid_t pid = start_child(&plan, &vm, err);
	if (pid < 0)
		goto fail;
	/* Only init's copy of the error pipe's write end is closed before the
	 * wait (its EOF is the exec); the plan, which a CLONE_VM child reads
	 * (errpipe_wr too), is not written until the child has exec'd or is
	 * gone. */
	close(plan.errpipe_wr);
	int rc = wait_exec(pid, errpipe_rd, err);
	spawn_vm_done(&vm);
	plan.errpipe_wr = -1; /* closed above */
	close_plan(&plan);
	if (rc < 0) {
		close_spawned(res);
		return -1;
	}
	res->pid = pid;
	return 0;
fail:
	close_plan(&plan);
	close_spawned(res);
	hu_err_prefix(err, "spawn %s", req->argv[0]);
	return -1;
}
