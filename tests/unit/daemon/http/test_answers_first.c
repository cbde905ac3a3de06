/*
 * An answer leaves before the next request is worked on (server.h
 * answers_first, hu_http_loop_new): two requests with bodies reach the
 * server in one poll; when the second one's handler runs, the first one's
 * answer is already in its client's socket, written before its handler
 * returned. On a plain loop without answers_first both are worked through
 * before either answer is written, which the test shows too, so that it
 * can tell the two apart.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/common/log.h"
#include "daemon/http/server.h"

#define CLIENTS 2

struct world {
	struct event_base *base;
	struct hu_http *http;
	int fd[CLIENTS];
	int handled;
	int answered_before_second; /* -1 until the second handler ran */
	int answered_in_handler;    /* the first answer was in its socket when hu_reply_json returned */
};

static struct world *W;

/* Bytes waiting in some client's socket: an answer the server wrote. */
static int some_answer_waiting(const struct world *w)
{
	char c;
	for (int i = 0; i < CLIENTS; i++)
		if (recv(w->fd[i], &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
			return 1;
	return 0;
}

static void handle(struct hu_req *r)
{
	if (++W->handled == 2)
		W->answered_before_second = some_answer_waiting(W);
	hu_reply_json(r, 200, json_pack("{s:i}", "n", W->handled));
	if (W->handled == 1)
		W->answered_in_handler = some_answer_waiting(W);
}

static struct world *start(bool answers_first)
{
	struct world *w = calloc(1, sizeof(*w));
	struct hu_http_settings set = {.max_body_bytes = 1 << 20, .idle_timeout_s = 60, .answers_first = answers_first};
	struct hu_http_hooks hooks = {.dispatch = handle};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	hu_err err;

	assert_non_null(w);
	hu_log_open(NULL, getenv("TEST_DEBUG") ? HU_LOG_DEBUG : HU_LOG_ERROR, &err);
	w->base = answers_first ? hu_http_loop_new(3, &err) : event_base_new();
	assert_non_null(w->base);
	assert_int_equal(hu_http_new(w->base, &set, &hooks, w, &w->http, &err), 0);
	w->answered_before_second = -1;
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 16), 0);
	getsockname(lfd, (struct sockaddr *)&sa, &len);
	assert_int_equal(hu_http_listen_fd(w->http, lfd, &err), 0);
	for (int i = 0; i < CLIENTS; i++) {
		w->fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(w->fd[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
	}
	/* accepted and set up, nothing read yet */
	for (int i = 0; i < 20; i++)
		event_base_loop(w->base, EVLOOP_NONBLOCK);
	W = w;
	return w;
}

static void stop(struct world *w)
{
	for (int i = 0; i < CLIENTS; i++)
		close(w->fd[i]);
	hu_http_close(w->http);
	hu_http_free(w->http);
	event_base_free(w->base);
	free(w);
	W = NULL;
}

/* Both requests in the sockets before the loop runs (loopback delivers a
 * write at once): one poll finds both. Then the loop runs until both
 * clients have their answer. */
static void burst(struct world *w)
{
	static const char req[] = "POST /a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
				  "Content-Length: 2\r\n\r\n{}";
	struct timespec t0, now;
	char buf[4096];
	size_t got[CLIENTS] = {0};

	for (int i = 0; i < CLIENTS; i++)
		assert_int_equal(write(w->fd[i], req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		event_base_loop(w->base, EVLOOP_NONBLOCK);
		int done = 0;
		for (int i = 0; i < CLIENTS; i++) {
			ssize_t k = recv(w->fd[i], buf, sizeof(buf), MSG_DONTWAIT);
			if (k > 0)
				got[i] += (size_t)k;
			done += got[i] > 0;
		}
		if (done == CLIENTS)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > 5)
			fail_msg("no answers after 5 s (handled %d)", w->handled);
	}
	assert_int_equal(w->handled, CLIENTS);
}

static void test_answer_before_next_request(void **state)
{
	struct world *w = start(true);
	burst(w);
	assert_int_equal(w->answered_before_second, 1);
	stop(w);
}

/* The answer is in the client's socket when hu_reply_json returns: it does
 * not wait for the loop to poll, so the loop need not poll after each
 * callback for answers to go first. */
static void test_answer_written_in_its_handler(void **state)
{
	struct world *w = start(true);
	burst(w);
	assert_int_equal(w->answered_in_handler, 1);
	stop(w);
}

/* The loop libevent makes by default: the second request is worked on
 * before the first answer is written. */
static void test_plain_loop_answers_after_the_burst(void **state)
{
	struct world *w = start(false);
	burst(w);
	assert_int_equal(w->answered_before_second, 0);
	stop(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answer_before_next_request),
		cmocka_unit_test(test_answer_written_in_its_handler),
		cmocka_unit_test(test_plain_loop_answers_after_the_burst),
	};
	return cmocka_run_group_tests_name("http: answers first", tests, NULL, NULL);
}
