/*
 * Port ingress pieces on a real event loop: the request head, the byte
 * relay (both modes, half-close, backpressure) over socket pairs, and the
 * dial through a real hutch-init run as an ordinary process, to TCP
 * listeners this test opens on 127.0.0.1. Every loop run is bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unit/testutil.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/queue.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "daemon/ingress/dial.h"
#include "daemon/ingress/head.h"
#include "daemon/http/relay.h"
#include "daemon/http/response.h"
#include "util/fileutil.h"

/* ---- the head ------------------------------------------------------------ */

static char *build(struct evkeyvalq *h, const char *method, const char *target, size_t body, bool *upgrade, int *rc)
{
	struct evbuffer *out = evbuffer_new();
	struct hu_head_in in = {.method = method, .target = target, .headers = h, .body_length = (int64_t)body,
				.body_expected = !strcmp(method, "POST"), .client_addr = "10.1.2.3", .proto = "http"};
	hu_err err;
	*rc = hu_head_build(&in, out, upgrade, &err);
	size_t n = evbuffer_get_length(out);
	char *s = calloc(1, n + 1);
	evbuffer_remove(out, s, n);
	evbuffer_free(out);
	return s;
}

static void test_head_drops_hop_by_hop_and_sets_forwarded(void **state)
{
	struct evkeyvalq h;
	bool up;
	int rc;
	TAILQ_INIT(&h);
	evhttp_add_header(&h, "Host", "8000-abc.localhost");
	evhttp_add_header(&h, "Connection", "keep-alive, X-Secret-Hop");
	evhttp_add_header(&h, "X-Secret-Hop", "drop me");
	evhttp_add_header(&h, "Keep-Alive", "timeout=5");
	evhttp_add_header(&h, "Transfer-Encoding", "chunked");
	evhttp_add_header(&h, "X-Forwarded-For", "6.6.6.6");
	evhttp_add_header(&h, "E2B-Traffic-Access-Token", "secret");
	evhttp_add_header(&h, "X-Kept", "yes");
	char *s = build(&h, "POST", "/p?q=1", 5, &up, &rc);
	assert_int_equal(rc, 0);
	assert_false(up);
	assert_non_null(strstr(s, "POST /p?q=1 HTTP/1.1\r\n"));
	assert_non_null(strstr(s, "Host: 8000-abc.localhost\r\n"));
	assert_non_null(strstr(s, "X-Kept: yes\r\n"));
	assert_non_null(strstr(s, "Connection: close\r\n"));
	assert_non_null(strstr(s, "Content-Length: 5\r\n"));
	assert_non_null(strstr(s, "X-Forwarded-For: 10.1.2.3\r\n"));
	assert_non_null(strstr(s, "X-Forwarded-Host: 8000-abc.localhost\r\n"));
	assert_null(strstr(s, "6.6.6.6"));
	assert_null(strstr(s, "secret"));
	assert_null(strstr(s, "drop me"));
	assert_null(strstr(s, "Keep-Alive"));
	assert_null(strstr(s, "chunked"));
	assert_string_equal(s + strlen(s) - 4, "\r\n\r\n");
	free(s);
	evhttp_clear_headers(&h);
}

static void test_head_keeps_upgrade(void **state)
{
	struct evkeyvalq h;
	bool up;
	int rc;
	TAILQ_INIT(&h);
	evhttp_add_header(&h, "Connection", "Upgrade");
	evhttp_add_header(&h, "Upgrade", "websocket");
	evhttp_add_header(&h, "Sec-WebSocket-Key", "k");
	char *s = build(&h, "GET", "/ws", 0, &up, &rc);
	assert_int_equal(rc, 0);
	assert_true(up);
	assert_non_null(strstr(s, "Connection: Upgrade\r\nUpgrade: websocket\r\n"));
	assert_non_null(strstr(s, "Sec-WebSocket-Key: k\r\n"));
	assert_null(strstr(s, "Content-Length"));
	free(s);
	evhttp_clear_headers(&h);
	/* Upgrade without Connection: upgrade is no upgrade */
	TAILQ_INIT(&h);
	evhttp_add_header(&h, "Upgrade", "websocket");
	s = build(&h, "GET", "/ws", 0, &up, &rc);
	assert_false(up);
	assert_null(strstr(s, "websocket"));
	free(s);
	evhttp_clear_headers(&h);
}

