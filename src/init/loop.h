/*
 * The single-threaded epoll loop of hutch-init. Objects embed a hu_watch per
 * descriptor and get their callback with the epoll events. Objects are never
 * freed while an epoll batch is being dispatched (a later event of the same
 * batch may still point at them): they are marked dead, unregistered, and
 * their memory is released through hu_loop_defer_free() after the batch.
 */
#ifndef HUTCH_INIT_LOOP_H
#define HUTCH_INIT_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

struct hu_watch;
typedef void (*hu_watch_fn)(struct hu_watch *w, uint32_t events);

struct hu_watch {
	int fd;
	uint32_t events; /* currently registered interest */
	bool registered; /* between hu_loop_add and hu_loop_del */
	bool in_epoll;   /* false while the interest set is empty (see hu_loop_mod) */
	bool dead;       /* set by hu_loop_del: callbacks are skipped from now on */
	hu_watch_fn fn;
};

int hu_loop_init(hu_err *err);
void hu_loop_fini(void);

/* Register w->fd with `events`; w must stay valid until hu_loop_del. */
int hu_loop_add(struct hu_watch *w, int fd, uint32_t events, hu_watch_fn fn, hu_err *err);
/* Change the interest set (no syscall when it is unchanged). An empty set
 * takes the fd out of epoll altogether: epoll reports EPOLLHUP even with no
 * interest, and a paused pipe whose writer is gone would spin the loop. */
void hu_loop_mod(struct hu_watch *w, uint32_t events);
/* Unregister and mark dead; does not close the fd. */
void hu_loop_del(struct hu_watch *w);

/* Release `p` with `fn` once the current batch is dispatched. */
void hu_loop_defer_free(void *p, void (*fn)(void *));

/* A periodic hook asked for the next deadline (ms from now, -1 for none) and
 * run after every batch; init has one user of it (proc drain timers). */
void hu_loop_set_timer_hook(int (*next_ms)(void), void (*run)(void));

/* Run until hu_loop_stop(); -1 only on an epoll failure. */
int hu_loop_run(hu_err *err);
void hu_loop_stop(void);

#endif
