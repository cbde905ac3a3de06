#include "init/loop.h"

#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#define BATCH 64

struct deferred {
	void *p;
	void (*fn)(void *);
};

static int epfd = -1;
static bool stopping;
static struct deferred *deferred;
static size_t ndeferred, deferred_cap;
static int (*timer_next_ms)(void);
static void (*timer_run)(void);

int hu_loop_init(hu_err *err)
{
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return hu_err_sys(err, "epoll_create1");
	return 0;
}

static void run_deferred(void)
{
	for (size_t i = 0; i < ndeferred; i++)
		deferred[i].fn(deferred[i].p);
	ndeferred = 0;
}

void hu_loop_fini(void)
{
	run_deferred();
	free(deferred);
	deferred = NULL;
	deferred_cap = 0;
	if (epfd >= 0)
		close(epfd);
	epfd = -1;
}

int hu_loop_add(struct hu_watch *w, int fd, uint32_t events, hu_watch_fn fn, hu_err *err)
{
	struct epoll_event ev = {.events = events, .data.ptr = w};

	w->fd = fd;
	w->fn = fn;
	w->events = events;
	w->dead = false;
	w->registered = false;
	w->in_epoll = false;
	if (events && epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return hu_err_sys(err, "epoll_ctl add fd %d", fd);
	w->registered = true;
	w->in_epoll = events != 0;
	return 0;
}

void hu_loop_mod(struct hu_watch *w, uint32_t events)
{
	if (!w->registered || w->events == events)
		return;
	struct epoll_event ev = {.events = events, .data.ptr = w};
	/* These cannot fail for a valid fd short of ENOMEM in the kernel; there is
	 * nothing to recover then, so the interest is simply recorded. */
	if (!events)
		(void)epoll_ctl(epfd, EPOLL_CTL_DEL, w->fd, NULL);
	else
		(void)epoll_ctl(epfd, w->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, w->fd, &ev);
	w->in_epoll = events != 0;
	w->events = events;
}

void hu_loop_del(struct hu_watch *w)
{
	if (w->in_epoll)
		(void)epoll_ctl(epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->registered = false;
	w->in_epoll = false;
	w->dead = true;
}

void hu_loop_defer_free(void *p, void (*fn)(void *))
{
	if (ndeferred == deferred_cap) {
		size_t cap = deferred_cap ? 2 * deferred_cap : 16;
		struct deferred *d = realloc(deferred, cap * sizeof(*d));
		if (!d) {
			/* Leaking one object beats a use-after-free. */
			return;
		}
		deferred = d;
		deferred_cap = cap;
	}
	deferred[ndeferred++] = (struct deferred){p, fn};
}

void hu_loop_set_timer_hook(int (*next_ms)(void), void (*run)(void))
{
	timer_next_ms = next_ms;
	timer_run = run;
}

void hu_loop_stop(void)
{
	stopping = true;
}

int hu_loop_run(hu_err *err)
{
	struct epoll_event evs[BATCH];

	stopping = false;
	while (!stopping) {
		int timeout = timer_next_ms ? timer_next_ms() : -1;
		int n = epoll_wait(epfd, evs, BATCH, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return hu_err_sys(err, "epoll_wait");
		}
		for (int i = 0; i < n; i++) {
			struct hu_watch *w = evs[i].data.ptr;
			if (!w->dead)
				w->fn(w, evs[i].events);
		}
		if (timer_run)
			timer_run();
		run_deferred();
	}
	return 0;
}
