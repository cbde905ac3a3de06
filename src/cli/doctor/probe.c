/*
 * Running a probe where it can do no harm: in a forked child, optionally as
 * root of a fresh user namespace mapped to one unprivileged host uid, exactly
 * as hutch maps a sandbox. What the probe did (unshares, mounts, filters) ends
 * with the child; its answer travels back over a pipe.
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/doctor/probe.h"
#include "util/fileutil.h"

/* A probe that hangs (a wedged mount, a stuck fs) is killed after this long
 * rather than hanging the doctor. */
#define PROBE_TIMEOUT_S 10

int doctor_probe_sys(hu_err *err, const char *fmt, ...)
{
	int e = errno ? errno : EIO;
	char what[HU_ERR_MSG_MAX];
	const char *name = strerrorname_np(e);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* the message names the errno already: set it as the code by hand, so
	 * that hu_err_set does not append strerror a second time */
	hu_err_set(err, 0, "%s returned %s (%s)", what, name ? name : "?", strerror(e));
	err->code = e;
	return -1;
}

/* What a probe child reports: rc 0 with its info in text, or rc -1 with its
 * hu_err's code and message. */
struct probe_msg {
	int rc;
	int code;
	char text[HU_ERR_MSG_MAX];
};

/* The child's failure, as it goes over the pipe. */
static void msg_from_err(struct probe_msg *m, const hu_err *err)
{
	m->rc = -1;
	m->code = err->code ? err->code : EIO;
	memcpy(m->text, err->msg, sizeof(m->text));
}

/* The child's failure, back as the parent's hu_err (code and message as
 * they were, nothing appended). */
static int err_from_msg(hu_err *err, struct probe_msg *m)
{
	m->text[sizeof(m->text) - 1] = '\0';
	err->code = m->code;
	memcpy(err->msg, m->text, sizeof(err->msg));
	return -1;
}

static void close_pipe(int p[2])
{
	close(p[0]);
	close(p[1]);
}

static void child_guard(void)
{
	/* a probe must neither outlive the doctor nor hang it */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(PROBE_TIMEOUT_S);
}

static void child_report(int fd, doctor_probe_fn *fn, void *arg)
{
	struct probe_msg m;
	hu_err err;

	memset(&m, 0, sizeof(m));
	hu_err_clear(&err);
	if (fn && fn(arg, m.text, sizeof(m.text), &err) < 0)
		msg_from_err(&m, &err);
	hu_write_all(fd, &m, sizeof(m));
}

