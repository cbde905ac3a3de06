// fuzz-sources: src/daemon/http/server.c src/daemon/http/reply.c src/daemon/http/request.c src/daemon/http/route.c src/daemon/http/connect.c src/daemon/http/takeover.c src/daemon/http/inconn.c src/daemon/http/body.c src/daemon/http/framing.c src/daemon/common/log.c src/daemon/common/json.c src/daemon/dispatch.c src/daemon/core/config.c tests/fuzz/daemon_fakes.c src/daemon/envd/signed_url.c src/daemon/envd/signature.c src/runtime/netaddr.c src/runtime/netaddr6.c src/runtime/netdomain.c src/runtime/cgroup_io_parse.c
/*
 * libFuzzer driver for the daemon's HTTP front door: the input is the raw
 * bytes a client sends on one TCP connection. They go to the REAL server
 * (evhttp with the HTTP layer's limits, and the daemon's dispatcher with
 * its planes, authentication and route matching) on a loopback socket, and
 * through handlers that use every request and reply helper and Connect
 * streams. The route tables are this driver's own (in place of routes.c);
 * the registry and store are fakes (daemon_fakes.h).
 *
 * Per input: connect, write everything, shut down the write side, and run
 * the loop until the server closes the connection or 50 ms pass. The
 * server, its listener and the event base live across inputs (speed).
 */
#include <arpa/inet.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/core/config.h"
#include "daemon/core/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/http/connect.h"
#include "daemon/http/server.h"
#include "daemon/routes.h"
#include "daemon_fakes.h"

#define INPUT_BUDGET_MS 50

static struct {
	struct event_base *base;
	struct hu_daemon d;
	int port;
} S;

/* ---- handlers: each exercises a different part of the API ---------------- */

static void create_sandbox(struct hu_req *r)
{
	json_t *body;
	if (hu_req_json(r, &body) < 0)
		return;
	hu_reply_header(r, "X-Next-Token", hu_req_query(r, "nextToken") ? hu_req_query(r, "nextToken") : "none");
	json_object_set_new(body, "team", json_string(r->principal));
	hu_reply_json(r, 201, body);
}

static void list_sandboxes(struct hu_req *r)
{
	const char *meta = hu_req_query(r, "metadata");
	hu_reply_json(r, 200, json_pack("[{s:s}]", "metadata", meta ? meta : ""));
}

static void kill_sandbox(struct hu_req *r)
{
	hu_err err;
	if (!strcmp(r->param, "missing")) {
		hu_err_set(&err, ENOENT, "sandbox %s", r->param);
		hu_reply_err(r, &err);
		return;
	}
	hu_reply_empty(r, 204);
}

static void set_timeout(struct hu_req *r)
{
	size_t len;
	hu_req_body(r, &len);
	hu_reply_empty(r, len ? 200 : 201);
}

static void process_list(struct hu_req *r)
{
	json_t *msg;
	if (hu_connect_unary_request(r, &msg) < 0)
		return;
	json_decref(msg);
	hu_connect_reply(r, json_pack("{s:[]}", "processes"));
}

/* The owner of an open-ended stream: it learns the stream after start. */
struct watcher {
	struct hu_stream *s;
};

static void on_gone_end(void *arg)
{
	struct watcher *w = arg;
	hu_stream_end(w->s, NULL, NULL);
	free(w);
}

/* Start: a complete stream. Connect: one that stays open until the client
 * goes away, and ends inside on_gone. */
