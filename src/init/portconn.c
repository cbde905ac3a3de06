#include "init/portconn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/fdpass.h"

void hu_port_connect(struct hu_conn *c, const struct hu_request *req)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(req->port)};
	struct hu_buf b = {0};
	hu_err err;
	int one = 1;

	/* The descriptor rides on the reply's bytes: with other bytes queued
	 * ahead of it, the client would read it with the wrong frame. */
	if (hu_conn_queued(c) > 0) {
		hu_err_set(&err, EBUSY, "PORT_CONNECT on a connection with replies in flight");
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		hu_err_sys(&err, "socket");
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Non-blocking: a server whose backlog is full would otherwise hold
	 * init (every sandbox process's parent) in connect() for minutes. */
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 && errno != EINPROGRESS) {
		hu_err_sys(&err, "connect to 127.0.0.1:%u", (unsigned)req->port);
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	size_t f = hu_frame_begin(&b, HU_MSG_PORT_SOCKET, req->id);
	hu_frame_end(&b, f);
	/* 12 bytes into an empty socket buffer: all or nothing in practice; a
	 * short or failed send ends the connection rather than desync it. */
	if (b.oom || hu_send_fds(c->watch.fd, b.data, b.len, &fd, 1) < 0) {
		hu_err_sys(&err, "pass the socket");
		hu_buf_free(&b);
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	hu_buf_free(&b);
}
