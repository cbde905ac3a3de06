/*
 * The daemon's asynchronous init connection against a real hutch-init run
 * as an ordinary process (as in tests/unit/init/test_init_local.c), on a
 * libevent loop: replies and events arrive as callbacks, pause really stops
 * delivery, a dying init is one close callback, and the owner may free the
 * connection from inside any callback. Every wait is bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unit/testutil.h"

#include <event2/event.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/sandboxes/initconn.h"
#include "runtime/initclient.h"
#include "util/fileutil.h"

#define WAIT_MS 15000

struct harness {
	char dir[PATH_MAX];
	char sock[PATH_MAX];
	pid_t init_pid; /* 0 when the test runs a fake init instead */
	int listen_fd;  /* the fake init's socket, -1 otherwise */
	struct event_base *base;
};

/* What the callbacks saw. */
struct seen {
	struct hu_initconn *c;
	int frames;
	int pongs;
	uint32_t pid;
	char out[1 << 20];
	size_t out_len;
	bool exited;
	int32_t exit_code;
	bool closed;
	hu_err why;
	/* behaviour switches */
	bool free_on_frame;  /* free the connection in the first frame callback */
	bool pause_on_frame; /* pause on every frame until told otherwise */
	bool free_on_close;
	int closes;
};


static int listen_on(struct harness *h)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", h->sock);
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 64), 0);
	return ls;
}

static int setup_common(void **state, bool real_init)
{
	struct harness *h = calloc(1, sizeof(*h));
	assert_non_null(h);
	snprintf(h->dir, sizeof(h->dir), "/tmp/hutch-initconn-test.XXXXXX");
	assert_non_null(mkdtemp(h->dir));
	snprintf(h->sock, sizeof(h->sock), "%s/init.sock", h->dir);
	h->base = event_base_new();
	assert_non_null(h->base);
	h->listen_fd = listen_on(h);
	if (real_init) {
		const char *path = hu_test_init_path();
		h->init_pid = fork();
		assert_true(h->init_pid >= 0);
		if (h->init_pid == 0) {
			dup2(h->listen_fd, 3); /* dup2 clears CLOEXEC on fd 3 */
			execl(path, "hutch-init", "--allow-local-peers", (char *)NULL);
			fprintf(stderr, "exec %s: %m\n", path);
			_exit(127);
		}
		close(h->listen_fd);
		h->listen_fd = -1;
	}
	*state = h;
	return 0;
}

static int setup_init(void **state)
{
	return setup_common(state, true);
}

static int setup_fake(void **state)
{
	return setup_common(state, false);
}

static int teardown(void **state)
{
	struct harness *h = *state;
	hu_err err;
	int status;

	if (h->init_pid > 0) {
		kill(h->init_pid, SIGKILL);
		waitpid(h->init_pid, &status, 0);
	}
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	event_base_free(h->base);
	hu_rm_rf(h->dir, &err);
	free(h);
	return 0;
}

/* ---- the loop ------------------------------------------------------------ */

static void timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	*(bool *)arg = true;
}

/* Run the loop until *done or ms elapse; returns whether *done became true. */
static bool run_until(struct harness *h, const bool *done, int ms)
{
	bool timed_out = false;
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	struct event *t = evtimer_new(h->base, timeout_cb, &timed_out);
	assert_non_null(t);
	evtimer_add(t, &tv);
	while (!*done && !timed_out)
		event_base_loop(h->base, EVLOOP_ONCE);
	event_free(t);
	return *done;
}

/* Run the loop for ms no matter what. */
static void run_for(struct harness *h, int ms)
{
	bool never = false;
	run_until(h, &never, ms);
}

/* ---- callbacks ------------------------------------------------------------ */

