/*
 * hutch-init end to end, run as an ordinary process (not PID 1): every test
 * starts a fresh init on a listening socket in a temp dir, talks to it with
 * the initclient API and checks what a client sees. Every receive is bounded
 * (SO_RCVTIMEO) so a broken init fails the test instead of hanging it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unit/testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "init/request.h"
#include "runtime/initclient.h"
#include "util/fileutil.h"

#define RECV_TIMEOUT_MS 20000

struct harness {
	char dir[PATH_MAX];
	char sock[PATH_MAX];
	pid_t init_pid;
	int fd; /* the first connection */
	uint32_t next_id;
};

/* Output collected from OUTPUT events. */
struct bytes {
	uint8_t *p;
	size_t len, cap;
};

static void bytes_add(struct bytes *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0'; /* printable as a string in assertions */
}


static int connect_init(struct harness *h)
{
	hu_err err;
	int fd;
	if (hu_init_connect(h->sock, &fd, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(hu_init_set_timeout(fd, RECV_TIMEOUT_MS, &err), 0);
	return fd;
}

static int setup(void **state)
{
	struct harness *h = calloc(1, sizeof(*h));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	assert_non_null(h);
	snprintf(h->dir, sizeof(h->dir), "/tmp/hutch-init-test.XXXXXX");
	assert_non_null(mkdtemp(h->dir));
	snprintf(h->sock, sizeof(h->sock), "%s/init.sock", h->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", h->sock);
	int ls = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 64), 0);

	const char *path = hu_test_init_path();
	h->init_pid = fork();
	assert_true(h->init_pid >= 0);
	if (h->init_pid == 0) {
		if (ls != 3) {
			dup2(ls, 3);
			close(ls);
		}
		execl(path, "hutch-init", "--allow-local-peers", (char *)NULL);
		fprintf(stderr, "exec %s: %m\n", path);
		_exit(127);
	}
	close(ls);
	h->fd = connect_init(h);
	*state = h;
	return 0;
}

static void stash_clear(void);

static int teardown(void **state)
{
	struct harness *h = *state;
	hu_err err;
	int status;

	stash_clear();
	if (h->fd >= 0)
		close(h->fd);
	/* init must have survived whatever the test did to it. */
	assert_int_equal(waitpid(h->init_pid, &status, WNOHANG), 0);
	/* In test mode SIGTERM makes init exit through its cleanup, so the
	 * sanitizer build checks it for leaks: it must exit 0, in time. */
	kill(h->init_pid, SIGTERM);
	pid_t r = 0;
	for (int i = 0; i < 100 && r == 0; i++) {
		usleep(50 * 1000);
		r = waitpid(h->init_pid, &status, WNOHANG);
	}
	if (r == 0) {
		kill(h->init_pid, SIGKILL);
		waitpid(h->init_pid, &status, 0);
		fail_msg("init did not exit on SIGTERM");
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	hu_rm_rf(h->dir, &err);
	free(h);
	return 0;
}

/* ---- helpers ------------------------------------------------------------------ */

/* One received frame, decoded. */
struct msg {
	struct hu_frame_hdr hdr;
	uint8_t *payload;
	struct hu_init_event ev;
};

static void send_buf(int fd, struct hu_buf *b)
{
	hu_err err;
	if (hu_init_send(fd, b, &err) < 0)
		fail_msg("%s", err.msg);
	hu_buf_free(b);
}

/* Events set aside while waiting for a reply, handed out again (in order)
 * by the next recv_msg on the same connection. */
#define MAX_STASHED 1024
static struct {
	int fd;
	struct msg m;
} stash[MAX_STASHED];
static size_t nstash;

static void stash_msg(int fd, const struct msg *m)
{
	assert_true(nstash < MAX_STASHED);
	stash[nstash].fd = fd;
	stash[nstash].m = *m;
	nstash++;
}

static bool unstash_msg(int fd, struct msg *m)
{
	for (size_t i = 0; i < nstash; i++) {
		if (stash[i].fd != fd)
			continue;
		*m = stash[i].m;
		memmove(&stash[i], &stash[i + 1], (nstash - i - 1) * sizeof(stash[0]));
		nstash--;
		return true;
	}
	return false;
}

/* Drop what a test left unread (its connections are gone). */
static void stash_clear(void)
{
	for (size_t i = 0; i < nstash; i++)
		free(stash[i].m.payload);
	nstash = 0;
}

static void recv_msg_from_socket(int fd, struct msg *m)
{
	hu_err err;
	if (hu_init_recv(fd, &m->hdr, &m->payload, &err) < 0)
		fail_msg("recv: %s", err.msg);
	if (hu_init_parse_event(&m->hdr, m->payload, &m->ev, &err) < 0)
		fail_msg("parse: %s", err.msg);
}

static void recv_msg(int fd, struct msg *m)
{
	if (!unstash_msg(fd, m))
		recv_msg_from_socket(fd, m);
}

/* The reply to request `id` (events of any request are set aside). For ERROR
 * the error is decoded into *err. Returns the reply type. */
static uint8_t wait_reply(int fd, uint32_t id, uint32_t *pid, hu_err *err)
{
	for (;;) {
		struct msg m;
		recv_msg_from_socket(fd, &m);
		if (m.ev.id != id || m.ev.type == HU_MSG_OUTPUT || m.ev.type == HU_MSG_EXIT) {
			stash_msg(fd, &m);
			continue;
		}
		if (pid)
			*pid = m.ev.pid;
		if (err && m.ev.type == HU_MSG_ERROR)
			hu_init_parse_error(m.payload, m.hdr.len, err);
		free(m.payload);
		return m.ev.type;
	}
}

struct run_result {
	struct bytes out, err;
	bool exited;
	int32_t exit_code;
	uint32_t signum;
};

static void result_free(struct run_result *r)
{
	free(r->out.p);
	free(r->err.p);
}

/* Collect OUTPUT of request `id` until its EXIT. */
static void collect(int fd, uint32_t id, struct run_result *r)
{
	while (!r->exited) {
		struct msg m;
		recv_msg(fd, &m);
		if (m.ev.id == id && m.ev.type == HU_MSG_OUTPUT)
			bytes_add(m.ev.stream == HU_STREAM_STDERR ? &r->err : &r->out, m.ev.data, m.ev.data_len);
		if (m.ev.id == id && m.ev.type == HU_MSG_EXIT) {
			r->exited = true;
			r->exit_code = m.ev.exit_code;
			r->signum = m.ev.signum;
		}
		free(m.payload);
	}
}

/* SPAWN with options; returns the pid (0 after an ERROR, filled into *err). */
static uint32_t spawn_req(struct harness *h, int fd, uint32_t id, const struct hu_spawn_req *req, hu_err *err)
{
	struct hu_buf b = {0};
	hu_err e;
	uint32_t pid = 0;
	assert_int_equal(hu_init_build_spawn(&b, id, req, &e), 0);
	send_buf(fd, &b);
	uint8_t type = wait_reply(fd, id, &pid, err ? err : &e);
	if (type == HU_MSG_ERROR)
		return 0;
	assert_int_equal(type, HU_MSG_SPAWNED);
	assert_true(pid > 0);
	return pid;
}

/* `sh -c script` as root on the first connection, stdin optional. */
static uint32_t spawn_sh(struct harness *h, uint32_t id, const char *script, bool stdin_open)
{
	const char *argv[] = {"sh", "-c", script};
	struct hu_spawn_req req = {.argv = argv, .argc = 3, .user = "root", .stdin_open = stdin_open};
	return spawn_req(h, h->fd, id, &req, NULL);
}

static void run_sh(struct harness *h, const char *script, struct run_result *r)
{
	uint32_t id = ++h->next_id;
	memset(r, 0, sizeof(*r));
	assert_true(spawn_sh(h, id, script, false) > 0);
	collect(h->fd, id, r);
}

/* A request with no reply payload that matters: expect OK. */
static void expect_ok(int fd, uint32_t id, struct hu_buf *b)
{
	hu_err err = {0};
	send_buf(fd, b);
	uint8_t type = wait_reply(fd, id, NULL, &err);
	if (type != HU_MSG_OK)
		fail_msg("reply %u (%s)", type, err.msg);
}

/* ---- processes ----------------------------------------------------------------- */

static void test_ping(void **state)
{
	struct harness *h = *state;
	struct hu_buf b = {0};
	hu_err err;
	assert_int_equal(hu_init_build_simple(&b, HU_MSG_PING, 42, &err), 0);
	send_buf(h->fd, &b);
	assert_int_equal(wait_reply(h->fd, 42, NULL, NULL), HU_MSG_PONG);
}

static void test_stdout_stderr_separated(void **state)
{
	struct harness *h = *state;
	struct run_result r;
	run_sh(h, "echo out; echo err >&2; echo out2", &r);
	assert_string_equal((char *)r.out.p, "out\nout2\n");
	assert_string_equal((char *)r.err.p, "err\n");
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(r.signum, 0);
	result_free(&r);
}

static void test_exit_codes(void **state)
{
	struct harness *h = *state;
	const int codes[] = {0, 3, 255};
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		char script[32];
		struct run_result r;
		snprintf(script, sizeof(script), "exit %d", codes[i]);
		run_sh(h, script, &r);
		assert_int_equal(r.exit_code, codes[i]);
		assert_int_equal(r.signum, 0);
		result_free(&r);
	}
}

static void test_killed_by_signal(void **state)
{
	struct harness *h = *state;
	struct run_result r;
	run_sh(h, "kill -9 $$", &r);
	assert_int_equal(r.signum, SIGKILL);
	result_free(&r);
}

static void test_environment_and_cwd(void **state)
{
	struct harness *h = *state;
	const char *argv[] = {"sh", "-c", "echo $PATH; echo $HOME $USER $LOGNAME $FOO; pwd; echo ${INIT_SECRET-unset}"};
	const char *envv[] = {"FOO=bar", "HOME=/custom"};
	struct hu_spawn_req req = {.argv = argv, .argc = 3, .envv = envv, .envc = 2, .user = "root", .cwd = "/tmp"};
	struct run_result r = {0};

	setenv("INIT_SECRET", "leak", 1); /* inherited by nothing: init's env is not the child's */
	uint32_t pid = spawn_req(h, h->fd, 7, &req, NULL);
	assert_true(pid > 0);
	collect(h->fd, 7, &r);
	assert_string_equal((char *)r.out.p,
			    "/opt/hutch/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n/custom root root bar\n/tmp\nunset\n");
	result_free(&r);
}

static void test_stdin_roundtrip(void **state)
{
	struct harness *h = *state;
	struct hu_buf b = {0};
	struct run_result r = {0};
	hu_err err;
	const char *argv[] = {"cat"};
	struct hu_spawn_req req = {.argv = argv, .argc = 1, .user = "root", .stdin_open = true};

	uint32_t pid = spawn_req(h, h->fd, 1, &req, NULL);
	assert_true(pid > 0);
	assert_int_equal(hu_init_build_stdin(&b, 2, pid, "hello\n", 6, &err), 0);
	expect_ok(h->fd, 2, &b);
	assert_int_equal(hu_init_build_stdin(&b, 3, pid, "world", 5, &err), 0);
	expect_ok(h->fd, 3, &b);
	assert_int_equal(hu_init_build_close_stdin(&b, 4, pid, &err), 0);
	expect_ok(h->fd, 4, &b);
	collect(h->fd, 1, &r);
	assert_string_equal((char *)r.out.p, "hello\nworld");
	assert_int_equal(r.exit_code, 0);
	result_free(&r);

	/* Without STDIN=1, stdin is /dev/null and STDIN is refused. */
	req.stdin_open = false;
	pid = spawn_req(h, h->fd, 5, &req, NULL);
	memset(&r, 0, sizeof(r));
	collect(h->fd, 5, &r);
	assert_int_equal(r.out.len, 0);
	assert_int_equal(r.exit_code, 0);
	result_free(&r);
}

static void test_signal(void **state)
{
	struct harness *h = *state;
	struct hu_buf b = {0};
	struct run_result r = {0};
	hu_err err;
	const char *argv[] = {"sleep", "100"};
	struct hu_spawn_req req = {.argv = argv, .argc = 2, .user = "root"};

	uint32_t pid = spawn_req(h, h->fd, 1, &req, NULL);
	assert_true(pid > 0);
	assert_int_equal(hu_init_build_signal(&b, 2, pid, SIGTERM, &err), 0);
	expect_ok(h->fd, 2, &b);
	collect(h->fd, 1, &r);
	assert_int_equal(r.signum, SIGTERM);
	result_free(&r);

	/* An unknown pid is an ERROR, not a signal to some other process. */
	assert_int_equal(hu_init_build_signal(&b, 3, 999999, SIGTERM, &err), 0);
	send_buf(h->fd, &b);
	assert_int_equal(wait_reply(h->fd, 3, NULL, &err), HU_MSG_ERROR);
	assert_int_equal(err.code, ESRCH);
}

static void test_pty(void **state)
{
	struct harness *h = *state;
	struct hu_buf b = {0};
	hu_err err;
	const char *tty_argv[] = {"sh", "-c", "tty; stty size"};
	struct hu_spawn_req req = {.argv = tty_argv, .argc = 3, .user = "root", .pty = true, .pty_rows = 30, .pty_cols = 100};
	struct run_result r = {0};

	assert_true(spawn_req(h, h->fd, 1, &req, NULL) > 0);
	collect(h->fd, 1, &r);
	assert_non_null(r.out.p);
	assert_non_null(strstr((char *)r.out.p, "/dev/pts/"));
	assert_non_null(strstr((char *)r.out.p, "30 100"));
	assert_int_equal(r.err.len, 0); /* everything comes on the pty stream */
	assert_int_equal(r.exit_code, 0);
	result_free(&r);

	/* RESIZE while it runs, then let it print the new size. */
	const char *resize_argv[] = {"sh", "-c", "read line; stty size"};
	req.argv = resize_argv;
	uint32_t pid = spawn_req(h, h->fd, 2, &req, NULL);
	assert_true(pid > 0);
	assert_int_equal(hu_init_build_resize(&b, 3, pid, 40, 120, &err), 0);
	expect_ok(h->fd, 3, &b);
	assert_int_equal(hu_init_build_stdin(&b, 4, pid, "go\n", 3, &err), 0);
	expect_ok(h->fd, 4, &b);
	memset(&r, 0, sizeof(r));
	collect(h->fd, 2, &r);
	assert_non_null(strstr((char *)r.out.p, "40 120"));
	result_free(&r);

	/* CLOSE_STDIN on a pty sends ^D: cat sees EOF. */
	const char *cat_argv[] = {"cat"};
	req.argv = cat_argv;
	req.argc = 1;
	pid = spawn_req(h, h->fd, 5, &req, NULL);
	assert_int_equal(hu_init_build_close_stdin(&b, 6, pid, &err), 0);
	expect_ok(h->fd, 6, &b);
	memset(&r, 0, sizeof(r));
	collect(h->fd, 5, &r);
	assert_int_equal(r.exit_code, 0);
	result_free(&r);
}

static void test_big_output_intact(void **state)
{
	struct harness *h = *state;
	static const char pattern[] = "0123456789abcdef\n";
	const size_t want = 20u << 20;
	uint32_t id = 1;
	size_t got = 0;
	bool exited = false;
	int32_t code = -1;

	/* Not collected into memory: checked byte by byte as it streams. */
	assert_true(spawn_sh(h, id, "yes 0123456789abcdef | head -c 20971520", false) > 0);
	while (!exited) {
		struct msg m;
		recv_msg(h->fd, &m);
		if (m.ev.type == HU_MSG_OUTPUT) {
			assert_int_equal(m.ev.stream, HU_STREAM_STDOUT);
			for (size_t i = 0; i < m.ev.data_len; i++, got++)
				if (m.ev.data[i] != (uint8_t)pattern[got % (sizeof(pattern) - 1)])
					fail_msg("byte %zu is %#x", got, m.ev.data[i]);
		} else if (m.ev.type == HU_MSG_EXIT) {
			exited = true;
			code = m.ev.exit_code;
		}
		free(m.payload);
	}
	assert_int_equal(got, want);
	assert_int_equal(code, 0);
}

static long rss_kib(pid_t pid)
{
	char path[64], buf[4096];
	hu_err err;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	assert_true(hu_read_file(path, buf, sizeof(buf), &err) > 0);
	const char *rss = strstr(buf, "VmRSS:");
	assert_non_null(rss);
	return strtol(rss + 6, NULL, 10);
}

/* A client that does not read makes the process wait, not init grow. */
static void test_backpressure_bounds_memory(void **state)
{
	struct harness *h = *state;
	const size_t want = 64u << 20;
	size_t got = 0;
	bool exited = false;

	assert_true(spawn_sh(h, 1, "head -c 67108864 /dev/zero", false) > 0);
	long before = rss_kib(h->init_pid);
	usleep(1000 * 1000);
	long during = rss_kib(h->init_pid);
	/* 64 MiB would be in init's memory without backpressure. */
	if (during - before > 16 * 1024)
		fail_msg("init grew from %ld to %ld KiB while the client did not read", before, during);
	while (!exited) {
		struct msg m;
		recv_msg(h->fd, &m);
		if (m.ev.type == HU_MSG_OUTPUT)
			got += m.ev.data_len;
		exited = m.ev.type == HU_MSG_EXIT;
		free(m.payload);
	}
	assert_int_equal(got, want);
}

static void test_exec_missing_binary(void **state)
{
	struct harness *h = *state;
	hu_err err = {0};
	const char *argv[] = {"/nonexistent/hutch-no-such-binary"};
	struct hu_spawn_req req = {.argv = argv, .argc = 1, .user = "root"};

	assert_int_equal(spawn_req(h, h->fd, 1, &req, &err), 0);
	assert_int_equal(err.code, ENOENT);
	assert_string_equal(err.msg, "exec /nonexistent/hutch-no-such-binary: No such file or directory");

	/* A bad CWD is reported the same way. */
	const char *ok_argv[] = {"true"};
	struct hu_spawn_req bad_cwd = {.argv = ok_argv, .argc = 1, .user = "root", .cwd = "/nonexistent-dir"};
	assert_int_equal(spawn_req(h, h->fd, 2, &bad_cwd, &err), 0);
	assert_int_equal(err.code, ENOENT);
}

/* What glibc's execvp does, kept by init's spawn: a file without a #! line
 * runs with /bin/sh (ENOEXEC), the search goes on past a file that is not
 * executable (EACCES) and reports EACCES when nothing else is found, and the
 * PATH searched is the one of the request's environment. */
static void test_exec_path_search(void **state)
{
	struct harness *h = *state;
	char path[PATH_MAX + 8], dir2[PATH_MAX], env_path[2 * PATH_MAX + 16];
	hu_err err = {0};

	snprintf(dir2, sizeof(dir2), "%s/bin2", h->dir);
	assert_int_equal(mkdir(dir2, 0755), 0);
	snprintf(path, sizeof(path), "%s/hutch-noshebang", h->dir);
	assert_int_equal(hu_write_file(path, "echo via-sh\n", 12, O_CREAT | O_EXCL, 0755, &err), 0);
	snprintf(path, sizeof(path), "%s/hutch-noexec", h->dir);
	assert_int_equal(hu_write_file(path, "echo no\n", 8, O_CREAT | O_EXCL, 0644, &err), 0);
	snprintf(path, sizeof(path), "%s/hutch-noexec", dir2);
	assert_int_equal(hu_write_file(path, "echo second\n", 12, O_CREAT | O_EXCL, 0755, &err), 0);
	snprintf(env_path, sizeof(env_path), "PATH=%s:%s", h->dir, dir2);
	const char *envv[] = {env_path};

	const char *argv[] = {"hutch-noshebang"};
	struct hu_spawn_req req = {.argv = argv, .argc = 1, .envv = envv, .envc = 1, .user = "root"};
	assert_true(spawn_req(h, h->fd, 1, &req, NULL) > 0);
	struct run_result r = {0};
	collect(h->fd, 1, &r);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal((char *)r.out.p, "via-sh\n");
	result_free(&r);

	/* 0644 in the first directory: skipped for the one in the second */
	argv[0] = "hutch-noexec";
	assert_true(spawn_req(h, h->fd, 2, &req, NULL) > 0);
	memset(&r, 0, sizeof(r));
	collect(h->fd, 2, &r);
	assert_string_equal((char *)r.out.p, "second\n");
	result_free(&r);

	/* only the 0644 one: EACCES */
	snprintf(env_path, sizeof(env_path), "PATH=%s", h->dir);
	assert_int_equal(spawn_req(h, h->fd, 3, &req, &err), 0);
	assert_int_equal(err.code, EACCES);
	assert_string_equal(err.msg, "exec hutch-noexec: Permission denied");

	/* not on the request's PATH: ENOENT, though it is on init's own */
	argv[0] = "sh";
	assert_int_equal(spawn_req(h, h->fd, 4, &req, &err), 0);
	assert_int_equal(err.code, ENOENT);
}

/* ---- a command stuck before exec ------------------------------------------------ */

/* A FUSE mount nobody serves: every lookup below it waits (killably) for an
 * answer that never comes, as in a hung network mount. It lives in a mount
 * namespace of its own that only this test's init is in, so nothing of it
 * outlives the init; closing the device end aborts whatever still waits. */
static int hung_fuse = -1;

static int setup_hung_mount(void **state)
{
	int self_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	int self_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool ns = self_ns >= 0 && unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
	int rc = setup(state); /* init starts in the new namespace */
	struct harness *h = *state;
	char mnt[PATH_MAX + 8], opts[96];
	snprintf(mnt, sizeof(mnt), "%s/hung", h->dir);
	int fd = ns && mkdir(mnt, 0755) == 0 ? open("/dev/fuse", O_RDWR | O_CLOEXEC) : -1;
	if (fd >= 0) {
		snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
		if (mount("hutch-test", mnt, "fuse", MS_NOSUID | MS_NODEV, opts) == 0)
			hung_fuse = fd;
		else
			close(fd);
	}
	/* setns puts the cwd at the namespace's root: the tests' paths are
	 * relative to the tree's */
	if (ns && (setns(self_ns, CLONE_NEWNS) < 0 || fchdir(self_cwd) < 0))
		fail_msg("back to the test's mount namespace: %s", strerror(errno));
	if (self_ns >= 0)
		close(self_ns);
	close(self_cwd);
	return rc;
}

static int teardown_hung_mount(void **state)
{
	if (hung_fuse >= 0)
		close(hung_fuse);
	hung_fuse = -1;
	return teardown(state);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* chdir into the hung mount: SPAWN fails after its 10 s (EXEC_WAIT_MS in
 * init/spawn.c) with ETIMEDOUT, the child is gone, init goes on. */
static void test_stuck_before_exec(void **state)
{
	struct harness *h = *state;
	char cwd[PATH_MAX + 16];
	hu_err err = {0};

	if (hung_fuse < 0)
		skip(); /* not root, or no FUSE here */
	snprintf(cwd, sizeof(cwd), "%s/hung/x", h->dir);
	const char *argv[] = {"true"};
	struct hu_spawn_req req = {.argv = argv, .argc = 1, .user = "root", .cwd = cwd};
	long t0 = now_ms();
	assert_int_equal(spawn_req(h, h->fd, 1, &req, &err), 0);
	long took = now_ms() - t0;
	assert_int_equal(err.code, ETIMEDOUT);
	assert_non_null(strstr(err.msg, "process did not reach exec"));
	assert_true(took >= 9900 && took < 15000);

	struct run_result r;
	run_sh(h, "echo ok", &r);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal((char *)r.out.p, "ok\n");
	result_free(&r);
	/* the stuck child was reaped: init has no child left but sh's, gone too */
	char children[64], buf[64] = "";
	snprintf(children, sizeof(children), "/proc/%d/task/%d/children", (int)h->init_pid, (int)h->init_pid);
	FILE *f = fopen(children, "r");
	assert_non_null(f);
	(void)!fgets(buf, sizeof(buf), f);
	fclose(f);
	assert_string_equal(buf, "");
}

static void test_attach_from_second_connection(void **state)
{
	struct harness *h = *state;
	struct hu_buf b = {0};
	struct run_result r1 = {0}, r2 = {0};
	hu_err err;
	uint32_t pid = 0;
	const char *argv[] = {"sh", "-c", "sleep 0.5; echo late; exit 4"};
	struct hu_spawn_req req = {.argv = argv, .argc = 3, .user = "root", .tag = "job-a"};

	uint32_t spawned = spawn_req(h, h->fd, 1, &req, NULL);
	int fd2 = connect_init(h);
	assert_int_equal(hu_init_build_attach(&b, 9, 0, "job-a", &err), 0);
	send_buf(fd2, &b);
	assert_int_equal(wait_reply(fd2, 9, &pid, NULL), HU_MSG_ATTACHED);
	assert_int_equal(pid, spawned);
	collect(fd2, 9, &r2);
	collect(h->fd, 1, &r1);
	assert_string_equal((char *)r2.out.p, "late\n");
	assert_string_equal((char *)r1.out.p, "late\n");
	assert_int_equal(r2.exit_code, 4);
	assert_int_equal(r1.exit_code, 4);
	result_free(&r1);
	result_free(&r2);

	/* A tag in use by a running process cannot be taken twice. */
	const char *sleep_argv[] = {"sleep", "100"};
	struct hu_spawn_req s1 = {.argv = sleep_argv, .argc = 2, .user = "root", .tag = "job-b"};
	uint32_t sleeper = spawn_req(h, h->fd, 20, &s1, NULL);
	assert_int_equal(spawn_req(h, h->fd, 21, &s1, &err), 0);
	assert_int_equal(err.code, EEXIST);

	/* LIST_PROCS shows the running one with its tag and argv. */
	assert_int_equal(hu_init_build_simple(&b, HU_MSG_LIST_PROCS, 22, &err), 0);
	send_buf(fd2, &b);
	struct msg m;
	recv_msg(fd2, &m);
	assert_int_equal(m.ev.type, HU_MSG_PROCS);
	bool found = false;
	struct hu_field_iter it, in;
	struct hu_field f, g;
	hu_fields_init(&it, m.payload, m.hdr.len);
	while (hu_fields_next(&it, &f, &err) > 0) {
		uint32_t p = 0;
		bool tagged = false;
		hu_fields_init(&in, f.val, f.len);
		while (hu_fields_next(&in, &g, &err) > 0) {
			if (g.tag == HU_F_PID)
				hu_field_u32(&g, &p, &err);
			if (g.tag == HU_F_TAG && g.len == 5 && !memcmp(g.val, "job-b", 5))
				tagged = true;
		}
		found |= p == sleeper && tagged;
	}
	free(m.payload);
	assert_true(found);
	assert_int_equal(hu_init_build_signal(&b, 23, sleeper, SIGKILL, &err), 0);
	expect_ok(h->fd, 23, &b);
	close(fd2);
}

static void test_attach_after_exit_replays(void **state)
{
	struct harness *h = *state;
	struct hu_buf b = {0};
	struct run_result r = {0};
	hu_err err;
	uint32_t pid = 0;
	const char *argv[] = {"sh", "-c", "exit 9"};
	struct hu_spawn_req req = {.argv = argv, .argc = 3, .user = "root"};

	uint32_t spawned = spawn_req(h, h->fd, 1, &req, NULL);
	collect(h->fd, 1, &r);
	int fd2 = connect_init(h);
	assert_int_equal(hu_init_build_attach(&b, 5, spawned, NULL, &err), 0);
	send_buf(fd2, &b);
	assert_int_equal(wait_reply(fd2, 5, &pid, NULL), HU_MSG_ATTACHED);
	assert_int_equal(pid, spawned);
	memset(&r, 0, sizeof(r));
	collect(fd2, 5, &r);
	assert_int_equal(r.exit_code, 9);
	close(fd2);

	/* Nothing known by that pid at all. */
	assert_int_equal(hu_init_build_attach(&b, 6, 999999, NULL, &err), 0);
	send_buf(h->fd, &b);
	assert_int_equal(wait_reply(h->fd, 6, NULL, &err), HU_MSG_ERROR);
	assert_int_equal(err.code, ESRCH);
}

static void test_disconnect_keeps_process(void **state)
{
	struct harness *h = *state;
	struct hu_buf b = {0};
	struct run_result r = {0};
	hu_err err;
	const char *argv[] = {"sh", "-c", "sleep 0.5; echo survived; exit 7"};
	struct hu_spawn_req req = {.argv = argv, .argc = 3, .user = "root"};

	uint32_t pid = spawn_req(h, h->fd, 1, &req, NULL);
	close(h->fd);
	h->fd = connect_init(h);
	assert_int_equal(hu_init_build_attach(&b, 2, pid, NULL, &err), 0);
	send_buf(h->fd, &b);
	assert_int_equal(wait_reply(h->fd, 2, NULL, NULL), HU_MSG_ATTACHED);
	collect(h->fd, 2, &r);
	assert_string_equal((char *)r.out.p, "survived\n");
	assert_int_equal(r.exit_code, 7);
	result_free(&r);
}

/* The connection must be closed by init: a read sees EOF (or a reset). */
static void expect_closed(int fd)
{
	struct hu_frame_hdr hdr;
	uint8_t *payload = NULL;
	hu_err err;
	assert_int_equal(hu_init_recv(fd, &hdr, &payload, &err), -1);
	assert_int_equal(err.code, ECONNRESET);
	close(fd);
}

static void test_garbage_closes_only_that_connection(void **state)
{
	struct harness *h = *state;
	struct hu_buf b = {0};
	hu_err err;

	const uint8_t bad_version[] = {9, HU_MSG_PING, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
	const uint8_t oversized[] = {HU_PROTO_VERSION, HU_MSG_PING, 0, 0, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff};
	const uint8_t reserved[] = {HU_PROTO_VERSION, HU_MSG_PING, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0};
	/* A field whose length runs past the payload. */
	const uint8_t bad_field[] = {HU_PROTO_VERSION, HU_MSG_SPAWN, 0, 0, 0, 0, 0, 1, 0, 0, 0, 8,
				     0, HU_F_ARG, 0, 0, 0, 100, 'l', 's'};
	/* A string with a NUL in it. */
	const uint8_t nul_arg[] = {HU_PROTO_VERSION, HU_MSG_SPAWN, 0, 0, 0, 0, 0, 1, 0, 0, 0, 8,
				   0, HU_F_ARG, 0, 0, 0, 2, 'l', 0};
	const struct {
		const uint8_t *p;
		size_t n;
	} cases[] = {{bad_version, sizeof(bad_version)}, {oversized, sizeof(oversized)}, {reserved, sizeof(reserved)},
		     {bad_field, sizeof(bad_field)},       {nul_arg, sizeof(nul_arg)}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = connect_init(h);
		assert_int_equal(write(fd, cases[i].p, cases[i].n), (ssize_t)cases[i].n);
		expect_closed(fd);
	}
	/* Well-formed but wrong values get an ERROR and the connection stays. */
	const char *argv[] = {"true"};
	const char *bad_env[] = {"NOEQUALS"};
	struct hu_spawn_req req = {.argv = argv, .argc = 1, .envv = bad_env, .envc = 1};
	assert_int_equal(spawn_req(h, h->fd, 3, &req, &err), 0);
	assert_int_equal(err.code, EINVAL);
	/* The first connection, and new ones, work as before. */
	assert_int_equal(hu_init_build_simple(&b, HU_MSG_PING, 1, &err), 0);
	send_buf(h->fd, &b);
	assert_int_equal(wait_reply(h->fd, 1, NULL, NULL), HU_MSG_PONG);
	int fd = connect_init(h);
	assert_int_equal(hu_init_build_simple(&b, HU_MSG_PING, 2, &err), 0);
	send_buf(fd, &b);
	assert_int_equal(wait_reply(fd, 2, NULL, NULL), HU_MSG_PONG);
	close(fd);
}

/* Children of `ppid` that are zombies. */
static int count_zombie_children(pid_t ppid)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int zombies = 0;
	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[64], buf[512];
		hu_err err;
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		if (hu_read_file(path, buf, sizeof(buf), &err) < 0)
			continue;
		const char *rp = strrchr(buf, ')'); /* comm may contain spaces */
		char st;
		int parent;
		if (rp && sscanf(rp + 1, " %c %d", &st, &parent) == 2 && parent == ppid && st == 'Z')
			zombies++;
	}
	closedir(d);
	return zombies;
}

static void test_orphans_reaped(void **state)
{
	struct harness *h = *state;
	struct run_result r;

	/* sleep is orphaned when sh execs true; it re-parents to init (a
	 * subreaper here) and must be reaped there when it ends. */
	run_sh(h, "sleep 0.1 & sleep 0.1 & exec true", &r);
	result_free(&r);
	for (int i = 0; i < 50; i++) {
		usleep(100 * 1000);
		if (i >= 5 && count_zombie_children(h->init_pid) == 0)
			break;
	}
	assert_int_equal(count_zombie_children(h->init_pid), 0);
}

/* ---- files ------------------------------------------------------------------------ */

/* Send a file request and return the reply type; ENTRIES replies are
 * collected (MORE followed) into *entries as raw payloads. */
struct entry {
	char name[256];
	char path[PATH_MAX];
	uint8_t type;
	uint64_t size;
	uint32_t mode, uid;
	char owner[64];
	char symlink[PATH_MAX];
};

struct entries {
	struct entry e[64];
	size_t n;
};

static void copy_field(char *dst, size_t cap, const struct hu_field *f)
{
	size_t n = f->len < cap - 1 ? f->len : cap - 1;
	memcpy(dst, f->val, n);
	dst[n] = '\0';
}

static void parse_entries(const uint8_t *p, size_t len, struct entries *out)
{
	struct hu_field_iter it, in;
	struct hu_field f, g;
	hu_err err;
	hu_fields_init(&it, p, len);
	while (hu_fields_next(&it, &f, &err) > 0) {
		if (f.tag != HU_F_ENTRY || out->n == 64)
			continue;
		struct entry *e = &out->e[out->n++];
		memset(e, 0, sizeof(*e));
		hu_fields_init(&in, f.val, f.len);
		while (hu_fields_next(&in, &g, &err) > 0) {
			switch (g.tag) {
			case HU_F_NAME: copy_field(e->name, sizeof(e->name), &g); break;
			case HU_F_PATH: copy_field(e->path, sizeof(e->path), &g); break;
			case HU_F_OWNER: copy_field(e->owner, sizeof(e->owner), &g); break;
			case HU_F_SYMLINK: copy_field(e->symlink, sizeof(e->symlink), &g); break;
			case HU_F_TYPE: hu_field_u8(&g, &e->type, &err); break;
			case HU_F_SIZE: hu_field_u64(&g, &e->size, &err); break;
			case HU_F_MODE: hu_field_u32(&g, &e->mode, &err); break;
			case HU_F_UID: hu_field_u32(&g, &e->uid, &err); break;
			}
		}
	}
}

static uint8_t file_req(struct harness *h, uint8_t type, const char *path, const char *dest, uint32_t depth,
			const char *user, struct entries *out, hu_err *err)
{
	struct hu_buf b = {0};
	uint32_t id = ++h->next_id;
	hu_err e;
	assert_int_equal(hu_init_build_file(&b, type, id, path, dest, depth, user, &e), 0);
	send_buf(h->fd, &b);
	for (;;) {
		struct msg m;
		recv_msg(h->fd, &m);
		uint8_t t = m.ev.type;
		bool more = m.ev.more;
		if (t == HU_MSG_ENTRIES && out)
			parse_entries(m.payload, m.hdr.len, out);
		if (t == HU_MSG_ERROR && err)
			hu_init_parse_error(m.payload, m.hdr.len, err);
		free(m.payload);
		if (!(t == HU_MSG_ENTRIES && more))
			return t;
	}
}

static const struct entry *find_entry(const struct entries *es, const char *name)
{
	for (size_t i = 0; i < es->n; i++)
		if (!strcmp(es->e[i].name, name))
			return &es->e[i];
	return NULL;
}

static void write_file(struct harness *h, const char *path, const uint8_t *data, size_t len, const char *user,
		       struct entries *out)
{
	struct hu_buf b = {0};
	uint32_t id = ++h->next_id;
	hu_err err = {0};
	assert_int_equal(hu_init_build_file(&b, HU_MSG_WRITE_OPEN, id, path, NULL, 0, user, &err), 0);
	expect_ok(h->fd, id, &b);
	/* Big frames, as a client would send them. */
	for (size_t off = 0; off < len;) {
		size_t n = len - off < 512 * 1024 ? len - off : 512 * 1024;
		size_t f = hu_frame_begin(&b, HU_MSG_WRITE_DATA, id);
		hu_put_bytes(&b, HU_F_DATA, data + off, n);
		assert_int_equal(hu_frame_end(&b, f), 0);
		send_buf(h->fd, &b);
		off += n;
	}
	assert_int_equal(hu_init_build_simple(&b, HU_MSG_WRITE_CLOSE, id, &err), 0);
	send_buf(h->fd, &b);
	struct msg m;
	recv_msg(h->fd, &m);
	if (m.ev.type == HU_MSG_ERROR)
		hu_init_parse_error(m.payload, m.hdr.len, &err);
	if (m.ev.type != HU_MSG_ENTRIES)
		fail_msg("WRITE_CLOSE: %u %s", m.ev.type, err.msg);
	parse_entries(m.payload, m.hdr.len, out);
	free(m.payload);
}

static void test_file_write_read_roundtrip(void **state)
{
	struct harness *h = *state;
	const size_t len = 3u << 20;
	uint8_t *data = malloc(len);
	char path[PATH_MAX];
	struct entries es = {0};
	assert_non_null(data);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 131 + (i >> 12));

	/* Parents are created. */
	snprintf(path, sizeof(path), "%s/new/dirs/blob.bin", h->dir);
	write_file(h, path, data, len, "root", &es);
	assert_int_equal(es.n, 1);
	assert_string_equal(es.e[0].name, "blob.bin");
	assert_string_equal(es.e[0].path, path);
	assert_int_equal(es.e[0].size, len);
	assert_int_equal(es.e[0].type, HU_ENTRY_FILE);
	assert_int_equal(es.e[0].mode & 07777, 0644);

	struct hu_buf b = {0};
	hu_err err;
	assert_int_equal(hu_init_build_file(&b, HU_MSG_READ, 77, path, NULL, 0, "root", &err), 0);
	send_buf(h->fd, &b);
	size_t got = 0;
	for (;;) {
		struct msg m;
		recv_msg(h->fd, &m);
		assert_int_equal(m.ev.id, 77);
		if (m.ev.type == HU_MSG_READ_DATA) {
			assert_true(got + m.ev.data_len <= len);
			assert_memory_equal(m.ev.data, data + got, m.ev.data_len);
			got += m.ev.data_len;
			free(m.payload);
			continue;
		}
		assert_int_equal(m.ev.type, HU_MSG_READ_END);
		assert_int_equal(m.ev.size, len);
		free(m.payload);
		break;
	}
	assert_int_equal(got, len);
	free(data);

	/* A directory cannot be READ; a missing file is ENOENT. */
	assert_int_equal(file_req(h, HU_MSG_READ, h->dir, NULL, 0, "root", NULL, &err), HU_MSG_ERROR);
	assert_int_equal(err.code, EISDIR);
	snprintf(path, sizeof(path), "%s/missing", h->dir);
	assert_int_equal(file_req(h, HU_MSG_READ, path, NULL, 0, "root", NULL, &err), HU_MSG_ERROR);
	assert_int_equal(err.code, ENOENT);
}