static void test_head_masks_the_host(void **state)
{
	struct evkeyvalq h;
	struct evbuffer *out = evbuffer_new();
	bool up;
	hu_err err;
	TAILQ_INIT(&h);
	evhttp_add_header(&h, "Host", "8000-abc.localhost");
	struct hu_head_in in = {.method = "GET", .target = "/", .headers = &h, .client_addr = "10.1.2.3", .proto = "http",
				.host = "localhost:8000"};
	assert_int_equal(hu_head_build(&in, out, &up, &err), 0);
	size_t n = evbuffer_get_length(out);
	char *s = calloc(1, n + 1);
	evbuffer_remove(out, s, n);
	assert_non_null(strstr(s, "Host: localhost:8000\r\n"));
	assert_null(strstr(s, "\nHost: 8000-abc.localhost\r\n")); /* the client's Host is not sent */
	assert_non_null(strstr(s, "X-Forwarded-Host: 8000-abc.localhost\r\n")); /* the original stays visible */
	free(s);
	evbuffer_free(out);
	evhttp_clear_headers(&h);
}

static void test_head_refuses_what_would_split(void **state)
{
	struct evkeyvalq h;
	bool up;
	int rc;
	TAILQ_INIT(&h);
	free(build(&h, "GET", "/a b", 0, &up, &rc));
	assert_int_equal(rc, -1);
	free(build(&h, "GET", "/a\r\nX: y", 0, &up, &rc));
	assert_int_equal(rc, -1);
	evhttp_add_header(&h, "X-Bad", "ok");
	/* evhttp refuses CR/LF in values it is given; inject one behind its back */
	TAILQ_FIRST(&h)->value[1] = '\n';
	free(build(&h, "GET", "/", 0, &up, &rc));
	assert_int_equal(rc, -1);
	evhttp_clear_headers(&h);
}

/* ---- the response head ---------------------------------------------------- */

static int response(const char *text, char **out_text, size_t *left, int *status)
{
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	hu_err err;
	evbuffer_add(in, text, strlen(text));
	int rc = hu_response_head(in, out, status, &err);
	size_t n = evbuffer_get_length(out);
	*out_text = calloc(1, n + 1);
	evbuffer_remove(out, *out_text, n);
	*left = evbuffer_get_length(in);
	evbuffer_free(in);
	evbuffer_free(out);
	return rc;
}

