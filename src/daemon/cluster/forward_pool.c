/* The pool of idle connections to other nodes (forward_pool.h). */
#include "daemon/cluster/forward_pool.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/sockpeek.h"

struct hu_fwd_idle {
	struct hu_cluster *c;
	struct hu_fwd_idle *prev, *next;
	struct bufferevent *bev;
	char address[256];
};

static void unlink_idle(struct hu_fwd_idle *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		k->c->idle = k->next;
	if (k->next)
		k->next->prev = k->prev;
}

static void drop(struct hu_fwd_idle *k)
{
	unlink_idle(k);
	bufferevent_free(k->bev);
	free(k);
}

/* Bytes from an idle connection (there is no request to answer), its end,
 * an error or the idle timeout: it is not kept. */
static void on_idle_read(struct bufferevent *b, void *arg)
{
	drop(arg);
}

static void on_idle_event(struct bufferevent *b, short what, void *arg)
{
	drop(arg);
}

/* The node may have closed it a moment ago, with its EOF not yet seen by
 * the loop: a peek finds that (or stray bytes) before a request is sent. */
static bool still_open(struct bufferevent *b)
{
	evutil_socket_t fd = bufferevent_getfd(b);

	return fd >= 0 && !evbuffer_get_length(bufferevent_get_input(b)) && hu_sock_quiet(fd);
}

struct bufferevent *hu_fwd_pool_take(struct hu_cluster *c, const char *address)
{
	struct hu_fwd_idle *k = c->idle;

	while (k) {
		struct hu_fwd_idle *next = k->next;
		if (strcmp(k->address, address)) {
			k = next;
			continue;
		}
		struct bufferevent *b = k->bev;
		unlink_idle(k);
		free(k);
		bufferevent_setcb(b, NULL, NULL, NULL, NULL);
		bufferevent_set_timeouts(b, NULL, NULL);
		bufferevent_disable(b, EV_READ | EV_WRITE);
		if (still_open(b))
			return b;
		bufferevent_free(b);
		k = next;
	}
	return NULL;
}

void hu_fwd_pool_put(struct hu_cluster *c, const char *address, struct bufferevent *b)
{
	const struct timeval idle = {HU_FWD_POOL_IDLE_MS / 1000, (HU_FWD_POOL_IDLE_MS % 1000) * 1000};
	struct hu_fwd_idle *k;

	if (strlen(address) >= sizeof(k->address) || hu_fwd_pool_count(c, address) >= HU_FWD_POOL_PER_NODE ||
	    !(k = calloc(1, sizeof(*k)))) {
		bufferevent_free(b);
		return;
	}
	k->c = c;
	k->bev = b;
	memcpy(k->address, address, strlen(address) + 1);
	/* the newest first: it is the least likely to have been closed */
	k->next = c->idle;
	if (k->next)
		k->next->prev = k;
	c->idle = k;
	bufferevent_setwatermark(b, EV_READ, 0, 0);
	bufferevent_setwatermark(b, EV_WRITE, 0, 0);
	bufferevent_setcb(b, on_idle_read, NULL, on_idle_event, k);
	bufferevent_set_timeouts(b, &idle, NULL);
	bufferevent_disable(b, EV_WRITE);
	bufferevent_enable(b, EV_READ);
}

unsigned hu_fwd_pool_count(const struct hu_cluster *c, const char *address)
{
	unsigned n = 0;
	for (const struct hu_fwd_idle *k = c->idle; k; k = k->next)
		n += !strcmp(k->address, address);
	return n;
}

void hu_fwd_pool_clear(struct hu_cluster *c)
{
	while (c->idle)
		drop(c->idle);
}