static void test_file_stat_list_mkdir_move_remove(void **state)
{
	struct harness *h = *state;
	char a[PATH_MAX], p[PATH_MAX], q[PATH_MAX];
	struct entries es = {0};
	hu_err err;

	/* a/ with a file, a/sub/ with a file, a/sub/deeper/ with a file, a link */
	snprintf(a, sizeof(a), "%s/a", h->dir);
	assert_int_equal(file_req(h, HU_MSG_MKDIR, a, NULL, 0, "root", &es, &err), HU_MSG_ENTRIES);
	assert_int_equal(es.n, 1);
	assert_int_equal(es.e[0].type, HU_ENTRY_DIR);
	assert_int_equal(es.e[0].mode & 07777, 0755);
	assert_int_equal(file_req(h, HU_MSG_MKDIR, a, NULL, 0, "root", NULL, &err), HU_MSG_ERROR);
	assert_int_equal(err.code, EEXIST);
	snprintf(p, sizeof(p), "%s/sub/deeper", a);
	assert_int_equal(file_req(h, HU_MSG_MKDIR, p, NULL, 0, "root", NULL, &err), HU_MSG_ENTRIES);
	const char *files[] = {"f1", "sub/f2", "sub/deeper/f3"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", a, files[i]);
		memset(&es, 0, sizeof(es));
		write_file(h, p, (const uint8_t *)"xyz", 3, "root", &es);
	}
	snprintf(p, sizeof(p), "%s/link", a);
	assert_int_equal(symlink("sub", p), 0);

	/* STAT of a symlink reports the link itself, with where it leads
	 * (resolved, as envd reports it); a dangling link keeps its text. */
	memset(&es, 0, sizeof(es));
	assert_int_equal(file_req(h, HU_MSG_STAT, p, NULL, 0, "root", &es, &err), HU_MSG_ENTRIES);
	assert_int_equal(es.e[0].type, HU_ENTRY_SYMLINK);
	snprintf(q, sizeof(q), "%s/sub", a);
	assert_string_equal(es.e[0].symlink, q);
	snprintf(q, sizeof(q), "%s/dangling", a);
	assert_int_equal(symlink("nowhere", q), 0);
	memset(&es, 0, sizeof(es));
	assert_int_equal(file_req(h, HU_MSG_STAT, q, NULL, 0, "root", &es, &err), HU_MSG_ENTRIES);
	assert_string_equal(es.e[0].symlink, "nowhere");
	assert_int_equal(unlink(q), 0);
	assert_string_equal(es.e[0].owner, "root");

	/* Paths are normalised. */
	snprintf(p, sizeof(p), "%s/./sub/../f1", a);
	memset(&es, 0, sizeof(es));
	assert_int_equal(file_req(h, HU_MSG_STAT, p, NULL, 0, "root", &es, &err), HU_MSG_ENTRIES);
	snprintf(q, sizeof(q), "%s/f1", a);
	assert_string_equal(es.e[0].path, q);
	assert_int_equal(es.e[0].size, 3);

	/* Depth 1: the direct children only; depth 2 adds sub/'s, not deeper/'s,
	 * and the symlink is listed but not followed. */
	memset(&es, 0, sizeof(es));
	assert_int_equal(file_req(h, HU_MSG_LIST_DIR, a, NULL, 0, "root", &es, &err), HU_MSG_ENTRIES);
	assert_int_equal(es.n, 3);
	assert_non_null(find_entry(&es, "f1"));
	assert_non_null(find_entry(&es, "sub"));
	assert_non_null(find_entry(&es, "link"));
	memset(&es, 0, sizeof(es));
	assert_int_equal(file_req(h, HU_MSG_LIST_DIR, a, NULL, 2, "root", &es, &err), HU_MSG_ENTRIES);
	assert_int_equal(es.n, 5);
	assert_non_null(find_entry(&es, "f2"));
	assert_non_null(find_entry(&es, "deeper"));
	assert_null(find_entry(&es, "f3"));
	snprintf(q, sizeof(q), "%s/sub/f2", a);
	assert_string_equal(find_entry(&es, "f2")->path, q);
	/* in lexical order, depth first (envd's, from Go's WalkDir) */
	const char *order[] = {"f1", "link", "sub", "deeper", "f2"};
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(es.e[i].name, order[i]);

	/* MOVE creates the destination's parents and reports the destination. */
	snprintf(p, sizeof(p), "%s/f1", a);
	snprintf(q, sizeof(q), "%s/moved/here/f1-renamed", h->dir);
	memset(&es, 0, sizeof(es));
	assert_int_equal(file_req(h, HU_MSG_MOVE, p, q, 0, "root", &es, &err), HU_MSG_ENTRIES);
	assert_string_equal(es.e[0].path, q);
	assert_int_equal(access(p, F_OK), -1);
	assert_int_equal(access(q, F_OK), 0);

	/* REMOVE is recursive; then the path is gone. */
	assert_int_equal(file_req(h, HU_MSG_REMOVE, a, NULL, 0, "root", NULL, &err), HU_MSG_OK);
	assert_int_equal(access(a, F_OK), -1);
	/* Removing what is not there succeeds, as envd's os.RemoveAll does. */
	assert_int_equal(file_req(h, HU_MSG_REMOVE, a, NULL, 0, "root", NULL, &err), HU_MSG_OK);
	assert_int_equal(file_req(h, HU_MSG_STAT, a, NULL, 0, "root", NULL, &err), HU_MSG_ERROR);
	assert_int_equal(err.code, ENOENT);
}

