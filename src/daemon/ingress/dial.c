#include "daemon/ingress/dial.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/sandboxes/initconn.h"
#include "proto/initproto.h"
#include "util/cleanup.h"
#include "util/fdpass.h"

#define REPLY_MAX 1024 /* an ERROR frame with its message; PORT_SOCKET is 12 bytes */

struct hu_dial {
	struct event_base *base;
	struct event *ev;
	int unix_fd;  /* to init, until the socket arrives */
	int tcp_fd;   /* the passed socket, while it connects */
	uint16_t port;
	struct timespec t0;
	unsigned timeout_ms;
	int early_errno; /* a connect that failed at once: reported from the loop */
	uint8_t buf[REPLY_MAX];
	size_t got;
	hu_dial_cb cb;
	void *arg;
};

static void dial_free(struct hu_dial *d)
{
	if (d->ev)
		event_free(d->ev);
	if (d->unix_fd >= 0)
		close(d->unix_fd);
	if (d->tcp_fd >= 0)
		close(d->tcp_fd);
	free(d);
}

static void finish(struct hu_dial *d, int fd, const hu_err *err)
{
	hu_dial_cb cb = d->cb;
	void *arg = d->arg;
	dial_free(d);
	cb(fd, err, arg);
}

/* "port N[: what]: strerror(code)" */
static void fail(struct hu_dial *d, int code, const char *what)
{
	hu_err err;
	hu_err_set(&err, code, "port %u%s%s", (unsigned)d->port, what ? ": " : "", what ? what : "");
	finish(d, -1, &err);
}

static struct timeval remaining(const struct hu_dial *d)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long long spent = (now.tv_sec - d->t0.tv_sec) * 1000LL + (now.tv_nsec - d->t0.tv_nsec) / 1000000;
	long long left = (long long)d->timeout_ms - spent;
	if (left < 1)
		left = 1;
	return (struct timeval){.tv_sec = left / 1000, .tv_usec = (left % 1000) * 1000};
}

