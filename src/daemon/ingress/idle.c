#include "daemon/ingress/idle.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "runtime/sandbox.h" /* HU_ID_MAX */
#include "util/clock.h"
#include "util/sockpeek.h"

struct idle {
	struct hu_idle_conns *ic;
	struct idle *prev, *next; /* newest first */
	char sbx_id[HU_ID_MAX];
	uint32_t pauses;
	uint16_t port;
	int64_t since; /* hu_mono_ms() when it was kept */
	struct bufferevent *bev;
};

struct hu_idle_conns {
	struct idle *head, *tail;
	unsigned n;
};

struct hu_idle_conns *hu_idle_conns_new(void)
{
	return calloc(1, sizeof(struct hu_idle_conns));
}

static void unlink_idle(struct idle *e)
{
	struct hu_idle_conns *ic = e->ic;

	if (e->prev)
		e->prev->next = e->next;
	else
		ic->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		ic->tail = e->prev;
	ic->n--;
}

/* Unlink e and hand its connection back (callbacks and timeouts cleared). */
static struct bufferevent *release(struct idle *e)
{
	struct bufferevent *bev = e->bev;

	unlink_idle(e);
	free(e);
	bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
	bufferevent_set_timeouts(bev, NULL, NULL);
	return bev;
}

static void drop(struct idle *e)
{
	bufferevent_free(release(e));
}

/* The server sent something unasked (it has no request to answer), closed
 * its end, or the connection sat idle too long: it is not reused. */
static void on_idle_read(struct bufferevent *bev, void *arg)
{
	drop(arg);
}

static void on_idle_event(struct bufferevent *bev, short what, void *arg)
{
	drop(arg);
}

void hu_idle_conns_free(struct hu_idle_conns *ic)
{
	if (!ic)
		return;
	while (ic->head)
		drop(ic->head);
	free(ic);
}

unsigned hu_idle_conns_count(const struct hu_idle_conns *ic, const char *sbx_id)
{
	unsigned n = 0;

	if (!ic)
		return 0;
	if (!sbx_id)
		return ic->n;
	for (const struct idle *e = ic->head; e; e = e->next)
		n += !strcmp(e->sbx_id, sbx_id);
	return n;
}

void hu_idle_conns_put(struct hu_idle_conns *ic, const char *sbx_id, uint32_t pauses, uint16_t port,
		       struct bufferevent *bev)
{
	static const struct timeval idle_tv = {.tv_sec = HU_IDLE_CONN_MS / 1000,
					       .tv_usec = (HU_IDLE_CONN_MS % 1000) * 1000};
	struct idle *e = calloc(1, sizeof(*e));
	struct idle *oldest_here = NULL;
	unsigned here = 0;

	if (!e || strlen(sbx_id) >= sizeof(e->sbx_id)) {
		free(e);
		bufferevent_free(bev);
		return;
	}
	for (struct idle *o = ic->head; o; o = o->next)
		if (!strcmp(o->sbx_id, sbx_id)) {
			here++;
			oldest_here = o;
		}
	if (here >= HU_IDLE_PER_SANDBOX)
		drop(oldest_here);
	else if (ic->n >= HU_IDLE_MAX)
		drop(ic->tail);
	e->ic = ic;
	memcpy(e->sbx_id, sbx_id, strlen(sbx_id) + 1);
	e->pauses = pauses;
	e->port = port;
	e->since = hu_mono_ms();
	e->bev = bev;
	e->next = ic->head;
	if (ic->head)
		ic->head->prev = e;
	else
		ic->tail = e;
	ic->head = e;
	ic->n++;
	/* reads stay on: any byte or the close drops it (on_idle_read) */
	bufferevent_setwatermark(bev, EV_READ, 0, 0);
	bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
	bufferevent_setcb(bev, on_idle_read, NULL, on_idle_event, e);
	bufferevent_set_timeouts(bev, &idle_tv, NULL);
	bufferevent_enable(bev, EV_READ);
}

/* Nothing has come from the server since the loop last looked: its close
 * (or a byte) may have arrived in the same wake-up as the request that
 * would go on the connection, before on_idle_event could drop it. */
static bool still_quiet(struct bufferevent *bev)
{
	return hu_sock_quiet(bufferevent_getfd(bev));
}

struct bufferevent *hu_idle_conns_take(struct hu_idle_conns *ic, const char *sbx_id, uint32_t pauses, uint16_t port,
				       unsigned max_idle_ms)
{
	struct idle *e = ic ? ic->head : NULL;
	int64_t oldest = hu_mono_ms() - (int64_t)max_idle_ms;

	while (e) {
		struct idle *next = e->next;
		if (!strcmp(e->sbx_id, sbx_id)) {
			if (e->pauses != pauses)
				drop(e); /* kept from before a pause */
			else if (e->port == port && e->since >= oldest && !still_quiet(e->bev))
				drop(e); /* closed (or spoke) as the request arrived */
			else if (e->port == port && e->since >= oldest)
				return release(e);
		}
		e = next;
	}
	return NULL;
}