/* "user" runs as uid 1000; only meaningful when the host has such a user
 * (init falls back to 1000 when the image has no "user" entry). */
static void test_user_identity(void **state)
{
	struct harness *h = *state;
	struct entries es = {0};
	hu_err err;
	char p[PATH_MAX];

	if (!getpwuid(1000) || geteuid() != 0)
		skip();
	const char *argv[] = {"sh", "-c", "id -u; id -g"};
	struct hu_spawn_req req = {.argv = argv, .argc = 3, .cwd = "/"};
	struct run_result r = {0};
	assert_true(spawn_req(h, h->fd, 1, &req, NULL) > 0);
	collect(h->fd, 1, &r);
	assert_string_equal((char *)r.out.p, "1000\n1000\n");
	result_free(&r);

	/* The temp dir is root's 0700: the user may not write there... */
	assert_int_equal(chmod(h->dir, 0755), 0);
	snprintf(p, sizeof(p), "%s/by-user", h->dir);
	assert_int_equal(file_req(h, HU_MSG_MKDIR, p, NULL, 0, "user", NULL, &err), HU_MSG_ERROR);
	assert_int_equal(err.code, EACCES);
	/* ...but in a directory of theirs, and what they create is theirs. */
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(chown(p, 1000, 1000), 0);
	snprintf(p, sizeof(p), "%s/by-user/x/y.txt", h->dir);
	write_file(h, p, (const uint8_t *)"hi", 2, "user", &es);
	assert_int_equal(es.e[0].uid, 1000);
	struct stat st;
	snprintf(p, sizeof(p), "%s/by-user/x", h->dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_uid, 1000);
	/* And init is root again afterwards. */
	snprintf(p, sizeof(p), "%s/by-root", h->dir);
	assert_int_equal(file_req(h, HU_MSG_MKDIR, p, NULL, 0, "root", NULL, &err), HU_MSG_ENTRIES);
}

