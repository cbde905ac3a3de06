#include "init/conn.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "init/dispatch.h"
#include "init/fileops.h"
#include "init/proc.h"
#include "init/watch.h"
#include "util/cleanup.h"

/* Frames handled per readiness event, so one chatty client cannot starve the
 * others (epoll is level triggered: the rest is picked up next round). */
#define FRAMES_PER_EVENT 32
/* Compact the output queue once this much sent data sits at its head. */
#define OUT_COMPACT_AT (1u << 20)

static struct hu_watch listener;
static bool allow_local;
static struct hu_conn *conns;
static size_t nconns;

static void conn_event(struct hu_watch *w, uint32_t events);

struct hu_conn *hu_conn_first(void)
{
	return conns;
}

size_t hu_conn_queued(const struct hu_conn *c)
{
	return c->out.len - c->out_off;
}

static void conn_free(void *p)
{
	struct hu_conn *c = p;
	free(c->payload);
	hu_buf_free(&c->out);
	free(c);
}

/* Close a connection: its processes keep running, its transfers end. */
static void conn_close(struct hu_conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	hu_loop_del(&c->watch);
	close(c->watch.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	nconns--;
	hu_proc_forget_conn(c);
	hu_fileops_forget_conn(c);
	hu_dirwatch_forget_conn(c);
	hu_loop_defer_free(c, conn_free);
}

void hu_conn_update_interest(struct hu_conn *c)
{
	if (c->dead)
		return;
	uint32_t ev = 0;
	if (!hu_conn_over_bound(c) && !c->stdin_wait)
		ev |= EPOLLIN;
	if (hu_conn_queued(c) > 0)
		ev |= EPOLLOUT;
	hu_loop_mod(&c->watch, ev);
}

void hu_conn_send(struct hu_conn *c, const struct hu_buf *frames)
{
	if (c->dead)
		return;
	if (frames->len == 0)
		return;
	if (frames->oom) {
		/* The reply could not be built; the client would wait forever for
		 * it, so the connection ends here. */
		conn_close(c);
		return;
	}
	if (c->out.len + frames->len > c->out.cap) {
		size_t cap = c->out.cap ? c->out.cap : 4096;
		while (cap < c->out.len + frames->len)
			cap *= 2;
		uint8_t *d = realloc(c->out.data, cap);
		if (!d) {
			conn_close(c);
			return;
		}
		c->out.data = d;
		c->out.cap = cap;
	}
	memcpy(c->out.data + c->out.len, frames->data, frames->len);
	c->out.len += frames->len;
	hu_conn_update_interest(c);
}

void hu_conn_send_empty(struct hu_conn *c, uint8_t type, uint32_t id)
{
	struct hu_buf b = {0};
	size_t f = hu_frame_begin(&b, type, id);
	hu_frame_end(&b, f);
	hu_conn_send(c, &b);
	hu_buf_free(&b);
}

void hu_conn_send_pid(struct hu_conn *c, uint8_t type, uint32_t id, uint32_t pid)
{
	struct hu_buf b = {0};
	size_t f = hu_frame_begin(&b, type, id);
	hu_put_u32(&b, HU_F_PID, pid);
	hu_frame_end(&b, f);
	hu_conn_send(c, &b);
	hu_buf_free(&b);
}

void hu_conn_send_error(struct hu_conn *c, uint32_t id, const hu_err *err)
{
	struct hu_buf b = {0};
	size_t f = hu_frame_begin(&b, HU_MSG_ERROR, id);
	hu_put_u32(&b, HU_F_ERRNO, (uint32_t)(err->code > 0 ? err->code : EIO));
	hu_put_str(&b, HU_F_MESSAGE, err->msg);
	hu_frame_end(&b, f);
	hu_conn_send(c, &b);
	hu_buf_free(&b);
}

/* Write what the socket takes. -1 when the peer is gone. */
static int conn_flush(struct hu_conn *c)
{
	bool was_over = hu_conn_over_bound(c);

	while (hu_conn_queued(c) > 0) {
		ssize_t n = send(c->watch.fd, c->out.data + c->out_off, hu_conn_queued(c), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return -1;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out.len) {
		c->out_off = 0;
		c->out.len = 0;
	} else if (c->out_off >= OUT_COMPACT_AT) {
		memmove(c->out.data, c->out.data + c->out_off, hu_conn_queued(c));
		c->out.len -= c->out_off;
		c->out_off = 0;
	}
	if (was_over && !hu_conn_over_bound(c)) {
		/* Room again: resume the processes and transfers it held back. */
		hu_proc_conn_drained(c);
		hu_fileops_conn_drained(c);
		hu_dirwatch_conn_drained(c);
	}
	hu_conn_update_interest(c);
	return 0;
}

/* Read from the socket into the frame being assembled: 1 = a whole frame is
 * ready, 0 = need more (EAGAIN), -1 = closed or protocol error. */
/* Read into buf until `want` bytes are there: 1 = complete, 0 = it would
 * block (come back later), -1 = EOF or an error. */
static int read_upto(int fd, uint8_t *buf, size_t want, size_t *got)
{
	while (*got < want) {
		ssize_t n = read(fd, buf + *got, want - *got);
		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		*got += (size_t)n;
	}
	return 1;
}

static int conn_read_frame(struct hu_conn *c)
{
	hu_err err;
	int r;

	if (c->hdr_got < HU_PROTO_HEADER_SIZE) {
		r = read_upto(c->watch.fd, c->hdr_bytes, HU_PROTO_HEADER_SIZE, &c->hdr_got);
		if (r <= 0)
			return r;
		if (hu_frame_parse_hdr(c->hdr_bytes, c->hdr_got, &c->hdr, &err) < 0)
			return -1; /* bad version, reserved bits or size: only this connection ends */
		c->payload_got = 0;
		c->payload = malloc(c->hdr.len ? c->hdr.len : 1);
		if (!c->payload)
			return -1;
	}
	return read_upto(c->watch.fd, c->payload, c->hdr.len, &c->payload_got);
}

static void conn_read(struct hu_conn *c)
{
	for (int i = 0; i < FRAMES_PER_EVENT && !c->dead; i++) {
		if (hu_conn_over_bound(c) || c->stdin_wait)
			return; /* update_interest already turned EPOLLIN off */
		int r = conn_read_frame(c);
		if (r == 0)
			return;
		if (r < 0) {
			conn_close(c);
			return;
		}
		uint8_t *payload = c->payload;
		struct hu_frame_hdr hdr = c->hdr;
		c->payload = NULL;
		c->hdr_got = 0;
		int d = hu_dispatch(c, &hdr, payload);
		free(payload);
		if (d < 0) {
			conn_close(c);
			return;
		}
	}
}

static void conn_event(struct hu_watch *w, uint32_t events)
{
	struct hu_conn *c = HU_CONTAINER_OF(w, struct hu_conn, watch);

	if (events & EPOLLOUT) {
		if (conn_flush(c) < 0) {
			conn_close(c);
			return;
		}
	}
	if (events & EPOLLIN)
		conn_read(c);
	else if (events & (EPOLLHUP | EPOLLERR))
		conn_close(c);
}

/* Only the daemon outside the sandbox may talk to init: a peer in another
 * PID namespace (an ancestor one) has a pid that reads as 0 from here. */
static bool peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.pid == 0 || allow_local;
}

/* Serve `fd` (non-blocking, close-on-exec) as a client; it is closed when
 * refused. */
static int conn_add(int fd, hu_err *err)
{
	if (nconns >= HU_CONN_MAX || !peer_allowed(fd)) {
		close(fd);
		return hu_err_set(err, EPERM, "connection refused");
	}
	struct hu_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return hu_err_set(err, ENOMEM, "connection");
	}
	if (hu_loop_add(&c->watch, fd, EPOLLIN, conn_event, err) < 0) {
		close(fd);
		free(c);
		return -1;
	}
	c->next = conns;
	if (conns)
		conns->prev = c;
	conns = c;
	nconns++;
	return 0;
}

static void accept_event(struct hu_watch *w, uint32_t events)
{
	hu_err ignore;

	for (;;) {
		int fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return; /* EAGAIN, or a transient error (EMFILE...): retried on the next event */
		conn_add(fd, &ignore);
	}
}

int hu_conn_adopt(int fd, hu_err *err)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		hu_err_sys(err, "first connection fd %d", fd);
		close(fd);
		return -1;
	}
	return conn_add(fd, err);
}

int hu_conn_listen(int listen_fd, bool allow_local_peers, hu_err *err)
{
	allow_local = allow_local_peers;
	int fl = fcntl(listen_fd, F_GETFL);
	if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return hu_err_sys(err, "make listen fd %d non-blocking", listen_fd);
	return hu_loop_add(&listener, listen_fd, EPOLLIN, accept_event, err);
}

void hu_conn_shutdown(void)
{
	while (conns)
		conn_close(conns);
	if (listener.registered) {
		hu_loop_del(&listener);
		close(listener.fd);
	}
}
