#include "daemon/sandboxes/initconn.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/cleanup.h"

/* The largest frame init may send: reading stops once this much is buffered,
 * so one connection holds at most one maximal frame in memory. */
#define FRAME_MAX (HU_PROTO_HEADER_SIZE + HU_PROTO_MAX_PAYLOAD)

struct hu_initconn {
	struct bufferevent *bev;
	struct event *kick; /* runs the frames left buffered by a pause, on resume */
	hu_initconn_frame_cb on_frame;
	hu_initconn_close_cb on_close;
	void *arg;
	uint32_t next_id;
	/* The owner may call hu_initconn_free() from inside its callbacks: the
	 * free is then only recorded, and done once the outermost callback of
	 * this connection has returned. */
	int in_callback;
	bool freed;
	bool closed; /* the close callback has run (or is running) */
	bool paused;
};

static void destroy(struct hu_initconn *c)
{
	if (c->kick)
		event_free(c->kick);
	if (c->bev)
		bufferevent_free(c->bev);
	free(c);
}

/* The end of a callback into the owner: true if c must not be touched
 * any more (it was freed by the owner, and now by us). */
static bool leave_callback(struct hu_initconn *c)
{
	c->in_callback--;
	if (c->freed && c->in_callback == 0) {
		destroy(c);
		return true;
	}
	return c->freed;
}

/* Stop all I/O and tell the owner, exactly once. */
static void close_with(struct hu_initconn *c, const hu_err *why)
{
	if (c->closed || c->freed)
		return;
	c->closed = true;
	bufferevent_disable(c->bev, EV_READ | EV_WRITE);
	event_del(c->kick);
	c->in_callback++;
	c->on_close(c, why, c->arg);
	leave_callback(c);
}

/* Hand every complete frame in the input buffer to the owner, until the
 * buffer runs dry, the owner pauses or frees, or the peer breaks protocol. */
static void deliver_frames(struct hu_initconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	uint8_t h[HU_PROTO_HEADER_SIZE];
	struct hu_frame_hdr hdr;
	hu_err err;

	c->in_callback++;
	while (!c->paused && !c->closed && !c->freed && evbuffer_get_length(in) >= sizeof(h)) {
		evbuffer_copyout(in, h, sizeof(h));
		if (hu_frame_parse_hdr(h, sizeof(h), &hdr, &err) < 0) {
			hu_err_prefix(&err, "protocol error from init");
			close_with(c, &err);
			break;
		}
		size_t total = sizeof(h) + hdr.len;
		if (evbuffer_get_length(in) < total)
			break;
		const uint8_t *frame = evbuffer_pullup(in, (ssize_t)total);
		if (!frame) {
			hu_err_set(&err, ENOMEM, "frame of %u bytes from init", hdr.len);
			close_with(c, &err);
			break;
		}
		if (hu_payload_validate(frame + sizeof(h), hdr.len, &err) < 0) {
			hu_err_prefix(&err, "protocol error from init");
			close_with(c, &err);
			break;
		}
		c->on_frame(c, &hdr, frame + sizeof(h), c->arg);
		/* The payload stays valid during the callback only: drop it now
		 * (the connection is still ours: in_callback defers any free). */
		evbuffer_drain(in, total);
	}
	leave_callback(c);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	deliver_frames(arg);
}

static void kick_cb(evutil_socket_t fd, short what, void *arg)
{
	deliver_frames(arg);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct hu_initconn *c = arg;
	hu_err err;

	if (what & BEV_EVENT_EOF) {
		bool partial = evbuffer_get_length(bufferevent_get_input(bev)) > 0;
		hu_err_set(&err, ECONNRESET, partial ? "init closed the connection mid-frame"
						     : "init closed the connection");
	} else if (what & BEV_EVENT_ERROR) {
		int e = EVUTIL_SOCKET_ERROR();
		hu_err_set(&err, e ? e : EIO, "%s init connection", (what & BEV_EVENT_READING) ? "read from" : "write to");
	} else {
		return; /* no timeouts are set; nothing else is an ending */
	}
	close_with(c, &err);
}

/* A nonblocking connect: on a unix socket it completes (or fails) at once,
 * so the loop never waits on it. */
int hu_init_connect_unix(const char *sock_path, int *out, hu_err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (strlen(sock_path) >= sizeof(sa.sun_path))
		return hu_err_set(err, ENAMETOOLONG, "init socket path %s", sock_path);
	strcpy(sa.sun_path, sock_path);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hu_err_sys(err, "socket");
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			/* init's listen backlog is full: it is stuck or flooded. */
			return hu_err_set(err, EAGAIN, "init at %s is not accepting connections", sock_path);
		return hu_err_sys(err, "connect to init at %s", sock_path);
	}
	*out = hu_take_fd(&fd);
	return 0;
}

int hu_initconn_open(struct event_base *base, const char *sock_path, hu_initconn_frame_cb on_frame,
		     hu_initconn_close_cb on_close, void *arg, struct hu_initconn **out, hu_err *err)
{
	int fd = -1;

	if (hu_init_connect_unix(sock_path, &fd, err) < 0)
		return -1;
	struct hu_initconn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return hu_err_set(err, ENOMEM, "init connection");
	}
	c->on_frame = on_frame;
	c->on_close = on_close;
	c->arg = arg;
	c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev)
		close(fd);
	c->kick = event_new(base, -1, 0, kick_cb, c);
	if (!c->bev || !c->kick) {
		destroy(c);
		return hu_err_set(err, ENOMEM, "init connection");
	}
	bufferevent_setcb(c->bev, read_cb, NULL, event_cb, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, FRAME_MAX);
	if (bufferevent_enable(c->bev, EV_READ | EV_WRITE) < 0) {
		destroy(c);
		return hu_err_set(err, EIO, "watch init connection");
	}
	*out = c;
	return 0;
}

int hu_initconn_send(struct hu_initconn *c, const struct hu_buf *b, hu_err *err)
{
	if (b->oom)
		return hu_err_set(err, ENOMEM, "encode request to init");
	if (c->closed || c->freed)
		return hu_err_set(err, EPIPE, "init connection is closed");
	if (bufferevent_write(c->bev, b->data, b->len) < 0)
		return hu_err_set(err, ENOMEM, "queue %zu bytes to init", b->len);
	return 0;
}

void hu_initconn_pause(struct hu_initconn *c)
{
	if (c->paused || c->closed || c->freed)
		return;
	c->paused = true;
	bufferevent_disable(c->bev, EV_READ);
	event_del(c->kick);
}

void hu_initconn_resume(struct hu_initconn *c)
{
	if (!c->paused || c->closed || c->freed)
		return;
	c->paused = false;
	bufferevent_enable(c->bev, EV_READ);
	/* Frames already buffered raise no read event: deliver them from the
	 * loop (not from here: the caller may be inside its own callback). */
	if (evbuffer_get_length(bufferevent_get_input(c->bev)) >= HU_PROTO_HEADER_SIZE)
		event_active(c->kick, EV_TIMEOUT, 0);
}

uint32_t hu_initconn_next_id(struct hu_initconn *c)
{
	/* 0 is never used, so "no request" can be spelled 0 by owners. */
	if (++c->next_id == 0)
		c->next_id = 1;
	return c->next_id;
}

void hu_initconn_free(struct hu_initconn *c)
{
	if (!c || c->freed)
		return;
	c->freed = true;
	if (c->in_callback > 0) {
		/* Quiet until the callback unwinds and destroys it. */
		bufferevent_disable(c->bev, EV_READ | EV_WRITE);
		event_del(c->kick);
		return;
	}
	destroy(c);
}