/* ---- directory watches ------------------------------------------------------------- */

/* The next WATCH_EVENT of watch `id` on fd (other frames of it fail the
 * test, except an ERROR, returned as type 0 with *err filled). */
static uint8_t next_watch_event(int fd, uint32_t id, char *name, size_t cap, hu_err *err)
{
	for (;;) {
		struct msg m;
		recv_msg(fd, &m);
		if (m.ev.id != id) {
			free(m.payload);
			continue;
		}
		if (m.ev.type == HU_MSG_ERROR) {
			hu_init_parse_error(m.payload, m.hdr.len, err);
			free(m.payload);
			return 0;
		}
		assert_int_equal(m.ev.type, HU_MSG_WATCH_EVENT);
		struct hu_field_iter it;
		struct hu_field f;
		hu_err e;
		uint8_t type = 0;
		name[0] = '\0';
		hu_fields_init(&it, m.payload, m.hdr.len);
		while (hu_fields_next(&it, &f, &e) > 0) {
			if (f.tag == HU_F_NAME)
				copy_field(name, cap, &f);
			else if (f.tag == HU_F_EVENT)
				assert_int_equal(hu_field_u8(&f, &type, &e), 0);
		}
		free(m.payload);
		assert_true(type >= HU_WATCH_CREATE && type <= HU_WATCH_CHMOD);
		return type;
	}
}