static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int doctor_reap(pid_t pid)
{
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* Read a child's probe_msg, reap it and turn the outcome into rc/err. */
static int collect(int fd, pid_t pid, char *info, size_t n, hu_err *err)
{
	struct probe_msg m;
	ssize_t got = read_full(fd, &m, sizeof(m));
	int status = doctor_reap(pid);

	if (got != (ssize_t)sizeof(m)) {
		if (WIFSIGNALED(status))
			return hu_err_set(err, 0, "probe process killed by signal %d (%s)", WTERMSIG(status),
					  strsignal(WTERMSIG(status)));
		return hu_err_set(err, 0, "probe process exited with status %d without a report",
				  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	if (m.rc < 0)
		return err_from_msg(err, &m);
	m.text[sizeof(m.text) - 1] = '\0';
	if (info && n)
		snprintf(info, n, "%s", m.text);
	return 0;
}

int doctor_run_probe(doctor_probe_fn *fn, void *arg, char *info, size_t n, hu_err *err)
{
	int p[2];

	if (info && n)
		info[0] = '\0';
	if (pipe2(p, O_CLOEXEC) < 0)
		return hu_err_sys(err, "pipe");
	fflush(NULL); /* nothing buffered may be written twice */
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close_pipe(p);
		return hu_err_set(err, e, "fork");
	}
	if (pid == 0) {
		close(p[0]);
		child_guard();
		child_report(p[1], fn, arg);
		/* _exit: no atexit handlers, no stdio flush, no leak check of the
		 * parent's heap copy under ASan */
		_exit(0);
	}
	close(p[1]);
	int rc = collect(p[0], pid, info, n, err);
	close(p[0]);
	return rc;
}

/* Report the user namespace child's failure to set itself up, and end it. */
static void __attribute__((noreturn)) userns_child_fail(int res, const hu_err *err)
{
	struct probe_msg m;

	memset(&m, 0, sizeof(m));
	msg_from_err(&m, err);
	hu_write_all(res, &m, sizeof(m));
	_exit(1);
}

static void __attribute__((noreturn)) userns_child_main(int go, int res, int flags, doctor_probe_fn *fn, void *arg)
{
	struct probe_msg m;
	hu_err err;
	char b;

	child_guard();
	memset(&m, 0, sizeof(m));
	if (unshare(CLONE_NEWUSER | flags) < 0) {
		doctor_probe_sys(&err, "unshare(CLONE_NEWUSER%s)", flags & CLONE_NEWNS ? "|CLONE_NEWNS" : "");
		userns_child_fail(res, &err);
	}
	hu_write_all(res, &m, sizeof(m));
	if (read_full(go, &b, 1) != 1)
		_exit(1);
	/* Until now the child still had its host ids, which are unmapped in
	 * here; becoming ns-root (= DOCTOR_PROBE_UID on the host) is what a
	 * sandbox does, and what makes files it creates representable. */
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
		doctor_probe_sys(&err, "setresuid(0) in the new user namespace");
		userns_child_fail(res, &err);
	}
	child_report(res, fn, arg);
	_exit(0);
}

static void userns_abort(struct doctor_userns_child *c)
{
	close(c->go); /* EOF makes the child exit */
	close(c->res);
	doctor_reap(c->pid);
}

static int write_map(pid_t pid, const char *file, hu_err *err)
{
	char path[64], map[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	snprintf(map, sizeof(map), "0 %u 1\n", DOCTOR_PROBE_UID);
	if (hu_write_str(path, map, err) < 0) {
		hu_err_prefix(err, "map id 0 to host id %u", DOCTOR_PROBE_UID);
		return -1;
	}
	return 0;
}

/* Fork the user namespace child with its two pipes; c holds the parent's
 * ends and the pid. */
static int userns_fork(struct doctor_userns_child *c, int flags, doctor_probe_fn *fn, void *arg, hu_err *err)
{
	int go[2], res[2];

	if (pipe2(go, O_CLOEXEC) < 0)
		return hu_err_sys(err, "pipe");
	if (pipe2(res, O_CLOEXEC) < 0) {
		int e = errno;
		close_pipe(go);
		return hu_err_set(err, e, "pipe");
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close_pipe(go);
		close_pipe(res);
		return hu_err_set(err, e, "fork");
	}
	if (pid == 0) {
		close(go[1]);
		close(res[0]);
		userns_child_main(go[0], res[1], flags, fn, arg);
	}
	close(go[0]);
	close(res[1]);
	c->pid = pid;
	c->go = go[1];
	c->res = res[0];
	return 0;
}

/* Wait for the child's word on its unshare. */
static int userns_await_unshare(struct doctor_userns_child *c, hu_err *err)
{
	struct probe_msg m;

	if (read_full(c->res, &m, sizeof(m)) != (ssize_t)sizeof(m))
		return hu_err_set(err, 0, "user namespace probe process died before unsharing");
	if (m.rc < 0)
		return err_from_msg(err, &m);
	return 0;
}

int doctor_userns_start(struct doctor_userns_child *c, int flags, doctor_probe_fn *fn, void *arg, hu_err *err)
{
	if (userns_fork(c, flags, fn, arg, err) < 0)
		return -1;
	if (userns_await_unshare(c, err) < 0 || write_map(c->pid, "uid_map", err) < 0 ||
	    write_map(c->pid, "gid_map", err) < 0) {
		userns_abort(c);
		return -1;
	}
	return 0;
}

int doctor_userns_finish(struct doctor_userns_child *c, char *info, size_t n, hu_err *err)
{
	char b = 1;
	int rc;

	if (hu_write_all(c->go, &b, 1) < 0) {
		rc = hu_err_sys(err, "wake the user namespace probe");
		userns_abort(c);
		return rc;
	}
	close(c->go);
	rc = collect(c->res, c->pid, info, n, err);
	close(c->res);
	return rc;
}

int doctor_run_in_userns(int flags, doctor_probe_fn *fn, void *arg, char *info, size_t n, hu_err *err)
{
	struct doctor_userns_child c = {.pid = -1, .go = -1, .res = -1};
	if (info && n)
		info[0] = '\0';
	if (doctor_userns_start(&c, flags, fn, arg, err) < 0)
		return -1;
	return doctor_userns_finish(&c, info, n, err);
}

int doctor_make_mounts_private(hu_err *err)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return doctor_probe_sys(err, "mount(/, MS_REC|MS_PRIVATE)");
	return 0;
}