static void on_frame(struct hu_initconn *c, const struct hu_frame_hdr *hdr, const uint8_t *payload, void *arg)
{
	struct seen *s = arg;
	struct hu_init_event ev;
	hu_err err;

	assert_false(s->closed);
	s->frames++;
	assert_int_equal(hu_init_parse_event(hdr, payload, &ev, &err), 0);
	switch (ev.type) {
	case HU_MSG_PONG:
		s->pongs++;
		break;
	case HU_MSG_SPAWNED:
		s->pid = ev.pid;
		break;
	case HU_MSG_OUTPUT:
		assert_true(s->out_len + ev.data_len <= sizeof(s->out));
		memcpy(s->out + s->out_len, ev.data, ev.data_len);
		s->out_len += ev.data_len;
		break;
	case HU_MSG_EXIT:
		s->exited = true;
		s->exit_code = ev.exit_code;
		break;
	case HU_MSG_ERROR:
		hu_init_parse_error(payload, hdr->len, &s->why);
		fail_msg("init error: %s", s->why.msg);
		break;
	}
	if (s->free_on_frame) {
		hu_initconn_free(c);
		s->c = NULL;
		s->free_on_frame = false;
		return;
	}
	if (s->pause_on_frame)
		hu_initconn_pause(c);
}

static void on_close(struct hu_initconn *c, const hu_err *why, void *arg)
{
	struct seen *s = arg;
	s->closes++;
	s->closed = true;
	s->why = *why;
	if (s->free_on_close) {
		hu_initconn_free(c);
		s->c = NULL;
	}
}

static void open_conn(struct harness *h, struct seen *s)
{
	hu_err err;
	if (hu_initconn_open(h->base, h->sock, on_frame, on_close, s, &s->c, &err) < 0)
		fail_msg("open: %s", err.msg);
}