/* Wait for (name, type), skipping other events (a write may come as
 * several WRITEs, a create with a CHMOD...). */
static void expect_watch_event(int fd, uint32_t id, const char *want_name, uint8_t want_type)
{
	char name[PATH_MAX];
	hu_err err = {0};
	for (int i = 0; i < 64; i++) {
		uint8_t type = next_watch_event(fd, id, name, sizeof(name), &err);
		if (type == 0)
			fail_msg("watch ended while waiting for %s/%u: %s", want_name, want_type, err.msg);
		if (type == want_type && !strcmp(name, want_name))
			return;
	}
	fail_msg("no event %u for %s", want_type, want_name);
}

static int start_watch(struct harness *h, const char *path, uint32_t depth, uint32_t id, hu_err *err)
{
	struct hu_buf b = {0};
	hu_err e;
	int fd = connect_init(h);
	assert_int_equal(hu_init_build_file(&b, HU_MSG_WATCH_START, id, path, NULL, depth, "root", &e), 0);
	send_buf(fd, &b);
	uint8_t type = wait_reply(fd, id, NULL, err);
	if (type == HU_MSG_OK)
		return fd;
	assert_int_equal(type, HU_MSG_ERROR);
	close(fd);
	return -1;
}

static void touch(const char *dir, const char *rel, const char *text)
{
	char p[PATH_MAX];
	hu_err err;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	assert_int_equal(hu_write_file(p, text, strlen(text), O_CREAT | O_TRUNC, 0644, &err), 0);
}