static void on_connected(evutil_socket_t fd, short what, void *arg)
{
	struct hu_dial *d = arg;
	int e = 0;
	socklen_t len = sizeof(e);

	if (d->early_errno) {
		fail(d, d->early_errno, NULL);
		return;
	}
	if (what & EV_TIMEOUT) {
		fail(d, ETIMEDOUT, NULL);
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		e = errno;
	if (e) {
		fail(d, e, NULL);
		return;
	}
	int out = d->tcp_fd;
	d->tcp_fd = -1;
	finish(d, out, NULL);
}

/* The reply: PORT_SOCKET with the descriptor, or ERROR with init's errno. */
static void on_reply(evutil_socket_t fd, short what, void *arg)
{
	struct hu_dial *d = arg;
	struct hu_frame_hdr hdr;
	hu_err err;
	int fds[1];
	size_t nfds = 0;

	if (what & EV_TIMEOUT) {
		fail(d, ETIMEDOUT, "the sandbox's init did not answer");
		return;
	}
	long n = hu_recv_fds(fd, d->buf + d->got, sizeof(d->buf) - d->got, fds, 1, &nfds);
	if (nfds == 1) {
		if (d->tcp_fd >= 0) /* a second descriptor: never keep it */
			close(fds[0]);
		else
			d->tcp_fd = fds[0];
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		fail(d, ECONNRESET, "the sandbox's init closed the connection");
		return;
	}
	d->got += (size_t)n;
	if (d->got < HU_PROTO_HEADER_SIZE)
		return;
	if (hu_frame_parse_hdr(d->buf, d->got, &hdr, &err) < 0 || hdr.len > sizeof(d->buf) - HU_PROTO_HEADER_SIZE) {
		fail(d, EPROTO, "a malformed reply from init");
		return;
	}
	if (d->got < HU_PROTO_HEADER_SIZE + hdr.len)
		return;
	if (hdr.type == HU_MSG_ERROR) {
		struct hu_field_iter it;
		struct hu_field f;
		uint32_t code = EIO;
		hu_fields_init(&it, d->buf + HU_PROTO_HEADER_SIZE, hdr.len);
		while (hu_fields_next(&it, &f, &err) > 0) {
			if (f.tag == HU_F_ERRNO)
				hu_field_u32(&f, &code, &err);
		}
		fail(d, code ? (int)code : EIO, NULL);
		return;
	}
	if (hdr.type != HU_MSG_PORT_SOCKET || d->tcp_fd < 0) {
		fail(d, EPROTO, "init answered without a socket");
		return;
	}
	/* Now wait for the TCP connect to finish, in the time left. */
	close(d->unix_fd);
	d->unix_fd = -1;
	event_free(d->ev);
	struct timeval left = remaining(d);
	d->ev = event_new(d->base, d->tcp_fd, EV_WRITE, on_connected, d);
	if (!d->ev || event_add(d->ev, &left) < 0) {
		fail(d, ENOMEM, "watch the connection");
		return;
	}
}

/* A TCP socket of the sandbox's network namespace: the loop's thread enters
 * it through init's pidfd for the one socket() call and leaves at once (the
 * socket stays bound to it). -1 with errno when it cannot be entered. */
static int socket_in_sandbox(int pidfd, int host_netns)
{
	if (setns(pidfd, CLONE_NEWNET) < 0)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int e = errno;
	if (setns(host_netns, CLONE_NEWNET) < 0) {
		/* cannot happen with a valid fd; carrying on would put the
		 * daemon's own sockets into the sandbox's namespace */
		perror("hutch: return to the host network namespace");
		abort();
	}
	errno = e;
	return fd;
}

/* The same connect as init's (init/portconn.c), made by the daemon itself:
 * no unix connection, no round trip through init, no passed descriptor. */
static int dial_direct(struct hu_dial *d, int pidfd, int host_netns, hu_err *err)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(d->port)};
	int one = 1;

	d->tcp_fd = socket_in_sandbox(pidfd, host_netns);
	if (d->tcp_fd < 0)
		return hu_err_sys(err, "a socket in the sandbox's network namespace");
	setsockopt(d->tcp_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (d->port == 0)
		d->early_errno = EINVAL; /* as init answers: no such port */
	else if (connect(d->tcp_fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 && errno != EINPROGRESS)
		d->early_errno = errno; /* ECONNREFUSED, mostly: a quick 502 */
	struct timeval tv = {.tv_sec = d->timeout_ms / 1000, .tv_usec = (d->timeout_ms % 1000) * 1000};
	if (d->early_errno)
		tv = (struct timeval){0};
	d->ev = event_new(d->base, d->early_errno ? -1 : d->tcp_fd, d->early_errno ? 0 : EV_WRITE, on_connected, d);
	if (!d->ev || event_add(d->ev, &tv) < 0)
		return hu_err_set(err, ENOMEM, "watch the connection");
	return 0;
}

static struct hu_dial *dial_new(struct event_base *base, uint16_t port, unsigned timeout_ms, hu_dial_cb cb, void *arg)
{
	struct hu_dial *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->base = base;
	d->unix_fd = -1;
	d->tcp_fd = -1;
	d->port = port;
	d->timeout_ms = timeout_ms;
	d->cb = cb;
	d->arg = arg;
	clock_gettime(CLOCK_MONOTONIC, &d->t0);
	return d;
}

int hu_dial_port(struct event_base *base, const struct hu_dial_target *to, uint16_t port, unsigned timeout_ms,
		 hu_dial_cb cb, void *arg, struct hu_dial **out, hu_err *err)
{
	struct hu_buf b = {0};
	_cleanup_close_ int fd = -1;

	if (to->pidfd >= 0 && to->host_netns >= 0) {
		struct hu_dial *d = dial_new(base, port, timeout_ms, cb, arg);
		if (!d)
			return hu_err_set(err, ENOMEM, "dial");
		if (dial_direct(d, to->pidfd, to->host_netns, err) == 0) {
			*out = d;
			return 0;
		}
		dial_free(d);
		if (err->code == ENOMEM)
			return -1;
		hu_err_clear(err); /* init gone or the namespace not enterable: ask init */
	}
	const char *init_sock = to->init_sock;
	if (hu_init_connect_unix(init_sock, &fd, err) < 0)
		return -1;
	size_t f = hu_frame_begin(&b, HU_MSG_PORT_CONNECT, 1);
	hu_put_u16(&b, HU_F_PORT, port);
	if (hu_frame_end(&b, f) < 0) {
		hu_buf_free(&b);
		return hu_err_set(err, ENOMEM, "encode PORT_CONNECT");
	}
	/* a fresh socket's buffer takes 18 bytes at once */
	ssize_t n = send(fd, b.data, b.len, MSG_NOSIGNAL | MSG_DONTWAIT);
	size_t len = b.len;
	hu_buf_free(&b);
	if (n < 0 || (size_t)n != len)
		return hu_err_sys(err, "send PORT_CONNECT to init");

	struct hu_dial *d = dial_new(base, port, timeout_ms, cb, arg);
	if (!d)
		return hu_err_set(err, ENOMEM, "dial");
	d->unix_fd = hu_take_fd(&fd);
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	d->ev = event_new(base, d->unix_fd, EV_READ | EV_PERSIST, on_reply, d);
	if (!d->ev || event_add(d->ev, &tv) < 0) {
		dial_free(d);
		return hu_err_set(err, ENOMEM, "watch the init connection");
	}
	*out = d;
	return 0;
}

void hu_dial_cancel(struct hu_dial *d)
{
	if (d)
		dial_free(d);
}
