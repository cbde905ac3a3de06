/*
 * The Connect codec (connect.c): request envelopes, error codes and their
 * HTTP statuses, and server streams driven through a real evhttp server on
 * loopback: normal end, end with an error, a client that vanishes, and a
 * client that reads slowly (pause, resume, end from inside a callback).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include "daemon/common/log.h"
#include "daemon/http/connect.h"
#include "daemon/http/server.h"

/* ---- envelopes ------------------------------------------------------------- */

static size_t envelope(uint8_t *out, uint8_t flags, const char *json, uint32_t claimed_len)
{
	size_t n = strlen(json);
	out[0] = flags;
	out[1] = (uint8_t)(claimed_len >> 24);
	out[2] = (uint8_t)(claimed_len >> 16);
	out[3] = (uint8_t)(claimed_len >> 8);
	out[4] = (uint8_t)claimed_len;
	memcpy(out + 5, json, n);
	return 5 + n;
}

static void assert_envelope_rejected(const uint8_t *buf, size_t len, const char *why)
{
	json_t *msg = NULL;
	hu_err err;
	assert_int_equal(hu_connect_parse_envelope(buf, len, &msg, &err), -1);
	assert_null(msg);
	assert_int_equal(err.code, EINVAL);
	if (!strstr(err.msg, why))
		fail_msg("error '%s' does not mention '%s'", err.msg, why);
}

static void test_envelope_good(void **state)
{
	uint8_t buf[128];
	const char *json = "{\"process\":{\"cmd\":\"/bin/true\"},\"stdin\":false}";
	size_t len = envelope(buf, 0, json, (uint32_t)strlen(json));
	json_t *msg = NULL;
	hu_err err;

	assert_int_equal(hu_connect_parse_envelope(buf, len, &msg, &err), 0);
	assert_true(json_is_object(msg));
	assert_string_equal(json_string_value(json_object_get(json_object_get(msg, "process"), "cmd")), "/bin/true");
	json_decref(msg);
}

static void test_envelope_bad(void **state)
{
	uint8_t buf[128] = {0};
	size_t len;

	assert_envelope_rejected(buf, 0, "shorter");
	len = envelope(buf, 0, "{}", 2);
	assert_envelope_rejected(buf, 4, "shorter");
	len = envelope(buf, HU_CONNECT_FLAG_COMPRESSED, "{}", 2);
	assert_envelope_rejected(buf, len, "compressed");
	len = envelope(buf, HU_CONNECT_FLAG_END, "{}", 2);
	assert_envelope_rejected(buf, len, "flags");
	len = envelope(buf, 0, "{}", HU_CONNECT_MAX_MESSAGE + 1);
	assert_envelope_rejected(buf, len, "limit");
	len = envelope(buf, 0, "{}", 0xffffffffu);
	assert_envelope_rejected(buf, len, "limit");
	len = envelope(buf, 0, "{}", 10);
	assert_envelope_rejected(buf, len, "truncated");
	len = envelope(buf, 0, "{}{}", 2); /* trailing garbage */
	assert_envelope_rejected(buf, len, "after the request envelope");
	len = envelope(buf, 0, "{}", 2);
	len += envelope(buf + len, 0, "{}", 2); /* two envelopes */
	assert_envelope_rejected(buf, len, "after the request envelope");
	len = envelope(buf, 0, "[1,2]", 5);
	assert_envelope_rejected(buf, len, "not a JSON object");
	len = envelope(buf, 0, "\"s\"", 3);
	assert_envelope_rejected(buf, len, "not a JSON object");
	len = envelope(buf, 0, "{\"a\":", 5);
	assert_envelope_rejected(buf, len, "not valid JSON");
	len = envelope(buf, 0, "", 0);
	assert_envelope_rejected(buf, len, "not valid JSON");
}