static void test_watch_events(void **state)
{
	struct harness *h = *state;
	char w[PATH_MAX], p[PATH_MAX], q[PATH_MAX];
	hu_err err;

	snprintf(w, sizeof(w), "%s/watched", h->dir);
	assert_int_equal(mkdir(w, 0755), 0);
	snprintf(p, sizeof(p), "%s/old-sub", w);
	assert_int_equal(mkdir(p, 0755), 0);
	int fd = start_watch(h, w, 0, 5, &err);
	assert_true(fd >= 0);

	touch(w, "a.txt", "x");
	expect_watch_event(fd, 5, "a.txt", HU_WATCH_CREATE);
	expect_watch_event(fd, 5, "a.txt", HU_WATCH_WRITE);
	snprintf(p, sizeof(p), "%s/a.txt", w);
	assert_int_equal(chmod(p, 0600), 0);
	expect_watch_event(fd, 5, "a.txt", HU_WATCH_CHMOD);
	snprintf(q, sizeof(q), "%s/b.txt", w);
	assert_int_equal(rename(p, q), 0);
	expect_watch_event(fd, 5, "a.txt", HU_WATCH_RENAME);
	expect_watch_event(fd, 5, "b.txt", HU_WATCH_CREATE);
	assert_int_equal(unlink(q), 0);
	expect_watch_event(fd, 5, "b.txt", HU_WATCH_REMOVE);

	/* Not recursive: a file in a subdirectory is not reported, the next
	 * change at the top is. */
	touch(w, "old-sub/inner", "y");
	touch(w, "top", "z");
	char name[PATH_MAX];
	assert_int_equal(next_watch_event(fd, 5, name, sizeof(name), &err), HU_WATCH_CREATE);
	assert_string_equal(name, "top");

	/* Removing the watched directory ends the watch with an ERROR. */
	hu_rm_rf(w, &err);
	for (;;) {
		uint8_t type = next_watch_event(fd, 5, name, sizeof(name), &err);
		if (type == 0)
			break;
	}
	assert_int_equal(err.code, ENOENT);
	close(fd);
}

