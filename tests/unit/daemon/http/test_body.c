/*
 * Request bodies read by the HTTP layer (inconn.c, body.c, framing.c),
 * driven through a real server on loopback with raw bytes: sized and
 * chunked bodies read whole or streamed with pauses, keep-alive and
 * pipelining after a body, 100-continue, and the refusals (431 for a head
 * over the limit, 413, 400 for lying or malformed framing, 501 for an
 * unknown Transfer-Encoding). Plus the framing decoder alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
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
#include "daemon/http/framing.h"
#include "daemon/http/server.h"

/* ---- the decoder alone ---------------------------------------------------------- */

/* Decode all of s byte by byte; the body goes to out. rc of the last step. */
static int decode_bytewise(enum hu_framing_mode mode, uint64_t len, const char *s, char *out, size_t *used_total,
			   hu_err *err)
{
	struct hu_framing f;
	size_t n = strlen(s), pos = 0, o = 0;
	int rc = 0;

	hu_framing_init(&f, mode, len, 1000);
	while (pos < n) {
		size_t used, off, dl;
		rc = hu_framing_step(&f, (const uint8_t *)s + pos, 1, &used, &off, &dl, err);
		if (rc < 0)
			break;
		memcpy(out + o, s + pos + off, dl);
		o += dl;
		pos += used;
		if (rc == 1)
			break;
	}
	out[o] = '\0';
	*used_total = pos;
	return rc;
}

static void test_framing_chunked(void **state)
{
	char out[256];
	size_t used;
	hu_err err;
	const char *body = "5\r\nhello\r\n1;name=\"v\"\r\n \r\nA\nabcdefghij\n0\r\nX-Trailer: 1\r\n\r\nNEXT";

	assert_int_equal(decode_bytewise(HU_FRAMING_CHUNKED, 0, body, out, &used, &err), 1);
	assert_string_equal(out, "hello abcdefghij");
	assert_string_equal(body + used, "NEXT"); /* the next request is left alone */
}

static void test_framing_refusals(void **state)
{
	static const char *const bad[] = {
		"fffffffffffffffff\r\n",      /* 17 hex digits: a huge chunk size */
		"zz\r\n",                      /* not hexadecimal */
		"5\r\nhelloX\r\n",             /* data longer than its size */
		"5x\r\n",                      /* junk after the size */
		"3\r\nabc\r\n0\r\n\rX",        /* CR without LF at the end */
		"\r\n",                        /* no size at all */
	};
	char out[256];
	size_t used;
	hu_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (decode_bytewise(HU_FRAMING_CHUNKED, 0, bad[i], out, &used, &err) != -1)
			fail_msg("accepted %s", bad[i]);
		assert_int_equal(err.code, EINVAL);
	}
	/* over the limit (1000 here): refused when the size line announces it */
	assert_int_equal(decode_bytewise(HU_FRAMING_CHUNKED, 0, "3e9\r\n", out, &used, &err), -1);
	assert_int_equal(err.code, E2BIG);
	assert_int_equal(decode_bytewise(HU_FRAMING_LENGTH, 2000, "abc", out, &used, &err), -1);
	assert_int_equal(err.code, E2BIG);
	/* a long size line (extensions) is bounded */
	char line[HU_FRAMING_MAX_LINE + 16] = "1;";
	memset(line + 2, 'x', HU_FRAMING_MAX_LINE + 4);
	line[HU_FRAMING_MAX_LINE + 6] = '\0';
	assert_int_equal(decode_bytewise(HU_FRAMING_CHUNKED, 0, line, out, &used, &err), -1);
}

static void test_framing_eof(void **state)
{
	struct hu_framing f;
	size_t used, off, len;
	hu_err err;

	hu_framing_init(&f, HU_FRAMING_LENGTH, 10, 0);
	assert_int_equal(hu_framing_step(&f, (const uint8_t *)"abc", 3, &used, &off, &len, &err), 0);
	assert_int_equal(len, 3);
	assert_int_equal(hu_framing_eof(&f, &err), -1); /* 7 bytes short: truncated */
	hu_framing_init(&f, HU_FRAMING_CLOSE, 0, 0);
	assert_int_equal(hu_framing_eof(&f, &err), 0);
}

/* ---- through the server ------------------------------------------------------------ */

