/*
 * The pool of idle connections to other nodes (cluster/forward_pool.h):
 * a kept connection is handed back for its node only; one its peer closed,
 * or that received bytes while idle, is never handed out; the pool keeps
 * at most HU_FWD_POOL_PER_NODE per node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/cluster/forward_pool.h"

#define NODE "http://127.0.0.1:1"

/* A connection of the pool's side; *peer is the node's end. */
static struct bufferevent *conn(struct event_base *base, int *peer)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	*peer = sv[1];
	struct bufferevent *b = bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
	assert_non_null(b);
	return b;
}

static void test_kept_for_its_node_only(void **state)
{
	struct event_base *base = event_base_new();
	struct hu_cluster c = {0};
	int peer;
	struct bufferevent *b = conn(base, &peer);

	hu_fwd_pool_put(&c, NODE, b);
	assert_int_equal(hu_fwd_pool_count(&c, NODE), 1);
	assert_null(hu_fwd_pool_take(&c, "http://127.0.0.1:2"));
	assert_ptr_equal(hu_fwd_pool_take(&c, NODE), b);
	assert_int_equal(hu_fwd_pool_count(&c, NODE), 0);
	assert_null(hu_fwd_pool_take(&c, NODE));
	bufferevent_free(b);
	close(peer);
	event_base_free(base);
}

static void test_closed_or_noisy_connections_leave(void **state)
{
	struct event_base *base = event_base_new();
	struct hu_cluster c = {0};
	int p1, p2, p3;

	/* closed before the loop saw it: the peek on taking finds the end */
	hu_fwd_pool_put(&c, NODE, conn(base, &p1));
	close(p1);
	assert_null(hu_fwd_pool_take(&c, NODE));
	/* closed while idle: the loop drops it */
	hu_fwd_pool_put(&c, NODE, conn(base, &p2));
	close(p2);
	event_base_loop(base, EVLOOP_NONBLOCK);
	assert_int_equal(hu_fwd_pool_count(&c, NODE), 0);
	/* bytes with no request to answer: dropped too */
	hu_fwd_pool_put(&c, NODE, conn(base, &p3));
	assert_int_equal(write(p3, "x", 1), 1);
	event_base_loop(base, EVLOOP_NONBLOCK);
	assert_int_equal(hu_fwd_pool_count(&c, NODE), 0);
	close(p3);
	event_base_free(base);
}

static void test_bounded_per_node(void **state)
{
	struct event_base *base = event_base_new();
	struct hu_cluster c = {0};
	int peers[HU_FWD_POOL_PER_NODE + 2];

	for (int i = 0; i < HU_FWD_POOL_PER_NODE + 1; i++)
		hu_fwd_pool_put(&c, NODE, conn(base, &peers[i]));
	hu_fwd_pool_put(&c, "http://127.0.0.1:2", conn(base, &peers[HU_FWD_POOL_PER_NODE + 1]));
	assert_int_equal(hu_fwd_pool_count(&c, NODE), HU_FWD_POOL_PER_NODE);
	assert_int_equal(hu_fwd_pool_count(&c, "http://127.0.0.1:2"), 1);
	hu_fwd_pool_clear(&c);
	assert_int_equal(hu_fwd_pool_count(&c, NODE), 0);
	assert_null(c.idle);
	for (int i = 0; i < HU_FWD_POOL_PER_NODE + 2; i++)
		close(peers[i]);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_for_its_node_only),
		cmocka_unit_test(test_closed_or_noisy_connections_leave),
		cmocka_unit_test(test_bounded_per_node),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