static void test_errno_codes(void **state)
{
	static const struct {
		int err;
		const char *code;
	} cases[] = {
		{ENOENT, "not_found"},         {ESRCH, "not_found"},           {EEXIST, "already_exists"},
		{EINVAL, "invalid_argument"},  {ENOTDIR, "invalid_argument"},  {EISDIR, "invalid_argument"},
		{EACCES, "permission_denied"}, {EPERM, "permission_denied"},   {ENOSPC, "resource_exhausted"},
		{ETIMEDOUT, "deadline_exceeded"}, {ECANCELED, "canceled"},     {EIO, "internal"},
		{ENOMEM, "internal"},          {0, "internal"},                {ECONNRESET, "unavailable"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(hu_connect_code_for_errno(cases[i].err), cases[i].code);
}

static void test_code_status(void **state)
{
	static const struct {
		const char *code;
		int status;
	} cases[] = {
		{"invalid_argument", 400}, {"unauthenticated", 401}, {"permission_denied", 403},
		{"not_found", 404},        {"already_exists", 409},  {"resource_exhausted", 429},
		{"unavailable", 503},      {"deadline_exceeded", 504}, {"canceled", 499},
		{"unimplemented", 501},    {"internal", 500},        {"no_such_code", 500},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(hu_connect_http_status(cases[i].code), cases[i].status);
	assert_int_equal(hu_connect_http_status(NULL), 500);
}

/* ---- streams over a real evhttp server ---------------------------------------- */

enum scenario {
	SC_END_OK,       /* three messages, then {} */
	SC_END_ERROR,    /* one message, then an error */
	SC_VANISH,       /* the client closes mid-stream; the owner ends later */
	SC_VANISH_END_IN_GONE, /* ... and the owner ends inside on_gone */
	SC_SLOW_READER,  /* pause on a full buffer; end inside on_resume */
	SC_UNARY,        /* not a stream: a unary error and a bad unary request */
};

struct world {
	struct event_base *base;
	struct hu_http *http;
	enum scenario sc;
	struct hu_stream *stream;
	int gone, paused, resumed, ended, sent;
	int send_after_gone;
	int client_fd;      /* the client's end of the connection, when a test looks at it from the handler */
	int written_at_end; /* the whole reply was in client_fd when hu_stream_end returned (-1: not looked) */
};

static struct world *W; /* the handler's view of the test (handlers take only r) */

static void cb_pause(void *arg)
{
	((struct world *)arg)->paused++;
}

static void cb_resume(void *arg)
{
	struct world *w = arg;
	w->resumed++;
	if (w->sc == SC_SLOW_READER && !w->ended) {
		w->ended = 1;
		hu_stream_end(w->stream, NULL, NULL); /* from inside a callback */
	}
}

static void cb_gone(void *arg)
{
	struct world *w = arg;
	w->gone++;
	w->send_after_gone = hu_stream_send(w->stream, json_pack("{s:i}", "late", 1));
	if (w->sc == SC_VANISH_END_IN_GONE) {
		w->ended = 1;
		hu_stream_end(w->stream, NULL, NULL);
	}
}

/* The chunked reply's last bytes are waiting in the client's socket. */
static int reply_end_waiting(int fd)
{
	static char buf[1 << 16];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	return n >= 5 && !memcmp(buf + n - 5, "0\r\n\r\n", 5);
}

static void handle(struct hu_req *r)
{
	struct world *w = W;
	struct hu_stream_cbs cbs = {cb_pause, cb_resume, cb_gone, w};
	char blob[1024];

	if (w->sc == SC_UNARY) {
		json_t *msg;
		if (hu_connect_unary_request(r, &msg) == 0) { /* the body is "[1]": not reached */
			json_decref(msg);
			hu_connect_error(r, "internal", "accepted a non-object");
		}
		return;
	}
	w->stream = hu_stream_start(r, &cbs);
	assert_non_null(w->stream);
	switch (w->sc) {
	case SC_END_OK:
		for (int i = 0; i < 3; i++)
			assert_int_equal(hu_stream_send(w->stream, json_pack("{s:i}", "n", i)), 0);
		w->ended = 1;
		hu_stream_end(w->stream, NULL, NULL);
		if (w->client_fd >= 0)
			w->written_at_end = reply_end_waiting(w->client_fd);
		break;
	case SC_END_ERROR:
		assert_int_equal(hu_stream_send(w->stream, json_pack("{s:i}", "n", 0)), 0);
		w->ended = 1;
		hu_stream_end(w->stream, "not_found", "no such \"thing\"");
		break;
	case SC_VANISH:
	case SC_VANISH_END_IN_GONE:
		assert_int_equal(hu_stream_send(w->stream, json_pack("{s:i}", "n", 0)), 0);
		break;
	case SC_SLOW_READER: {
		/* Small kernel buffers on both ends, so that they cannot soak up
		 * what the daemon buffers and hide the backpressure. */
		int fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evhttp_request_get_connection(r->ev)));
		int small = 4096;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
		memset(blob, 'x', sizeof(blob) - 1);
		blob[sizeof(blob) - 1] = '\0';
		/* Nothing is written until the loop runs: the buffer fills at once. */
		for (int rc = 0; rc == 0 && w->sent < 100000; w->sent++)
			rc = hu_stream_send(w->stream, json_pack("{s:s}", "blob", blob));
		assert_int_equal(w->paused, 1);
		break;
	}
	default:
		break;
	}
}

static int connect_to(int port, int rcvbuf)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static int make_world(void **state, bool answers_first)
{
	struct world *w = calloc(1, sizeof(*w));
	hu_err err;

	hu_log_open(NULL, getenv("TEST_DEBUG") ? HU_LOG_DEBUG : HU_LOG_ERROR, &err);
	struct hu_http_settings set = {.max_body_bytes = 1 << 20, .idle_timeout_s = 60, .answers_first = answers_first};
	struct hu_http_hooks hooks = {.dispatch = handle};
	w->base = event_base_new();
	assert_int_equal(hu_http_new(w->base, &set, &hooks, w, &w->http, &err), 0);
	w->client_fd = -1;
	w->written_at_end = -1;
	W = w;
	*state = w;
	return 0;
}

static int setup(void **state)
{
	return make_world(state, false);
}

static int setup_answers_first(void **state)
{
	return make_world(state, true);
}

static int teardown(void **state)
{
	struct world *w = *state;
	hu_http_close(w->http);
	hu_http_free(w->http);
	event_base_free(w->base);
	free(w);
	W = NULL;
	return 0;
}

static int listen_port(struct world *w)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	hu_err err;
	assert_int_equal(hu_http_listen_fd(w->http, fd, &err), 0);
	return ntohs(sa.sin_port);
}