static void process_stream(struct hu_req *r)
{
	size_t len;
	const uint8_t *body = hu_req_body(r, &len);
	json_t *msg;
	hu_err err;
	struct watcher *w = NULL;
	struct hu_stream_cbs cbs = {0};
	struct hu_stream *s;

	if (hu_connect_parse_envelope(body, len, &msg, &err) < 0) {
		hu_connect_error_err(r, &err);
		return;
	}
	json_decref(msg);
	if (!strcmp(r->path, "/process.Process/Connect")) {
		if (!(w = calloc(1, sizeof(*w))))
			abort();
		cbs.on_gone = on_gone_end;
		cbs.arg = w;
	}
	s = hu_stream_start(r, &cbs);
	if (!s) {
		free(w);
		return;
	}
	hu_stream_send(s, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", 1));
	if (w) {
		w->s = s;
		hu_stream_send(s, json_pack("{s:{s:{}}}", "event", "keepalive"));
		return;
	}
	hu_stream_send(s, json_pack("{s:{s:{s:s}}}", "event", "data", "stdout", "aGkK"));
	hu_stream_end(s, NULL, NULL);
}

static void get_file(struct hu_req *r)
{
	const char *path = hu_req_query(r, "path");
	if (!path) {
		hu_reply_error(r, 400, "path is required (user %s)", r->user ? r->user : "-");
		return;
	}
	hu_reply_empty(r, 200);
}

/* The route tables the dispatcher uses (routes.h), in place of routes.c. */
const struct hu_route hu_control_routes[] = {
	{EVHTTP_REQ_POST, "/v2/sandboxes", HU_AUTH_API_KEY, create_sandbox},
	{EVHTTP_REQ_GET, "/v2/sandboxes", HU_AUTH_API_KEY, list_sandboxes},
	{EVHTTP_REQ_DELETE, "/sandboxes/{id}", HU_AUTH_API_KEY, kill_sandbox},
	{EVHTTP_REQ_POST, "/sandboxes/{id}/timeout", HU_AUTH_API_KEY, set_timeout},
};
const size_t hu_n_control_routes = sizeof(hu_control_routes) / sizeof(hu_control_routes[0]);
const struct hu_route hu_data_routes[] = {
	{EVHTTP_REQ_POST, "/process.Process/List", 0, process_list},
	{EVHTTP_REQ_POST, "/process.Process/Start", 0, process_stream},
	{EVHTTP_REQ_POST, "/process.Process/Connect", 0, process_stream},
	{EVHTTP_REQ_GET, "/files", 0, get_file},
};
const size_t hu_n_data_routes = sizeof(hu_data_routes) / sizeof(hu_data_routes[0]);

int hu_routes_check(hu_err *err)
{
	for (size_t i = 0; i < hu_n_control_routes; i++)
		if (!hu_route_pattern_valid(hu_control_routes[i].pattern))
			return hu_err_set(err, EINVAL, "bad route %s", hu_control_routes[i].pattern);
	return 0;
}

/* ---- the per-input client ------------------------------------------------- */

struct client {
	int fd;
	const uint8_t *data;
	size_t len, off;
	struct event *rd, *wr, *timer;
};

static void client_write(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;
	if (c->off < c->len) {
		ssize_t n = write(fd, c->data + c->off, c->len - c->off);
		if (n > 0)
			c->off += (size_t)n;
		else if (n < 0 && errno != EAGAIN)
			c->off = c->len; /* the server hung up: stop writing */
	}
	if (c->off >= c->len) {
		shutdown(fd, SHUT_WR);
		event_del(c->wr);
	}
}

static void client_read(evutil_socket_t fd, short what, void *arg)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n == 0 || (n < 0 && errno != EAGAIN))
		event_base_loopbreak(S.base);
}

static void budget_over(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopbreak(S.base);
}

static void setup_server(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t salen = sizeof(sa);
	hu_err err;
	int fd;

	/* As in hutch serve: a peer that hung up costs an EPIPE, not the process. */
	signal(SIGPIPE, SIG_IGN);
	hu_log_open(NULL, HU_LOG_ERROR, &err);
	hu_config_defaults(&S.d.cfg);
	S.d.cfg.max_body_bytes = 1 << 20;
	S.d.cfg.idle_timeout_s = 1;
	S.base = event_base_new();
	S.d.base = S.base;
	S.d.reg = fake_registry();
	S.d.store = fake_store();
	struct hu_http_settings set = {.max_body_bytes = S.d.cfg.max_body_bytes, .idle_timeout_s = S.d.cfg.idle_timeout_s};
	struct hu_http_hooks hooks = {.dispatch = hu_dispatch, .streams_body = hu_dispatch_streams_body, .stream_opened = hu_dispatch_stream_opened, .stream_closed = hu_dispatch_stream_closed};
	if (!S.base || hu_routes_check(&err) < 0 || hu_http_new(S.base, &set, &hooks, &S.d, &S.d.http, &err) < 0)
		abort();

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &salen) < 0 || hu_http_listen_fd(S.d.http, fd, &err) < 0)
		abort();
	S.port = ntohs(sa.sin_port);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct timeval budget = {.tv_sec = 0, .tv_usec = INPUT_BUDGET_MS * 1000};
	struct client c = {.data = data, .len = size};
	struct linger no_linger = {.l_onoff = 1, .l_linger = 0};

	if (!S.base)
		setup_server();
	sa.sin_port = htons((uint16_t)S.port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* Non-blocking: libFuzzer's SIGALRM must not interrupt a connect. Close
	 * with a reset: hundreds of thousands of inputs must not leave as many
	 * TIME_WAIT sockets and exhaust the loopback ports. */
	c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c.fd < 0 || setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &no_linger, sizeof(no_linger)) < 0 ||
	    (connect(c.fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS)) {
		perror("fuzz_http: client socket");
		abort();
	}
	c.wr = event_new(S.base, c.fd, EV_WRITE | EV_PERSIST, client_write, &c);
	c.rd = event_new(S.base, c.fd, EV_READ | EV_PERSIST, client_read, &c);
	c.timer = evtimer_new(S.base, budget_over, NULL);
	event_add(c.wr, NULL);
	event_add(c.rd, NULL);
	evtimer_add(c.timer, &budget);
	event_base_dispatch(S.base);
	event_free(c.wr);
	event_free(c.rd);
	event_free(c.timer);
	close(c.fd);
	return 0;
}
