/* Sized bodies moved socket -> pipe -> socket (splice.h). */
#include "daemon/http/splice.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The pipe's size: each step moves up to this much. 1 MiB is the kernel's
 * default pipe-max-size; a smaller pipe is kept when it is refused. */
#define PIPE_WANT (1u << 20)

struct hu_splice {
	int from, to;
	int pipe_r, pipe_w;
	size_t cap;          /* the pipe's size */
	size_t in_pipe;      /* bytes in the pipe, not yet written */
	uint64_t left;       /* bytes still to read from the source */
	uint64_t moved;      /* bytes written to the destination */
	struct evbuffer *queued;
	struct event *rev, *wev;
	struct timeval write_tv;
	bool has_write_tv;
	struct hu_splice_cbs cbs;
};

static void fail(struct hu_splice *sp, bool from_source, const char *why)
{
	event_del(sp->rev);
	event_del(sp->wev);
	sp->cbs.on_fail(sp->cbs.arg, from_source, why); /* last: it may free sp */
}

/* A failed write: a peer that left is the common case, named as such. */
static const char *write_error(int e)
{
	return e == EPIPE || e == ECONNRESET ? "the client connection closed" : strerror(e);
}

/* Move what can be moved now; wait for whichever side blocks. */
static void pump(struct hu_splice *sp)
{
	for (;;) {
		bool progressed = false;

		while (sp->queued && evbuffer_get_length(sp->queued)) {
			/* a socket bufferevent's output is frozen at its start
			 * except while it writes itself: likewise here */
			evbuffer_unfreeze(sp->queued, 1);
			int n = evbuffer_write(sp->queued, sp->to);
			int e = errno;
			evbuffer_freeze(sp->queued, 1);
			errno = e;
			if (n > 0) {
				progressed = true;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			fail(sp, false, n == 0 ? "the client connection closed" : write_error(errno));
			return;
		}
		if (sp->queued && evbuffer_get_length(sp->queued))
			goto wait; /* the body waits behind what was owed first */
		if (sp->in_pipe) {
			ssize_t n = splice(sp->pipe_r, NULL, sp->to, NULL, sp->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				sp->in_pipe -= (size_t)n;
				sp->moved += (uint64_t)n;
				progressed = true;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				fail(sp, false, write_error(errno));
				return;
			}
		}
		if (sp->left && sp->in_pipe < sp->cap) {
			size_t want = sp->cap - sp->in_pipe;
			if (want > sp->left)
				want = (size_t)sp->left;
			ssize_t n = splice(sp->from, NULL, sp->pipe_w, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				sp->in_pipe += (size_t)n;
				sp->left -= (uint64_t)n;
				progressed = true;
			} else if (n == 0) {
				fail(sp, true, "the server closed the connection before the end of its response");
				return;
			} else if (errno != EAGAIN && errno != EINTR) {
				fail(sp, true, strerror(errno));
				return;
			}
		}
		if (!sp->left && !sp->in_pipe) {
			event_del(sp->rev);
			event_del(sp->wev);
			sp->cbs.on_done(sp->cbs.arg); /* last: it may free sp */
			return;
		}
		if (!progressed)
			break;
	}
wait:
	/* Exactly one side is waited for. Bytes in the pipe that did not go
	 * out mean the destination is full; the source is read again once
	 * they have (a pipe can be full of partly used pages below `cap`, so
	 * waiting for the source then could spin). An empty pipe means the
	 * source had nothing. */
	if (sp->in_pipe || (sp->queued && evbuffer_get_length(sp->queued))) {
		event_del(sp->rev);
		event_add(sp->wev, sp->has_write_tv ? &sp->write_tv : NULL);
	} else {
		event_del(sp->wev);
		event_add(sp->rev, NULL);
	}
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	pump(arg);
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
	struct hu_splice *sp = arg;
	if (what & EV_TIMEOUT) {
		fail(sp, false, "the client took nothing for the write timeout");
		return;
	}
	pump(sp);
}

struct hu_splice *hu_splice_start(struct event_base *base, int from, int to, uint64_t len, struct evbuffer *queued,
				  const struct timeval *write_timeout, const struct hu_splice_cbs *cbs, hu_err *err)
{
	struct hu_splice *sp = calloc(1, sizeof(*sp));
	int fds[2];

	if (!sp) {
		hu_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
		hu_err_sys(err, "pipe");
		free(sp);
		return NULL;
	}
	sp->pipe_r = fds[0];
	sp->pipe_w = fds[1];
	fcntl(sp->pipe_w, F_SETPIPE_SZ, (int)PIPE_WANT); /* refused: the default size serves */
	int cap = fcntl(sp->pipe_w, F_GETPIPE_SZ);
	sp->cap = cap > 0 ? (size_t)cap : 65536;
	sp->from = from;
	sp->to = to;
	sp->left = len;
	sp->queued = queued;
	sp->cbs = *cbs;
	if (write_timeout) {
		sp->write_tv = *write_timeout;
		sp->has_write_tv = true;
	}
	sp->rev = event_new(base, from, EV_READ | EV_PERSIST, on_readable, sp);
	sp->wev = event_new(base, to, EV_WRITE | EV_PERSIST, on_writable, sp);
	if (!sp->rev || !sp->wev) {
		hu_splice_free(sp);
		hu_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	/* the first step waits for an event: the caller is in the middle of
	 * its own, and the callbacks may free what it still holds */
	event_add(sp->wev, sp->has_write_tv ? &sp->write_tv : NULL);
	return sp;
}

uint64_t hu_splice_moved(const struct hu_splice *sp)
{
	return sp->moved;
}

void hu_splice_free(struct hu_splice *sp)
{
	if (!sp)
		return;
	if (sp->rev)
		event_free(sp->rev);
	if (sp->wev)
		event_free(sp->wev);
	close(sp->pipe_r);
	close(sp->pipe_w);
	free(sp);
}