/* Run the loop and read what the server sends until `done` or the deadline. */
static size_t pump(struct world *w, int fd, char *buf, size_t cap, size_t have, int (*done)(struct world *, const char *, size_t),
		   int ms)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		event_base_loop(w->base, EVLOOP_NONBLOCK);
		if (fd >= 0) {
			ssize_t n = read(fd, buf + have, cap - 1 - have);
			if (n > 0)
				have += (size_t)n;
			buf[have] = '\0';
		}
		if (done(w, buf, have))
			return have;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			fail_msg("timed out");
		usleep(200);
	}
}

static int chunked_done(struct world *w, const char *buf, size_t n)
{
	return n >= 5 && !memcmp(buf + n - 5, "0\r\n\r\n", 5);
}

static int got_first_message(struct world *w, const char *buf, size_t n)
{
	return memmem(buf, n, "{\"n\":0}", 7) != NULL; /* envelopes hold NUL bytes */
}

static int got_gone(struct world *w, const char *buf, size_t n)
{
	return w->gone > 0;
}

static void send_request(int fd, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "POST /test.Service/Call HTTP/1.1\r\nHost: t\r\nContent-Type: application/connect+json\r\n"
			 "Content-Length: %zu\r\n\r\n",
			 len);
	assert_int_equal(write(fd, head, (size_t)n), n);
	assert_int_equal(write(fd, body, len), (ssize_t)len);
}

/* Decode a chunked body into envelopes; returns the number of message
 * envelopes and copies the end-stream JSON into end. */
static int envelopes(const char *resp, size_t n, char *end, size_t end_cap)
{
	const char *p = strstr(resp, "\r\n\r\n");
	static uint8_t body[1 << 22];
	size_t blen = 0, at = 0;
	int count = 0;

	assert_non_null(p);
	p += 4;
	for (;;) {
		unsigned long len = strtoul(p, NULL, 16);
		p = strstr(p, "\r\n") + 2;
		if (len == 0)
			break;
		assert_true(blen + len <= sizeof(body));
		memcpy(body + blen, p, len);
		blen += len;
		p += len + 2;
	}
	end[0] = '\0';
	while (at + 5 <= blen) {
		uint32_t len = (uint32_t)body[at + 1] << 24 | (uint32_t)body[at + 2] << 16 | (uint32_t)body[at + 3] << 8 |
			       body[at + 4];
		if (body[at] == HU_CONNECT_FLAG_END) {
			snprintf(end, end_cap, "%.*s", (int)len, (const char *)body + at + 5);
		} else {
			assert_int_equal(body[at], 0);
			count++;
		}
		at += 5 + len;
	}
	assert_int_equal(at, blen);
	return count;
}

static void run_to_end(struct world *w, int expect_messages, const char *expect_end)
{
	static char resp[1 << 22];
	uint8_t req[64];
	char end[256];
	int fd = connect_to(listen_port(w), 0);
	size_t len = envelope(req, 0, "{}", 2), n;

	send_request(fd, (const char *)req, len);
	n = pump(w, fd, resp, sizeof(resp), 0, chunked_done, 5000);
	assert_non_null(strstr(resp, "HTTP/1.1 200"));
	assert_non_null(strstr(resp, "Content-Type: application/connect+json"));
	assert_int_equal(envelopes(resp, n, end, sizeof(end)), expect_messages);
	assert_string_equal(end, expect_end);
	close(fd);
}

static void test_stream_end_ok(void **state)
{
	struct world *w = *state;
	w->sc = SC_END_OK;
	run_to_end(w, 3, "{}");
	assert_int_equal(w->gone, 0);
}