struct world {
	struct event_base *base;
	struct hu_http *http;
	int streamed_pauses; /* /stream: pause after every piece, resume from a timer */
	struct event *resume_ev;
	struct hu_req *streaming;
	size_t got;
	uint64_t hash;
	char end[128];
	int ends;
};

static struct world *W;

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static void reply_summary(struct hu_req *r, size_t len, uint64_t hash, const char *end)
{
	hu_reply_json(r, 200, json_pack("{s:I,s:I,s:s}", "length", (json_int_t)len, "hash", (json_int_t)(hash & 0xffffffff),
					"end", end));
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
	hu_req_body_resume(W->streaming);
}

static int stream_data(void *arg, const uint8_t *data, size_t len)
{
	W->got += len;
	W->hash = fnv(W->hash, data, len);
	W->streamed_pauses++;
	struct timeval tv = {0, 1000};
	evtimer_add(W->resume_ev, &tv);
	return 1; /* pause after every piece */
}

static void stream_end(void *arg, const hu_err *err)
{
	W->ends++;
	snprintf(W->end, sizeof(W->end), "%s", err ? err->msg : "ok");
	evtimer_del(W->resume_ev);
	reply_summary(W->streaming, W->got, W->hash, W->end);
	W->streaming = NULL;
}

static void handle(struct hu_req *r)
{
	if (!strcmp(r->path, "/stream")) {
		struct hu_body_cbs cbs = {stream_data, stream_end, NULL};
		W->streaming = r;
		W->got = 0;
		W->hash = 1469598103934665603ull;
		assert_int_equal(hu_req_body_stream(r, &cbs), 0);
		return;
	}
	if (!strcmp(r->path, "/early")) { /* streamed, but answered without reading the body */
		hu_reply_error(r, 403, "no");
		return;
	}
	size_t len;
	const uint8_t *body = hu_req_body(r, &len);
	reply_summary(r, len, fnv(1469598103934665603ull, body, len), "whole");
}

static bool streams_body(struct hu_req *r)
{
	return !strcmp(r->path, "/stream") || !strcmp(r->path, "/early");
}

static int setup(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	hu_err err;

	hu_log_open(NULL, getenv("TEST_DEBUG") ? HU_LOG_DEBUG : HU_LOG_ERROR, &err);
	struct hu_http_settings set = {.max_body_bytes = 1 << 20, .idle_timeout_s = 60};
	struct hu_http_hooks hooks = {.dispatch = handle, .streams_body = streams_body};
	w->base = event_base_new();
	w->resume_ev = evtimer_new(w->base, on_resume, w);
	assert_int_equal(hu_http_new(w->base, &set, &hooks, w, &w->http, &err), 0);
	W = w;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;
	hu_http_close(w->http);
	hu_http_free(w->http);
	event_free(w->resume_ev);
	event_base_free(w->base);
	free(w);
	W = NULL;
	return 0;
}

/* A listener of the server's, and connections to it. */
static int listen_on(struct world *w, struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	hu_err err;

	*sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(lfd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	assert_int_equal(listen(lfd, 64), 0);
	getsockname(lfd, (struct sockaddr *)sa, &len);
	assert_int_equal(hu_http_listen_fd(w->http, lfd, &err), 0);
	return lfd;
}

static int connect_to(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (const struct sockaddr *)sa, sizeof(*sa)), 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static int open_client(struct world *w)
{
	struct sockaddr_in sa;

	listen_on(w, &sa);
	return connect_to(&sa);
}

static void send_all(struct world *w, int fd, const char *s, size_t n)
{
	size_t off = 0;
	while (off < n) {
		ssize_t k = write(fd, s + off, n - off);
		if (k > 0)
			off += (size_t)k;
		event_base_loop(w->base, EVLOOP_NONBLOCK);
	}
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Run the loop, collecting what the server sends, until `want` responses
 * (status lines) arrived and the last is complete, or the server closed. */
static size_t collect(struct world *w, int fd, char *buf, size_t cap, int want, bool *closed)
{
	struct timespec t0, now;
	size_t have = 0;
	*closed = false;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		event_base_loop(w->base, EVLOOP_NONBLOCK);
		ssize_t n = read(fd, buf + have, cap - 1 - have);
		if (n > 0)
			have += (size_t)n;
		buf[have] = '\0';
		if (n == 0) {
			*closed = true;
			return have;
		}
		const char *last = NULL;
		for (const char *p = buf; (p = strstr(p, "HTTP/1.1 ")); p++)
			last = p;
		if (count(buf, "HTTP/1.1 ") - count(buf, "HTTP/1.1 100 ") >= want && last && strstr(last, "}"))
			return have;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > 5000)
			fail_msg("timed out with: %.300s", buf);
		usleep(200);
	}
}