static void test_watch_recursive_follows_new_dirs(void **state)
{
	struct harness *h = *state;
	char w[PATH_MAX], p[PATH_MAX];
	hu_err err;

	snprintf(w, sizeof(w), "%s/tree", h->dir);
	snprintf(p, sizeof(p), "%s/tree/a/b", h->dir);
	assert_int_equal(hu_mkdir_p(p, 0755, &err), 0);
	int fd = start_watch(h, w, HU_REQ_MAX_DEPTH, 6, &err);
	assert_true(fd >= 0);

	/* Existing subdirectories are watched... */
	touch(w, "a/b/deep.txt", "1");
	expect_watch_event(fd, 6, "a/b/deep.txt", HU_WATCH_CREATE);
	/* ...and so are new ones, and what is created in them. */
	snprintf(p, sizeof(p), "%s/new", w);
	assert_int_equal(mkdir(p, 0755), 0);
	expect_watch_event(fd, 6, "new", HU_WATCH_CREATE);
	touch(w, "new/x", "2");
	expect_watch_event(fd, 6, "new/x", HU_WATCH_CREATE);
	/* A directory moved away is no longer followed under its old name; it
	 * is followed under its new one. */
	char q[PATH_MAX];
	snprintf(q, sizeof(q), "%s/renamed", w);
	assert_int_equal(rename(p, q), 0);
	expect_watch_event(fd, 6, "new", HU_WATCH_RENAME);
	expect_watch_event(fd, 6, "renamed", HU_WATCH_CREATE);
	touch(w, "renamed/y", "3");
	expect_watch_event(fd, 6, "renamed/y", HU_WATCH_CREATE);
	close(fd);

	/* The connection is gone and so is its watch; init serves on. */
	fd = start_watch(h, w, 2, 7, &err);
	assert_true(fd >= 0);
	touch(w, "a/two-levels", "4");
	expect_watch_event(fd, 7, "a/two-levels", HU_WATCH_CREATE);
	close(fd);
}

