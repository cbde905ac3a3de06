#include "daemon/http/relay.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdlib.h>
#include <sys/socket.h>

struct hu_relay {
	struct bufferevent *client, *server;
	bool two_way;
	bool client_eof, server_eof; /* that side sent its end of stream */
	bool done;
	uint64_t to_server, to_client;
	struct event *kick; /* ends the relay from the loop, not from inside a callback chain */
	const char *why;
	hu_relay_done_cb cb;
	void *arg;
};

static void end(struct hu_relay *rl, const char *why)
{
	if (rl->done)
		return;
	rl->done = true;
	rl->why = why;
	bufferevent_disable(rl->client, EV_READ | EV_WRITE);
	bufferevent_disable(rl->server, EV_READ | EV_WRITE);
	event_active(rl->kick, EV_TIMEOUT, 0);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
	struct hu_relay *rl = arg;
	rl->cb(rl, rl->why, rl->arg);
}

/* Move what `from` has read to `to`, and stop reading `from` while `to`
 * has too much unsent. */
static void pump(struct hu_relay *rl, struct bufferevent *from, struct bufferevent *to, uint64_t *count)
{
	struct evbuffer *in = bufferevent_get_input(from), *out = bufferevent_get_output(to);
	size_t n = evbuffer_get_length(in);

	if (n) {
		*count += n;
		evbuffer_add_buffer(out, in);
	}
	if (evbuffer_get_length(out) >= HU_RELAY_HIGH)
		bufferevent_disable(from, EV_READ);
}

static int fd_of(struct bufferevent *b)
{
	return (int)bufferevent_getfd(b);
}

/* `to`'s output is empty and its peer's stream ended: pass the end on. */
static void maybe_finish(struct hu_relay *rl)
{
	if (rl->server_eof && evbuffer_get_length(bufferevent_get_output(rl->client)) == 0)
		end(rl, NULL);
	else if (rl->client_eof && rl->two_way && evbuffer_get_length(bufferevent_get_output(rl->server)) == 0)
		shutdown(fd_of(rl->server), SHUT_WR);
}

static void client_read(struct bufferevent *b, void *arg)
{
	struct hu_relay *rl = arg;
	if (rl->two_way)
		pump(rl, b, rl->server, &rl->to_server);
	else
		bufferevent_disable(b, EV_READ); /* a pipelined request: left for nobody */
}

static void server_read(struct bufferevent *b, void *arg)
{
	struct hu_relay *rl = arg;
	pump(rl, b, rl->client, &rl->to_client);
}

/* The output of `b` drained to the low watermark: read its source again. */
static void client_write(struct bufferevent *b, void *arg)
{
	struct hu_relay *rl = arg;
	if (!rl->server_eof)
		bufferevent_enable(rl->server, EV_READ);
	maybe_finish(rl);
}

static void server_write(struct bufferevent *b, void *arg)
{
	struct hu_relay *rl = arg;
	if (rl->two_way && !rl->client_eof)
		bufferevent_enable(rl->client, EV_READ);
	maybe_finish(rl);
}

static void on_event(struct hu_relay *rl, bool is_client, short what)
{
	if (what & BEV_EVENT_EOF) {
		if (is_client) {
			if (!rl->two_way) {
				end(rl, "the client closed the connection");
				return;
			}
			pump(rl, rl->client, rl->server, &rl->to_server);
			rl->client_eof = true;
			if (rl->server_eof)
				end(rl, NULL);
		} else {
			pump(rl, rl->server, rl->client, &rl->to_client);
			rl->server_eof = true;
		}
		/* a write callback at 0 bytes left tells when the end can go on */
		bufferevent_setwatermark(is_client ? rl->server : rl->client, EV_WRITE, 0, 0);
		maybe_finish(rl);
		return;
	}
	if (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		end(rl, is_client ? "the client connection failed" : "the server connection failed");
}

static void client_event(struct bufferevent *b, short what, void *arg)
{
	on_event(arg, true, what);
}

static void server_event(struct bufferevent *b, short what, void *arg)
{
	on_event(arg, false, what);
}

struct hu_relay *hu_relay_start(struct bufferevent *client, struct bufferevent *server, bool two_way,
				hu_relay_done_cb done, void *arg)
{
	struct hu_relay *rl = calloc(1, sizeof(*rl));
	if (!rl)
		return NULL;
	rl->client = client;
	rl->server = server;
	rl->two_way = two_way;
	rl->cb = done;
	rl->arg = arg;
	rl->kick = event_new(bufferevent_get_base(client), -1, 0, on_kick, rl);
	if (!rl->kick) {
		free(rl);
		return NULL;
	}
	bufferevent_setwatermark(client, EV_WRITE, HU_RELAY_LOW, 0);
	bufferevent_setwatermark(server, EV_WRITE, HU_RELAY_LOW, 0);
	/* reads are bounded too, so one callback never moves more than this */
	bufferevent_setwatermark(client, EV_READ, 0, HU_RELAY_HIGH);
	bufferevent_setwatermark(server, EV_READ, 0, HU_RELAY_HIGH);
	bufferevent_setcb(client, client_read, client_write, client_event, rl);
	bufferevent_setcb(server, server_read, server_write, server_event, rl);
	bufferevent_enable(client, EV_READ | EV_WRITE);
	bufferevent_enable(server, EV_READ | EV_WRITE);
	/* what arrived before the relay began */
	if (evbuffer_get_length(bufferevent_get_input(client)))
		client_read(client, rl);
	if (evbuffer_get_length(bufferevent_get_input(server)))
		server_read(server, rl);
	return rl;
}

void hu_relay_counts(const struct hu_relay *rl, uint64_t *to_server, uint64_t *to_client)
{
	*to_server = rl->to_server;
	*to_client = rl->to_client;
}

void hu_relay_free(struct hu_relay *rl)
{
	if (!rl)
		return;
	bufferevent_setcb(rl->client, NULL, NULL, NULL, NULL);
	bufferevent_setcb(rl->server, NULL, NULL, NULL, NULL);
	bufferevent_disable(rl->client, EV_READ | EV_WRITE);
	bufferevent_disable(rl->server, EV_READ | EV_WRITE);
	event_free(rl->kick);
	free(rl);
}