static void test_sized_and_chunked_whole(void **state)
{
	struct world *w = *state;
	int fd = open_client(w);
	char buf[8192];
	bool closed;
	/* two requests with bodies and a GET, pipelined in one write */
	const char *reqs = "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
			   "POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
			   "GET /c HTTP/1.1\r\nHost: x\r\n\r\n";
	send_all(w, fd, reqs, strlen(reqs));
	collect(w, fd, buf, sizeof(buf), 3, &closed);
	assert_false(closed);
	assert_int_equal(count(buf, "200 OK"), 3);
	assert_non_null(strstr(buf, "\"length\":5"));
	assert_non_null(strstr(buf, "\"length\":0"));
	close(fd);
}

/* Each request finds its own connection's state (inconn.c keeps them by
 * socket): many connections whose heads arrive interleaved, each with a
 * body of its own length, then half of them closed and new ones opened on
 * the socket numbers the closed ones had. A request given another
 * connection's state would read the wrong framing (a wrong length, a hang)
 * or be refused (500, no state). */
static void test_many_connections_each_its_own(void **state)
{
	enum { CONNS = 40 };
	struct world *w = *state;
	struct sockaddr_in sa;
	int fds[CONNS];
	char buf[4096], body[CONNS + 2], want[32];
	const char *half = "POST /x HTTP/1.1\r\nHost: x\r\n";
	bool closed;

	listen_on(w, &sa);
	memset(body, 'b', sizeof(body));
	for (int i = 0; i < CONNS; i++)
		fds[i] = connect_to(&sa);
	for (int round = 0; round < 3; round++) {
		/* every head's first half, then every second half and body */
		for (int i = 0; i < CONNS; i++)
			send_all(w, fds[i], half, strlen(half));
		for (int i = 0; i < CONNS; i++) {
			char rest[96];
			int n = snprintf(rest, sizeof(rest), "Content-Length: %d\r\n\r\n", i + 1);
			send_all(w, fds[i], rest, (size_t)n);
			send_all(w, fds[i], body, (size_t)i + 1);
		}
		for (int i = 0; i < CONNS; i++) {
			collect(w, fds[i], buf, sizeof(buf), 1, &closed);
			assert_false(closed);
			snprintf(want, sizeof(want), "\"length\":%d,", i + 1);
			if (!strstr(buf, "200 OK") || !strstr(buf, want))
				fail_msg("connection %d (round %d) got: %.300s", i, round, buf);
		}
		/* the even ones go; their socket numbers are taken again */
		for (int i = 0; i < CONNS; i += 2) {
			close(fds[i]);
			for (int k = 0; k < 20; k++)
				event_base_loop(w->base, EVLOOP_NONBLOCK);
		}
		for (int i = 0; i < CONNS; i += 2)
			fds[i] = connect_to(&sa);
	}
	for (int i = 0; i < CONNS; i++)
		close(fds[i]);
}

static void test_streamed_with_pauses(void **state)
{
	struct world *w = *state;
	int fd = open_client(w);
	char buf[8192];
	bool closed;
	static char big[300000];
	memset(big, 'q', sizeof(big));
	char head[256];
	int n = snprintf(head, sizeof(head), "POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", sizeof(big));
	send_all(w, fd, head, (size_t)n);
	send_all(w, fd, big, sizeof(big));
	send_all(w, fd, "GET /after HTTP/1.1\r\nHost: x\r\n\r\n", 32);
	collect(w, fd, buf, sizeof(buf), 2, &closed);
	assert_false(closed);
	assert_non_null(strstr(buf, "\"length\":300000"));
	assert_non_null(strstr(buf, "\"end\":\"ok\""));
	assert_true(w->streamed_pauses > 1);
	assert_int_equal(w->ends, 1);
	close(fd);
}