static void test_watch_errors(void **state)
{
	struct harness *h = *state;
	char p[PATH_MAX];
	hu_err err = {0};

	snprintf(p, sizeof(p), "%s/missing", h->dir);
	assert_int_equal(start_watch(h, p, 0, 1, &err), -1);
	assert_int_equal(err.code, ENOENT);
	touch(h->dir, "plain-file", "x");
	snprintf(p, sizeof(p), "%s/plain-file", h->dir);
	assert_int_equal(start_watch(h, p, 0, 2, &err), -1);
	assert_int_equal(err.code, ENOTDIR);

	/* Two watches may not share a request id on one connection. */
	struct hu_buf b = {0};
	hu_err e;
	assert_int_equal(hu_init_build_file(&b, HU_MSG_WATCH_START, 3, h->dir, NULL, 0, "root", &e), 0);
	expect_ok(h->fd, 3, &b);
	assert_int_equal(hu_init_build_file(&b, HU_MSG_WATCH_START, 3, h->dir, NULL, 0, "root", &e), 0);
	send_buf(h->fd, &b);
	assert_int_equal(wait_reply(h->fd, 3, NULL, &err), HU_MSG_ERROR);
	assert_int_equal(err.code, EBUSY);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_ping),
		T(test_stdout_stderr_separated),
		T(test_exit_codes),
		T(test_killed_by_signal),
		T(test_environment_and_cwd),
		T(test_stdin_roundtrip),
		T(test_signal),
		T(test_pty),
		T(test_big_output_intact),
		T(test_backpressure_bounds_memory),
		T(test_exec_missing_binary),
		T(test_exec_path_search),
		cmocka_unit_test_setup_teardown(test_stuck_before_exec, setup_hung_mount, teardown_hung_mount),
		T(test_attach_from_second_connection),
		T(test_attach_after_exit_replays),
		T(test_disconnect_keeps_process),
		T(test_garbage_closes_only_that_connection),
		T(test_orphans_reaped),
		T(test_file_write_read_roundtrip),
		T(test_file_stat_list_mkdir_move_remove),
		T(test_user_identity),
		T(test_watch_events),
		T(test_watch_recursive_follows_new_dirs),
		T(test_watch_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