static void send_spawn(struct seen *s, const char *script)
{
	struct hu_buf b = {0};
	hu_err err;
	const char *argv[] = {"sh", "-c", script};
	struct hu_spawn_req req = {.argv = argv, .argc = 3, .user = "root", .cwd = "/"};
	assert_int_equal(hu_init_build_spawn(&b, hu_initconn_next_id(s->c), &req, &err), 0);
	assert_int_equal(hu_initconn_send(s->c, &b, &err), 0);
	hu_buf_free(&b);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_ping_pong(void **state)
{
	struct harness *h = *state;
	struct seen *s = calloc(1, sizeof(*s));
	struct hu_buf b = {0};
	hu_err err;

	open_conn(h, s);
	/* Two requests in one write: two callbacks. */
	assert_int_equal(hu_init_build_simple(&b, HU_MSG_PING, hu_initconn_next_id(s->c), &err), 0);
	assert_int_equal(hu_init_build_simple(&b, HU_MSG_PING, hu_initconn_next_id(s->c), &err), 0);
	assert_int_equal(hu_initconn_send(s->c, &b, &err), 0);
	hu_buf_free(&b);
	bool two = false;
	for (int i = 0; i < 100 && !two; i++) {
		run_until(h, &s->closed, 50);
		two = s->pongs == 2;
	}
	assert_int_equal(s->pongs, 2);
	assert_false(s->closed);
	hu_initconn_free(s->c);
	free(s);
}

static void test_spawn_output_exit(void **state)
{
	struct harness *h = *state;
	struct seen *s = calloc(1, sizeof(*s));

	open_conn(h, s);
	send_spawn(s, "echo hello; exit 3");
	assert_true(run_until(h, &s->exited, WAIT_MS));
	assert_true(s->pid > 0);
	assert_int_equal(s->out_len, 6);
	assert_memory_equal(s->out, "hello\n", 6);
	assert_int_equal(s->exit_code, 3);
	hu_initconn_free(s->c);
	free(s);
}

static void test_peer_death_closes_once(void **state)
{
	struct harness *h = *state;
	struct seen *s = calloc(1, sizeof(*s));
	int status;

	s->free_on_close = true;
	open_conn(h, s);
	send_spawn(s, "sleep 5");
	run_for(h, 200);
	kill(h->init_pid, SIGKILL);
	waitpid(h->init_pid, &status, 0);
	h->init_pid = 0;
	assert_true(run_until(h, &s->closed, WAIT_MS));
	assert_int_equal(s->why.code, ECONNRESET);
	assert_null(s->c); /* freed inside the close callback */
	run_for(h, 100);
	assert_int_equal(s->closes, 1);
	free(s);
}

static void test_free_inside_frame_callback(void **state)
{
	struct harness *h = *state;
	struct seen *s = calloc(1, sizeof(*s));

	open_conn(h, s);
	send_spawn(s, "seq 1 200000");
	s->free_on_frame = true; /* the SPAWNED reply frees it */
	bool freed = false;
	for (int i = 0; i < 300 && !freed; i++) {
		run_for(h, 10);
		freed = s->c == NULL;
	}
	assert_true(freed);
	int frames = s->frames;
	run_for(h, 300);
	/* Nothing is delivered after the free, the close callback included. */
	assert_int_equal(s->frames, frames);
	assert_false(s->closed);
	free(s);
}

static void test_pause_stops_delivery_and_resume_continues(void **state)
{
	struct harness *h = *state;
	struct seen *s = calloc(1, sizeof(*s));
	char expected[64];
	size_t expected_len = 0;

	for (int i = 1; i <= 5; i++)
		expected_len += (size_t)snprintf(expected + expected_len, sizeof(expected) - expected_len, "%d\n", i);
	open_conn(h, s);
	s->pause_on_frame = true;
	/* Output arrives as several frames (one per echo, with pauses). */
	send_spawn(s, "for i in 1 2 3 4 5; do echo $i; sleep 0.05; done");
	bool got_one = false;
	for (int i = 0; i < 300 && !got_one; i++) {
		run_for(h, 10);
		got_one = s->frames > 0;
	}
	assert_int_equal(s->frames, 1);
	/* Paused: the process runs to its end, but nothing is delivered. */
	run_for(h, 600);
	assert_int_equal(s->frames, 1);
	assert_false(s->exited);
	/* Resume frame by frame: what was buffered during the pause comes out. */
	for (int i = 0; i < 100 && !s->exited; i++) {
		hu_initconn_resume(s->c);
		run_for(h, 20);
	}
	assert_true(s->exited);
	assert_int_equal(s->out_len, expected_len);
	assert_memory_equal(s->out, expected, expected_len);
	hu_initconn_free(s->c);
	free(s);
}

static void test_large_output_intact(void **state)
{
	struct harness *h = *state;
	struct seen *s = calloc(1, sizeof(*s));

	open_conn(h, s);
	/* About 500 KB: many frames, several reads. */
	send_spawn(s, "seq 1 80000");
	assert_true(run_until(h, &s->exited, WAIT_MS));
	size_t off = 0;
	for (int i = 1; i <= 80000; i++) {
		char line[16];
		int n = snprintf(line, sizeof(line), "%d\n", i);
		assert_true(off + (size_t)n <= s->out_len);
		assert_memory_equal(s->out + off, line, (size_t)n);
		off += (size_t)n;
	}
	assert_int_equal(off, s->out_len);
	hu_initconn_free(s->c);
	free(s);
}

/* ---- a fake init that misbehaves ---------------------------------------------- */

static int accept_fake(struct harness *h)
{
	int fd = accept(h->listen_fd, NULL, NULL);
	assert_true(fd >= 0);
	return fd;
}

static void expect_protocol_close(struct harness *h, const uint8_t *bytes, size_t n, const char *what)
{
	struct seen *s = calloc(1, sizeof(*s));
	s->free_on_close = true;
	open_conn(h, s);
	int fd = accept_fake(h);
	assert_int_equal(write(fd, bytes, n), (ssize_t)n);
	assert_true(run_until(h, &s->closed, WAIT_MS));
	assert_int_equal(s->frames, 0);
	assert_non_null(strstr(s->why.msg, what));
	assert_null(s->c);
	close(fd);
	free(s);
}

static void test_protocol_errors_close(void **state)
{
	struct harness *h = *state;
	const uint8_t bad_version[] = {9, HU_MSG_PONG, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
	/* Over HU_PROTO_MAX_PAYLOAD: refused from the header, before any body. */
	const uint8_t oversized[] = {HU_PROTO_VERSION, HU_MSG_OUTPUT, 0, 0, 0, 0, 0, 1, 0x00, 0x10, 0x00, 0x01};
	const uint8_t bad_field[] = {HU_PROTO_VERSION, HU_MSG_OUTPUT, 0, 0, 0, 0, 0, 1, 0, 0, 0, 8,
				     0, HU_F_DATA, 0, 0, 0, 100, 'x', 'y'};

	expect_protocol_close(h, bad_version, sizeof(bad_version), "protocol error");
	expect_protocol_close(h, oversized, sizeof(oversized), "protocol error");
	expect_protocol_close(h, bad_field, sizeof(bad_field), "protocol error");
}

static void test_eof_mid_frame(void **state)
{
	struct harness *h = *state;
	struct seen *s = calloc(1, sizeof(*s));
	const uint8_t half[] = {HU_PROTO_VERSION, HU_MSG_PONG, 0, 0, 0, 0, 0, 1, 0, 0, 0, 6, 0, 1};
	struct hu_buf b = {0};
	hu_err err;

	s->free_on_close = false;
	open_conn(h, s);
	int fd = accept_fake(h);
	assert_int_equal(write(fd, half, sizeof(half)), (ssize_t)sizeof(half));
	close(fd);
	assert_true(run_until(h, &s->closed, WAIT_MS));
	assert_int_equal(s->why.code, ECONNRESET);
	assert_non_null(strstr(s->why.msg, "mid-frame"));
	/* Closed: sending fails cleanly, pause/resume are no-ops. */
	assert_int_equal(hu_init_build_simple(&b, HU_MSG_PING, 1, &err), 0);
	assert_int_equal(hu_initconn_send(s->c, &b, &err), -1);
	assert_int_equal(err.code, EPIPE);
	hu_buf_free(&b);
	hu_initconn_pause(s->c);
	hu_initconn_resume(s->c);
	run_for(h, 50);
	assert_int_equal(s->closes, 1);
	hu_initconn_free(s->c);
	free(s);
}

static void test_open_failures(void **state)
{
	struct harness *h = *state;
	struct hu_initconn *c = NULL;
	char path[PATH_MAX];
	char longpath[200];
	hu_err err;

	snprintf(path, sizeof(path), "%s/nothing-here.sock", h->dir);
	assert_int_equal(hu_initconn_open(h->base, path, on_frame, on_close, NULL, &c, &err), -1);
	assert_int_equal(err.code, ENOENT);
	assert_non_null(strstr(err.msg, path));
	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(hu_initconn_open(h->base, longpath, on_frame, on_close, NULL, &c, &err), -1);
	assert_int_equal(err.code, ENAMETOOLONG);
	assert_null(c);
	hu_initconn_free(NULL);
}

int main(void)
{
	/* A write to a dead init must be an error, not a signal (the daemon
	 * ignores SIGPIPE the same way). */
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ping_pong, setup_init, teardown),
		cmocka_unit_test_setup_teardown(test_spawn_output_exit, setup_init, teardown),
		cmocka_unit_test_setup_teardown(test_peer_death_closes_once, setup_init, teardown),
		cmocka_unit_test_setup_teardown(test_free_inside_frame_callback, setup_init, teardown),
		cmocka_unit_test_setup_teardown(test_pause_stops_delivery_and_resume_continues, setup_init, teardown),
		cmocka_unit_test_setup_teardown(test_large_output_intact, setup_init, teardown),
		cmocka_unit_test_setup_teardown(test_protocol_errors_close, setup_fake, teardown),
		cmocka_unit_test_setup_teardown(test_eof_mid_frame, setup_fake, teardown),
		cmocka_unit_test_setup_teardown(test_open_failures, setup_fake, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