static void test_expect_continue(void **state)
{
	struct world *w = *state;
	int fd = open_client(w);
	char buf[8192];
	bool closed;
	const char *head = "POST /stream HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n";
	send_all(w, fd, head, strlen(head));
	struct timespec t0 = {0, 20 * 1000 * 1000};
	for (int i = 0; i < 20; i++) {
		event_base_loop(w->base, EVLOOP_NONBLOCK);
		nanosleep(&t0, NULL);
	}
	ssize_t k = read(fd, buf, sizeof(buf) - 1);
	assert_true(k > 0);
	buf[k] = '\0';
	assert_non_null(strstr(buf, "HTTP/1.1 100 Continue"));
	send_all(w, fd, "abcd", 4);
	collect(w, fd, buf, sizeof(buf), 1, &closed);
	assert_non_null(strstr(buf, "\"length\":4"));
	close(fd);
}

/* One raw request; the response must have `status`, and the connection
 * close after it when `closes`. */
static void expect_refusal(struct world *w, const char *req, size_t len, const char *status, bool closes)
{
	int fd = open_client(w);
	char buf[16384];
	bool closed = false;
	send_all(w, fd, req, len);
	size_t have = collect(w, fd, buf, sizeof(buf), 1, &closed);
	if (!strstr(buf, status))
		fail_msg("wanted %s, got: %.300s", status, buf);
	assert_non_null(strstr(buf, "application/json"));
	if (closes && !closed) {
		if (!strstr(buf, "Connection: close"))
			fail_msg("not closed after: %.300s", buf);
		collect(w, fd, buf + have, sizeof(buf) - have, 99, &closed);
		assert_true(closed);
	}
	close(fd);
}

static void test_refusals(void **state)
{
	struct world *w = *state;
	char *big = malloc(70000 + 64);
	size_t n = (size_t)sprintf(big, "GET / HTTP/1.1\r\nX-Big: ");
	memset(big + n, 'a', 70000);
	n += 70000;
	n += (size_t)sprintf(big + n, "\r\n\r\n");
	expect_refusal(w, big, n, "431 ", true);
	free(big);
#define REQ(s) s, sizeof(s) - 1
	expect_refusal(w, REQ("POST /a HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"), "400 ", true);
	expect_refusal(w, REQ("POST /a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), "501 ", true);
	expect_refusal(w, REQ("POST /a HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello"), "400 ", true);
	expect_refusal(w, REQ("POST /a HTTP/1.1\r\nContent-Length : 5\r\n\r\nhello"), "400 ", true);
	expect_refusal(w, REQ("POST /a HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), "400 ", true);
	expect_refusal(w, REQ("POST /a HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n"), "413 ", true);
	expect_refusal(w, REQ("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n"), "400 ", true);
	expect_refusal(w, REQ("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n200000\r\n"), "413 ", true);
	/* answered before its body was read: closed after, so the unread body
	 * is never taken for the next request */
	expect_refusal(w, REQ("POST /early HTTP/1.1\r\nContent-Length: 20\r\n\r\nGET /smuggled HTTP/1.1"), "403 ", true);
#undef REQ
}

static void test_truncated_body(void **state)
{
	struct world *w = *state;
	int fd = open_client(w);
	char buf[4096];
	bool closed;
	const char *req = "POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly this";
	send_all(w, fd, req, strlen(req));
	shutdown(fd, SHUT_WR); /* the body is 91 bytes short */
	collect(w, fd, buf, sizeof(buf), 1, &closed);
	assert_int_equal(w->ends, 1);
	assert_non_null(strstr(w->end, "truncated"));
	close(fd);
}

/* A streamed body whose framing breaks part way: its consumer is told,
 * and the connection closes after the reply, so what follows the broken
 * body is never served as a request. */
static void test_broken_streamed_body_closes(void **state)
{
	struct world *w = *state;
	int fd = open_client(w);
	char buf[4096];
	bool closed;
	const char *req = "POST /stream HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"
			  "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
	send_all(w, fd, req, strlen(req));
	size_t have = collect(w, fd, buf, sizeof(buf), 1, &closed);
	if (!closed)
		collect(w, fd, buf + have, sizeof(buf) - have, 99, &closed);
	assert_true(closed);
	assert_int_equal(w->ends, 1);
	assert_string_not_equal(w->end, "ok");
	assert_int_equal(count(buf, "HTTP/1.1 "), 1);
	assert_non_null(strstr(buf, "Connection: close"));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_framing_chunked),
		cmocka_unit_test(test_framing_refusals),
		cmocka_unit_test(test_framing_eof),
		cmocka_unit_test_setup_teardown(test_sized_and_chunked_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_connections_each_its_own, setup, teardown),
		cmocka_unit_test_setup_teardown(test_streamed_with_pauses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expect_continue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken_streamed_body_closes, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