/* answers_first (server.h): the messages, the end and the chunked
 * terminator are in the client's socket when hu_stream_end returns, not
 * once the loop has polled again. */
static void test_stream_written_at_once(void **state)
{
	static char resp[1 << 16];
	struct world *w = *state;
	uint8_t req[64];
	char end[64];
	int fd = connect_to(listen_port(w), 0);
	size_t len = envelope(req, 0, "{}", 2), n;

	w->sc = SC_END_OK;
	w->client_fd = fd;
	send_request(fd, (const char *)req, len);
	n = pump(w, fd, resp, sizeof(resp), 0, chunked_done, 5000);
	assert_int_equal(w->written_at_end, 1);
	assert_int_equal(envelopes(resp, n, end, sizeof(end)), 3);
	assert_string_equal(end, "{}");
	close(fd);
}

static void test_stream_end_error(void **state)
{
	struct world *w = *state;
	w->sc = SC_END_ERROR;
	run_to_end(w, 1, "{\"error\":{\"code\":\"not_found\",\"message\":\"no such \\\"thing\\\"\"}}");
}

static void vanish(struct world *w)
{
	char buf[4096];
	uint8_t req[64];
	int fd = connect_to(listen_port(w), 0);
	size_t len = envelope(req, 0, "{}", 2);

	send_request(fd, (const char *)req, len);
	/* Wait for the first message, then hang up. */
	pump(w, fd, buf, sizeof(buf), 0, got_first_message, 5000);
	close(fd);
	pump(w, -1, buf, sizeof(buf), 0, got_gone, 5000);
	assert_int_equal(w->gone, 1);
	assert_int_equal(w->send_after_gone, -1);
	/* More loop turns do not call on_gone again. */
	for (int i = 0; i < 20; i++)
		event_base_loop(w->base, EVLOOP_NONBLOCK);
	assert_int_equal(w->gone, 1);
}

static void test_stream_client_vanishes(void **state)
{
	struct world *w = *state;
	w->sc = SC_VANISH;
	vanish(w);
	/* Sending still fails, and ending frees everything (ASan checks). */
	assert_int_equal(hu_stream_send(w->stream, json_pack("{s:i}", "n", 1)), -1);
	hu_stream_end(w->stream, NULL, NULL);
}

static void test_stream_end_inside_on_gone(void **state)
{
	struct world *w = *state;
	w->sc = SC_VANISH_END_IN_GONE;
	vanish(w);
	assert_int_equal(w->ended, 1);
}

static int resumed_and_done(struct world *w, const char *buf, size_t n)
{
	return w->resumed > 0 && chunked_done(w, buf, n);
}

static void test_stream_slow_reader(void **state)
{
	struct world *w = *state;
	static char resp[1 << 22];
	uint8_t req[64];
	char end[64];
	int fd = connect_to(listen_port(w), 4096);
	size_t len = envelope(req, 0, "{}", 2), n;

	w->sc = SC_SLOW_READER;
	send_request(fd, (const char *)req, len);
	/* Not reading: the handler ran and paused; nothing resumes it. */
	for (int i = 0; i < 50; i++)
		event_base_loop(w->base, EVLOOP_NONBLOCK);
	assert_int_equal(w->paused, 1);
	assert_int_equal(w->resumed, 0);
	/* Reading drains the buffer: on_resume ends the stream from inside. */
	n = pump(w, fd, resp, sizeof(resp), 0, resumed_and_done, 10000);
	assert_int_equal(w->resumed, 1);
	assert_int_equal(envelopes(resp, n, end, sizeof(end)), w->sent);
	assert_string_equal(end, "{}");
	close(fd);
}

static int has_body(struct world *w, const char *buf, size_t n)
{
	const char *p = strstr(buf, "\r\n\r\n");
	return p && strchr(p, '}');
}

static void test_unary_errors(void **state)
{
	struct world *w = *state;
	char resp[4096];
	int fd = connect_to(listen_port(w), 0);

	w->sc = SC_UNARY;
	send_request(fd, "[1]", 3);
	pump(w, fd, resp, sizeof(resp), 0, has_body, 5000);
	assert_non_null(strstr(resp, "HTTP/1.1 400"));
	assert_non_null(strstr(resp, "Content-Type: application/json"));
	assert_non_null(strstr(resp, "{\"code\":\"invalid_argument\",\"message\":\"request message: not a JSON object\"}"));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_envelope_good),
		cmocka_unit_test(test_envelope_bad),
		cmocka_unit_test(test_errno_codes),
		cmocka_unit_test(test_code_status),
		cmocka_unit_test_setup_teardown(test_stream_end_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_written_at_once, setup_answers_first, teardown),
		cmocka_unit_test_setup_teardown(test_stream_end_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_client_vanishes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_end_inside_on_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_slow_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unary_errors, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
