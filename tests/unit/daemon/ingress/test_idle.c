/*
 * The cache of kept server connections (src/daemon/ingress/idle.c), over
 * socket pairs: what is taken is what was kept for that sandbox and port,
 * never across a pause, never one idle for longer than asked; the caps
 * hold; a server that speaks unasked or closes loses its kept connection.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/ingress/idle.h"

/* A connection whose far end (the "server") is returned in *far. */
static struct bufferevent *conn(struct event_base *base, int *far)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	*far = sv[1];
	return bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
}

static void run_once(struct event_base *base)
{
	for (int i = 0; i < 5; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
}

static void test_take_what_was_kept(void **state)
{
	struct event_base *base = event_base_new();
	struct hu_idle_conns *ic = hu_idle_conns_new();
	int far_a, far_b;
	struct bufferevent *a = conn(base, &far_a), *b = conn(base, &far_b);

	hu_idle_conns_put(ic, "sbx1", 0, 8000, a);
	hu_idle_conns_put(ic, "sbx2", 0, 8000, b);
	assert_int_equal(hu_idle_conns_count(ic, NULL), 2);
	assert_int_equal(hu_idle_conns_count(ic, "sbx1"), 1);
	assert_null(hu_idle_conns_take(ic, "sbx1", 0, 8001, HU_IDLE_CONN_MS)); /* another port */
	assert_null(hu_idle_conns_take(ic, "sbx3", 0, 8000, HU_IDLE_CONN_MS)); /* another sandbox */
	assert_ptr_equal(hu_idle_conns_take(ic, "sbx1", 0, 8000, HU_IDLE_CONN_MS), a);
	assert_null(hu_idle_conns_take(ic, "sbx1", 0, 8000, HU_IDLE_CONN_MS)); /* taken once */
	bufferevent_free(a);
	/* sbx2 paused since: its connection is dropped, not handed out */
	assert_null(hu_idle_conns_take(ic, "sbx2", 1, 8000, HU_IDLE_CONN_MS));
	assert_int_equal(hu_idle_conns_count(ic, NULL), 0);
	char c;
	run_once(base);
	assert_int_equal(read(far_b, &c, 1), 0); /* closed */
	hu_idle_conns_free(ic);
	close(far_a);
	close(far_b);
	event_base_free(base);
}

static void test_caps_drop_the_oldest(void **state)
{
	struct event_base *base = event_base_new();
	struct hu_idle_conns *ic = hu_idle_conns_new();
	int fars[HU_IDLE_PER_SANDBOX + 1];
	struct bufferevent *first = NULL;

	for (int i = 0; i <= HU_IDLE_PER_SANDBOX; i++) {
		struct bufferevent *bev = conn(base, &fars[i]);
		if (!first)
			first = bev;
		hu_idle_conns_put(ic, "sbx1", 0, 8000, bev);
	}
	assert_int_equal(hu_idle_conns_count(ic, "sbx1"), HU_IDLE_PER_SANDBOX);
	char c;
	run_once(base);
	assert_int_equal(read(fars[0], &c, 1), 0); /* the oldest went */
	/* the newest comes back first */
	struct bufferevent *bev = hu_idle_conns_take(ic, "sbx1", 0, 8000, HU_IDLE_CONN_MS);
	assert_non_null(bev);
	assert_ptr_not_equal(bev, first);
	bufferevent_free(bev);
	hu_idle_conns_free(ic);
	for (int i = 0; i <= HU_IDLE_PER_SANDBOX; i++)
		close(fars[i]);
	event_base_free(base);
}

static void test_a_server_that_speaks_or_closes_loses_it(void **state)
{
	struct event_base *base = event_base_new();
	struct hu_idle_conns *ic = hu_idle_conns_new();
	int far_a, far_b;

	hu_idle_conns_put(ic, "sbx1", 0, 8000, conn(base, &far_a));
	hu_idle_conns_put(ic, "sbx1", 0, 8001, conn(base, &far_b));
	/* a response nobody asked for */
	assert_int_equal(write(far_a, "HTTP/1.1 200 OK\r\n\r\n", 19), 19);
	close(far_b);
	run_once(base);
	assert_int_equal(hu_idle_conns_count(ic, NULL), 0);
	assert_null(hu_idle_conns_take(ic, "sbx1", 0, 8000, HU_IDLE_CONN_MS));
	assert_null(hu_idle_conns_take(ic, "sbx1", 0, 8001, HU_IDLE_CONN_MS));
	hu_idle_conns_free(ic);
	close(far_a);
	event_base_free(base);
}

static void test_an_older_one_stays_for_others(void **state)
{
	struct event_base *base = event_base_new();
	struct hu_idle_conns *ic = hu_idle_conns_new();
	int far;
	struct bufferevent *a = conn(base, &far);

	hu_idle_conns_put(ic, "sbx1", 0, 8000, a);
	usleep(30 * 1000);
	assert_null(hu_idle_conns_take(ic, "sbx1", 0, 8000, 10)); /* idle too long for this one */
	assert_int_equal(hu_idle_conns_count(ic, "sbx1"), 1);
	assert_ptr_equal(hu_idle_conns_take(ic, "sbx1", 0, 8000, HU_IDLE_CONN_MS), a);
	bufferevent_free(a);
	hu_idle_conns_free(ic);
	close(far);
	event_base_free(base);
}

/* The server's close arrived in the same wake-up as the next request: the
 * loop has not run since, and the connection is not handed out. */
static void test_a_close_not_yet_seen_is_not_taken(void **state)
{
	struct event_base *base = event_base_new();
	struct hu_idle_conns *ic = hu_idle_conns_new();
	int far_a, far_b;

	hu_idle_conns_put(ic, "sbx1", 0, 8000, conn(base, &far_a));
	hu_idle_conns_put(ic, "sbx1", 0, 8000, conn(base, &far_b));
	close(far_b); /* the newer one */
	struct bufferevent *got = hu_idle_conns_take(ic, "sbx1", 0, 8000, HU_IDLE_CONN_MS);
	assert_non_null(got);
	assert_int_equal(write(far_a, "x", 1), 1); /* got is the older one: its far end is open */
	char c;
	assert_int_equal(read(bufferevent_getfd(got), &c, 1), 1);
	assert_int_equal(hu_idle_conns_count(ic, NULL), 0);
	bufferevent_free(got);
	hu_idle_conns_free(ic);
	close(far_a);
	event_base_free(base);
}

static void test_free_closes_what_is_kept(void **state)
{
	struct event_base *base = event_base_new();
	struct hu_idle_conns *ic = hu_idle_conns_new();
	int far;
	char c;

	hu_idle_conns_put(ic, "sbx1", 0, 8000, conn(base, &far));
	hu_idle_conns_free(ic);
	run_once(base); /* libevent closes a freed bufferevent's socket from the loop */
	assert_int_equal(read(far, &c, 1), 0);
	close(far);
	assert_int_equal(hu_idle_conns_count(NULL, NULL), 0);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_what_was_kept),
		cmocka_unit_test(test_caps_drop_the_oldest),
		cmocka_unit_test(test_a_server_that_speaks_or_closes_loses_it),
		cmocka_unit_test(test_an_older_one_stays_for_others),
		cmocka_unit_test(test_a_close_not_yet_seen_is_not_taken),
		cmocka_unit_test(test_free_closes_what_is_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