static void test_response_head_closes_plain_responses(void **state)
{
	char *out;
	size_t left;
	int status = 0;
	assert_int_equal(response("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n"
				  "Content-Length: 4\r\n\r\nbody",
				  &out, &left, &status),
			 1);
	assert_int_equal(status, 200);
	assert_string_equal(out, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\n");
	assert_int_equal(left, 4); /* the body is relayed as it is */
	free(out);
	/* interim heads pass, the final one is rewritten */
	assert_int_equal(response("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.0 404 Not Found\r\n\r\n", &out,
				  &left, &status),
			 1);
	assert_int_equal(status, 404);
	assert_string_equal(out, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.0 404 Not Found\r\nConnection: close\r\n\r\n");
	free(out);
}

/* Whether the server keeps its connection after the response (forwarding
 * between nodes reuses it only then). */
static int kept(const char *text)
{
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	bool keep = true;
	int status;
	hu_err err;
	evbuffer_add(in, text, strlen(text));
	int rc = hu_response_head_kept(in, out, &status, &keep, &err);
	evbuffer_free(in);
	evbuffer_free(out);
	return rc == 1 ? keep : -1;
}

static void test_response_head_tells_a_kept_connection(void **state)
{
	assert_int_equal(kept("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 1);
	assert_int_equal(kept("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n"), 1);
	assert_int_equal(kept("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"), 0);
	assert_int_equal(kept("HTTP/1.1 200 OK\r\nconnection:Keep-Alive, CLOSE\r\n\r\n"), 0);
	assert_int_equal(kept("HTTP/1.1 200 OK\r\nConnection: closed\r\n\r\n"), 1); /* a token, not a prefix */
	assert_int_equal(kept("HTTP/1.1 200 OK\r\nX-Connection: close\r\n\r\n"), 1);
	assert_int_equal(kept("HTTP/1.0 200 OK\r\n\r\n"), 0);
	/* an interim head's Connection is not the final answer's */
	assert_int_equal(kept("HTTP/1.1 103 Early Hints\r\nConnection: close\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"), 1);
}

static void test_response_head_passes_a_switch(void **state)
{
	char *out;
	size_t left;
	int status = 0;
	const char *h = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
	char buf[256];
	snprintf(buf, sizeof(buf), "%s\x81\x02hi", h);
	assert_int_equal(response(buf, &out, &left, &status), 1);
	assert_int_equal(status, 101);
	assert_string_equal(out, h);
	assert_int_equal(left, 4);
	free(out);
}

static void test_response_head_bounds_and_garbage(void **state)
{
	char *out;
	size_t left;
	int status;
	assert_int_equal(response("HTTP/1.1 200 OK\r\nX-A: b\r\n", &out, &left, &status), 0); /* not complete yet */
	free(out);
	assert_int_equal(response("SSH-2.0-OpenSSH\r\n\r\n", &out, &left, &status), -1);
	free(out);
	assert_int_equal(response("HTTP/1.1 2x0 OK\r\n\r\n", &out, &left, &status), -1);
	free(out);
	/* a bare CR or a NUL inside a line is refused, and nothing of it is passed on */
	assert_int_equal(response("HTTP/1.1 200 OK\r\nX-A: b\rX-Evil: 1\r\n\r\n", &out, &left, &status), -1);
	assert_string_equal(out, "");
	free(out);
	struct evbuffer *in = evbuffer_new(), *o = evbuffer_new();
	hu_err err;
	evbuffer_add(in, "HTTP/1.1 200 OK\r\nX-A: \0b\r\n\r\n", 28);
	assert_int_equal(hu_response_head(in, o, &status, &err), -1);
	assert_int_equal(evbuffer_get_length(o), 0);
	evbuffer_free(in);
	evbuffer_free(o);
	/* bare LF line ends are normalised */
	assert_int_equal(response("HTTP/1.1 200 OK\nX-A: b\r\n\r\n", &out, &left, &status), 1);
	assert_string_equal(out, "HTTP/1.1 200 OK\r\nX-A: b\r\nConnection: close\r\n\r\n");
	free(out);
	size_t n = HU_RESPONSE_HEAD_MAX + 100;
	char *endless = malloc(n + 1);
	memcpy(endless, "HTTP/1.1 200 OK\r\n", 17);
	memset(endless + 17, 'a', n - 17);
	endless[n] = '\0';
	assert_int_equal(response(endless, &out, &left, &status), -1);
	free(out);
	free(endless);
}

/* ---- the relay ----------------------------------------------------------- */

struct relay_case {
	struct event_base *base;
	int client_far, server_far; /* the test's ends */
	struct bufferevent *client, *server;
	struct hu_relay *rl;
	int done;
	const char *why;
};

static void on_done(struct hu_relay *rl, const char *why, void *arg)
{
	struct relay_case *c = arg;
	c->done = 1;
	c->why = why;
	event_base_loopbreak(c->base);
}

static void relay_setup(struct relay_case *c, bool two_way)
{
	int a[2], b[2];
	memset(c, 0, sizeof(*c));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b), 0);
	c->base = event_base_new();
	c->client = bufferevent_socket_new(c->base, a[0], BEV_OPT_CLOSE_ON_FREE);
	c->server = bufferevent_socket_new(c->base, b[0], BEV_OPT_CLOSE_ON_FREE);
	c->client_far = a[1];
	c->server_far = b[1];
	c->rl = hu_relay_start(c->client, c->server, two_way, on_done, c);
	assert_non_null(c->rl);
}

static void relay_teardown(struct relay_case *c)
{
	hu_relay_free(c->rl);
	bufferevent_free(c->client);
	bufferevent_free(c->server);
	close(c->client_far);
	close(c->server_far);
	event_base_free(c->base);
}

static void spin(struct relay_case *c, int ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	event_base_loopexit(c->base, &tv);
	event_base_dispatch(c->base);
}

/* Read what is there (non-blocking) into buf; returns the count. */
static size_t drain(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	ssize_t n;
	while (got < cap && (n = read(fd, buf + got, cap - got)) > 0)
		got += (size_t)n;
	return got;
}

static void test_relay_two_way_and_half_close(void **state)
{
	struct relay_case c;
	char buf[64];
	relay_setup(&c, true);
	assert_int_equal(write(c.client_far, "ping", 4), 4);
	assert_int_equal(write(c.server_far, "pong", 4), 4);
	spin(&c, 100);
	assert_int_equal(drain(c.server_far, buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "ping", 4);
	assert_int_equal(drain(c.client_far, buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "pong", 4);
	/* the client's end of stream reaches the server as a half-close ... */
	shutdown(c.client_far, SHUT_WR);
	spin(&c, 100);
	assert_int_equal(read(c.server_far, buf, sizeof(buf)), 0);
	assert_false(c.done);
	/* ... and the server can still answer, then end it all */
	assert_int_equal(write(c.server_far, "last", 4), 4);
	shutdown(c.server_far, SHUT_WR);
	spin(&c, 1000);
	assert_true(c.done);
	assert_null(c.why);
	assert_int_equal(drain(c.client_far, buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "last", 4);
	relay_teardown(&c);
}

static void test_relay_response_only_ignores_pipelined_bytes(void **state)
{
	struct relay_case c;
	char buf[64];
	relay_setup(&c, false);
	assert_int_equal(write(c.client_far, "GET /next HTTP/1.1\r\n\r\n", 22), 22);
	assert_int_equal(write(c.server_far, "HTTP/1.1 200 OK\r\n\r\nbody", 23), 23);
	close(c.server_far);
	c.server_far = -1;
	spin(&c, 1000);
	assert_true(c.done);
	assert_int_equal(drain(c.client_far, buf, sizeof(buf)), 23);
	relay_teardown(&c);
}

static void test_relay_backpressure_bounds_buffers(void **state)
{
	struct relay_case c;
	static char chunk[65536];
	size_t written = 0;
	relay_setup(&c, true);
	/* the server reads nothing: the relay must stop reading the client */
	for (int round = 0; round < 200; round++) {
		ssize_t n;
		while ((n = write(c.client_far, chunk, sizeof(chunk))) > 0)
			written += (size_t)n;
		spin(&c, 5);
	}
	size_t held = evbuffer_get_length(bufferevent_get_output(c.server)) +
		      evbuffer_get_length(bufferevent_get_input(c.client));
	assert_true(written > 2 * HU_RELAY_HIGH); /* the kernel buffers filled as well */
	assert_true(written < 64u << 20);          /* and the writer was stopped */
	assert_true(held <= 2 * HU_RELAY_HIGH);
	/* reading on the far side lets everything through, intact in length */
	static char sink[1 << 20];
	size_t got = 0;
	for (int i = 0; i < 2000 && got < written; i++) {
		got += drain(c.server_far, sink, sizeof(sink));
		spin(&c, 2);
	}
	assert_int_equal(got, written);
	relay_teardown(&c);
}

/* ---- the dial, through a real hutch-init --------------------------------- */

struct init_harness {
	char dir[PATH_MAX];
	char sock[PATH_MAX];
	pid_t pid;
};

static void start_init(struct init_harness *h)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(h->dir, sizeof(h->dir), "/tmp/hutch-ingress-test.XXXXXX");
	assert_non_null(mkdtemp(h->dir));
	snprintf(h->sock, sizeof(h->sock), "%s/init.sock", h->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", h->sock);
	int ls = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 16), 0);
	const char *path = hu_test_init_path();
	h->pid = fork();
	assert_true(h->pid >= 0);
	if (h->pid == 0) {
		dup2(ls, 3);
		execl(path, "hutch-init", "--allow-local-peers", (char *)NULL);
		_exit(127);
	}
	close(ls);
}

static void stop_init(struct init_harness *h)
{
	int status;
	hu_err err;
	assert_int_equal(waitpid(h->pid, &status, WNOHANG), 0); /* it survived */
	kill(h->pid, SIGTERM);
	waitpid(h->pid, &status, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	hu_rm_rf(h->dir, &err);
}

/* A TCP listener on 127.0.0.1 (port chosen by the kernel). */
static int tcp_listener(uint16_t *port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	*port = ntohs(sin.sin_port);
	return fd;
}

struct dial_result {
	struct event_base *base;
	int called;
	int fd;
	hu_err err;
};

static void on_dial(int fd, const hu_err *err, void *arg)
{
	struct dial_result *r = arg;
	r->called++;
	r->fd = fd;
	if (err)
		r->err = *err;
	event_base_loopbreak(r->base);
}

/* pidfd >= 0: the direct way (into that process's network namespace, here
 * the test's own), init the fallback */
static void dial_with(struct init_harness *h, int pidfd, uint16_t port, unsigned timeout_ms, struct dial_result *r)
{
	struct hu_dial *d;
	hu_err err;
	struct timeval limit = {.tv_sec = 10};
	int host_netns = pidfd >= 0 ? open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC) : -1;
	struct hu_dial_target to = {.pidfd = pidfd, .host_netns = host_netns, .init_sock = h->sock};
	memset(r, 0, sizeof(*r));
	r->fd = -2;
	r->base = event_base_new();
	/* init may still be starting: its socket is listening already */
	assert_int_equal(hu_dial_port(r->base, &to, port, timeout_ms, on_dial, r, &d, &err), 0);
	if (host_netns >= 0)
		close(host_netns);
	assert_int_equal(r->called, 0); /* never from inside hu_dial_port */
	event_base_loopexit(r->base, &limit);
	event_base_dispatch(r->base);
	assert_int_equal(r->called, 1);
	event_base_free(r->base);
}

static void dial(struct init_harness *h, uint16_t port, unsigned timeout_ms, struct dial_result *r)
{
	dial_with(h, -1, port, timeout_ms, r);
}

static int pidfd_of(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(fd >= 0);
	return fd;
}

static void test_dial_connects_and_passes_the_socket(void **state)
{
	struct init_harness h;
	struct dial_result r;
	uint16_t port;
	char buf[8];
	int ls = tcp_listener(&port);
	start_init(&h);
	dial(&h, port, 5000, &r);
	assert_true(r.fd >= 0);
	int peer = accept(ls, NULL, NULL);
	assert_true(peer >= 0);
	assert_int_equal(write(r.fd, "hi", 2), 2);
	assert_int_equal(read(peer, buf, sizeof(buf)), 2);
	assert_memory_equal(buf, "hi", 2);
	close(peer);
	close(r.fd);
	close(ls);
	stop_init(&h);
}

static void test_dial_refused_names_the_port(void **state)
{
	struct init_harness h;
	struct dial_result r;
	uint16_t port;
	close(tcp_listener(&port)); /* a port nobody listens on now */
	start_init(&h);
	dial(&h, port, 5000, &r);
	assert_int_equal(r.fd, -1);
	assert_int_equal(r.err.code, ECONNREFUSED);
	char want[32];
	snprintf(want, sizeof(want), "port %u", (unsigned)port);
	assert_non_null(strstr(r.err.msg, want));
	stop_init(&h);
}

/* The daemon's own socket in the target's namespace: connects, and a closed
 * port is the same ECONNREFUSED naming it, from the loop. */
static void test_dial_direct_connects_and_refuses(void **state)
{
	struct init_harness h = {.pid = 0};
	struct dial_result r;
	uint16_t port, closed;
	char buf[8];
	snprintf(h.sock, sizeof(h.sock), "/nonexistent/init.sock"); /* no init: the direct way only */
	int ls = tcp_listener(&port);
	close(tcp_listener(&closed));
	int pidfd = pidfd_of(getpid());
	dial_with(&h, pidfd, port, 5000, &r);
	if (r.fd == -1 && r.err.code == ENOENT) { /* not root: no setns, and no init to fall back on */
		close(pidfd);
		close(ls);
		skip();
	}
	assert_true(r.fd >= 0);
	int peer = accept(ls, NULL, NULL);
	assert_true(peer >= 0);
	assert_int_equal(write(r.fd, "hi", 2), 2);
	assert_int_equal(read(peer, buf, sizeof(buf)), 2);
	assert_memory_equal(buf, "hi", 2);
	close(peer);
	close(r.fd);
	dial_with(&h, pidfd, closed, 5000, &r);
	assert_int_equal(r.fd, -1);
	assert_int_equal(r.err.code, ECONNREFUSED);
	char want[32];
	snprintf(want, sizeof(want), "port %u", (unsigned)closed);
	assert_non_null(strstr(r.err.msg, want));
	dial_with(&h, pidfd, 0, 5000, &r);
	assert_int_equal(r.err.code, EINVAL);
	close(pidfd);
	close(ls);
}

/* A pidfd whose process is gone cannot be entered: init dials instead. */
static void test_dial_direct_falls_back_to_init(void **state)
{
	struct init_harness h;
	struct dial_result r;
	uint16_t port;
	int status;
	pid_t gone = fork();
	assert_true(gone >= 0);
	if (gone == 0)
		_exit(0);
	int pidfd = pidfd_of(gone);
	waitpid(gone, &status, 0);
	int ls = tcp_listener(&port);
	start_init(&h);
	dial_with(&h, pidfd, port, 5000, &r);
	assert_true(r.fd >= 0);
	int peer = accept(ls, NULL, NULL);
	assert_true(peer >= 0);
	close(peer);
	close(r.fd);
	close(pidfd);
	close(ls);
	stop_init(&h);
}

static void test_dial_port_zero_is_refused_by_init(void **state)
{
	struct init_harness h;
	struct dial_result r;
	start_init(&h);
	dial(&h, 0, 5000, &r);
	assert_int_equal(r.fd, -1);
	assert_int_equal(r.err.code, EINVAL);
	stop_init(&h);
}

static void test_dial_times_out_on_a_silent_init(void **state)
{
	char dir[] = "/tmp/hutch-ingress-test.XXXXXX", sock[PATH_MAX];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct dial_result r;
	hu_err err;
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/init.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	int ls = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 4), 0); /* accepts (in the backlog), never answers */
	struct init_harness h = {.pid = 0};
	snprintf(h.sock, sizeof(h.sock), "%s", sock);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	dial(&h, 80, 300, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(r.fd, -1);
	assert_int_equal(r.err.code, ETIMEDOUT);
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(ms >= 250 && ms < 3000);
	close(ls);
	hu_rm_rf(dir, &err);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_drops_hop_by_hop_and_sets_forwarded),
		cmocka_unit_test(test_head_keeps_upgrade),
		cmocka_unit_test(test_head_masks_the_host),
		cmocka_unit_test(test_head_refuses_what_would_split),
		cmocka_unit_test(test_response_head_closes_plain_responses),
		cmocka_unit_test(test_response_head_tells_a_kept_connection),
		cmocka_unit_test(test_response_head_passes_a_switch),
		cmocka_unit_test(test_response_head_bounds_and_garbage),
		cmocka_unit_test(test_relay_two_way_and_half_close),
		cmocka_unit_test(test_relay_response_only_ignores_pipelined_bytes),
		cmocka_unit_test(test_relay_backpressure_bounds_buffers),
		cmocka_unit_test(test_dial_connects_and_passes_the_socket),
		cmocka_unit_test(test_dial_refused_names_the_port),
		cmocka_unit_test(test_dial_port_zero_is_refused_by_init),
		cmocka_unit_test(test_dial_direct_connects_and_refuses),
		cmocka_unit_test(test_dial_direct_falls_back_to_init),
		cmocka_unit_test(test_dial_times_out_on_a_silent_init),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
