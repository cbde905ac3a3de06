/*
 * Idle keep-alive connections to the servers inside sandboxes, kept for the
 * next request to the same port (what nginx's upstream `keepalive` does).
 * A request then costs a write on an open connection instead of a socket
 * made in the sandbox's network namespace, a connect, the server's accept
 * and a close.
 *
 * A connection is kept only after a complete exchange (the ingress decides:
 * ingress.c), for at most HU_IDLE_CONN_MS, at most HU_IDLE_PER_SANDBOX per
 * sandbox and HU_IDLE_MAX in all (the oldest goes first). While it waits it
 * is read: anything the server sends, or its close, drops it. Each is
 * tagged with its sandbox's pause count, so one kept across a pause is never
 * used again; a dead sandbox's servers close theirs, which drops them.
 */
#ifndef HUTCH_DAEMON_INGRESS_IDLE_H
#define HUTCH_DAEMON_INGRESS_IDLE_H

#include <event2/bufferevent.h>
#include <stdint.h>

#define HU_IDLE_CONN_MS 4000   /* under the 5 s keep-alive of Node's http server, the shortest common one */
#define HU_IDLE_PER_SANDBOX 64 /* wrk -c50 against one port stays on kept connections */
/* a small part of the descriptors kept for connections (sandboxes/fd_budget.h: an eighth of the limit) */
#define HU_IDLE_MAX 256

struct hu_idle_conns;

struct hu_idle_conns *hu_idle_conns_new(void);
/* Closes every connection still kept. */
void hu_idle_conns_free(struct hu_idle_conns *ic);
/* Keep `bev` (nothing unread, nothing unsent) for port `port` of sandbox
 * `sbx_id` as of its `pauses`-th pause; the cache owns it from here (and
 * may close it at once, over a cap or out of memory). */
void hu_idle_conns_put(struct hu_idle_conns *ic, const char *sbx_id, uint32_t pauses, uint16_t port,
		       struct bufferevent *bev);
/* A kept connection to that port of that sandbox that has been idle for at
 * most max_idle_ms (the newest first), or NULL; the caller owns it, with no
 * callbacks, no timeouts and reads enabled. Older ones stay for requests
 * that accept them; those kept before a later pause, and those whose server
 * closed or spoke since the loop last looked, are closed on the way. */
struct bufferevent *hu_idle_conns_take(struct hu_idle_conns *ic, const char *sbx_id, uint32_t pauses, uint16_t port,
				       unsigned max_idle_ms);
/* Connections kept now, for one sandbox (NULL: all). */
unsigned hu_idle_conns_count(const struct hu_idle_conns *ic, const char *sbx_id);

#endif
