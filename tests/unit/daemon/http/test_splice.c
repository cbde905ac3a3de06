/*
 * Sized bodies moved socket -> pipe -> socket (src/daemon/http/splice.c),
 * over TCP on loopback with threads feeding the source and draining the
 * destination: exactly the length moves, after what was queued, and the
 * bytes past it stay in the source; a source that ends early, a
 * destination that leaves and one that takes nothing each end the move as
 * a failure of the right side.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/http/splice.h"

/* A connected TCP pair on loopback; *a is non-blocking (the daemon's
 * side), *b blocking (the peer's, driven by a thread). */
static void tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	*b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(*b, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*a = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	assert_true(*a >= 0);
	close(l);
}

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 7 + i / 4096);
}

/* The server: writes `n` pattern bytes, then closes if asked. */
struct feeder {
	int fd;
	uint64_t n;
	bool close_after;
	atomic_bool stop;
};

static void *feed(void *arg)
{
	struct feeder *f = arg;
	uint8_t buf[65536];
	uint64_t off = 0;
	while (off < f->n && !atomic_load(&f->stop)) {
		size_t k = f->n - off < sizeof(buf) ? (size_t)(f->n - off) : sizeof(buf);
		for (size_t i = 0; i < k; i++)
			buf[i] = pattern(off + i);
		struct pollfd p = {f->fd, POLLOUT, 0};
		if (poll(&p, 1, 50) <= 0)
			continue;
		ssize_t w = send(f->fd, buf, k, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN)
			break;
		if (w > 0)
			off += (uint64_t)w;
	}
	if (f->close_after)
		shutdown(f->fd, SHUT_WR);
	return NULL;
}

/* The client: reads everything until EOF (or `stop`), checking the prefix
 * and then the pattern. */
struct drainer {
	int fd;
	const char *prefix;
	uint64_t got;     /* body bytes, after the prefix */
	bool bad;         /* a byte was not what was sent */
	bool read_nothing;
	atomic_bool stop;
};

static void *drain(void *arg)
{
	struct drainer *d = arg;
	uint8_t buf[65536];
	size_t pre = d->prefix ? strlen(d->prefix) : 0, pre_got = 0;
	if (d->read_nothing)
		return NULL;
	while (!atomic_load(&d->stop)) {
		struct pollfd p = {d->fd, POLLIN, 0};
		if (poll(&p, 1, 50) <= 0)
			continue;
		ssize_t r = recv(d->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN))
			break;
		for (ssize_t i = 0; i < r; i++) {
			if (pre_got < pre) {
				d->bad |= buf[i] != (uint8_t)d->prefix[pre_got++];
				continue;
			}
			d->bad |= buf[i] != pattern(d->got++);
		}
	}
	return NULL;
}

struct outcome {
	struct event_base *base;
	struct hu_splice *sp;
	int done, failed;
	bool from_source;
	char why[128];
};

static void on_done(void *arg)
{
	struct outcome *o = arg;
	o->done++;
	hu_splice_free(o->sp);
	o->sp = NULL;
	event_base_loopbreak(o->base);
}

static void on_fail(void *arg, bool from_source, const char *why)
{
	struct outcome *o = arg;
	o->failed++;
	o->from_source = from_source;
	snprintf(o->why, sizeof(o->why), "%s", why);
	hu_splice_free(o->sp);
	o->sp = NULL;
	event_base_loopbreak(o->base);
}

/* Start a splice reporting to o, on a base of its own. */
static void start(struct outcome *o, int src, int dst, uint64_t len, struct evbuffer *queued,
		  const struct timeval *write_tv)
{
	struct hu_splice_cbs cbs = {on_done, on_fail, o};
	hu_err err;
	o->base = event_base_new();
	o->sp = hu_splice_start(o->base, src, dst, len, queued, write_tv, &cbs, &err);
	assert_non_null(o->sp);
}

/* One move of `len` bytes with `sent` written by the server; returns when
 * the splice reported. */
static void run(struct outcome *o, uint64_t len, uint64_t sent, bool server_closes, bool client_reads,
		const struct timeval *write_tv, struct drainer *dr, int *src_out)
{
	int src, src_peer, dst, dst_peer;
	tcp_pair(&src, &src_peer);
	tcp_pair(&dst, &dst_peer);
	struct evbuffer *queued = evbuffer_new();
	evbuffer_add(queued, "HEAD\r\n", 6);
	/* as a socket bufferevent's output is between its own writes */
	evbuffer_freeze(queued, 1);
	struct feeder fe = {.fd = src_peer, .n = sent, .close_after = server_closes};
	*dr = (struct drainer){.fd = dst_peer, .prefix = "HEAD\r\n", .read_nothing = !client_reads};
	pthread_t tf, td;
	pthread_create(&tf, NULL, feed, &fe);
	pthread_create(&td, NULL, drain, dr);

	start(o, src, dst, len, queued, write_tv);
	event_base_dispatch(o->base);
	assert_null(o->sp);

	/* the client has what went out; then both threads stop */
	shutdown(dst, SHUT_WR);
	if (o->done) {
		pthread_join(td, NULL); /* ends at the EOF */
	} else {
		atomic_store(&dr->stop, true);
		pthread_join(td, NULL);
	}
	atomic_store(&fe.stop, true);
	pthread_join(tf, NULL);
	evbuffer_free(queued);
	event_base_free(o->base);
	close(dst);
	close(dst_peer);
	close(src_peer);
	*src_out = src;
}

static void test_moves_the_length_after_the_queued_bytes(void **state)
{
	struct outcome o = {0};
	struct drainer dr;
	int src;
	uint64_t len = (5u << 20) + 12345, extra = 777;

	run(&o, len, len + extra, false, true, NULL, &dr, &src);
	assert_int_equal(o.done, 1);
	assert_int_equal(o.failed, 0);
	assert_false(dr.bad);
	assert_int_equal(dr.got, len);
	/* not a byte past the length was taken from the source */
	uint8_t rest[1024];
	size_t n = 0;
	for (int i = 0; i < 100 && n < extra; i++) {
		ssize_t r = recv(src, rest + n, sizeof(rest) - n, MSG_DONTWAIT);
		if (r > 0)
			n += (size_t)r;
		else
			usleep(10000);
	}
	assert_int_equal(n, extra);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rest[i], pattern(len + i));
	close(src);
}

static void test_a_source_that_ends_early_fails_from_the_source(void **state)
{
	struct outcome o = {0};
	struct drainer dr;
	int src;

	run(&o, 4u << 20, 1u << 20, true, true, NULL, &dr, &src);
	assert_int_equal(o.done, 0);
	assert_int_equal(o.failed, 1);
	assert_true(o.from_source);
	assert_false(dr.bad);
	assert_true(dr.got <= 1u << 20);
	close(src);
}

static void test_a_client_that_takes_nothing_times_out(void **state)
{
	struct outcome o = {0};
	struct drainer dr;
	struct timeval tv = {0, 200 * 1000};
	int src;

	run(&o, 256u << 20, 256u << 20, false, false, &tv, &dr, &src);
	assert_int_equal(o.done, 0);
	assert_int_equal(o.failed, 1);
	assert_false(o.from_source);
	assert_non_null(strstr(o.why, "write timeout"));
	close(src);
}

static void test_a_client_that_leaves_fails_from_the_destination(void **state)
{
	int src, src_peer, dst, dst_peer;
	tcp_pair(&src, &src_peer);
	tcp_pair(&dst, &dst_peer);
	/* the client is gone before a byte: a reset, not a FIN */
	struct linger lg = {1, 0};
	setsockopt(dst_peer, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(dst_peer);
	struct feeder fe = {.fd = src_peer, .n = 8u << 20};
	pthread_t tf;
	pthread_create(&tf, NULL, feed, &fe);

	struct outcome o = {0};
	start(&o, src, dst, 8u << 20, NULL, NULL);
	event_base_dispatch(o.base);
	assert_int_equal(o.failed, 1);
	assert_false(o.from_source);
	atomic_store(&fe.stop, true);
	pthread_join(tf, NULL);
	event_base_free(o.base);
	close(src);
	close(src_peer);
	close(dst);
}

static void test_free_in_flight_releases_everything(void **state)
{
	int src, src_peer, dst, dst_peer;
	tcp_pair(&src, &src_peer);
	tcp_pair(&dst, &dst_peer);
	struct outcome o = {0};
	start(&o, src, dst, 1u << 20, NULL, NULL);
	event_base_loop(o.base, EVLOOP_NONBLOCK);
	hu_splice_free(o.sp); /* the owner stops it (a shutdown): no callback */
	event_base_loop(o.base, EVLOOP_NONBLOCK);
	assert_int_equal(o.done + o.failed, 0);
	event_base_free(o.base);
	close(src);
	close(src_peer);
	close(dst);
	close(dst_peer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moves_the_length_after_the_queued_bytes),
		cmocka_unit_test(test_a_source_that_ends_early_fails_from_the_source),
		cmocka_unit_test(test_a_client_that_takes_nothing_times_out),
		cmocka_unit_test(test_a_client_that_leaves_fails_from_the_destination),
		cmocka_unit_test(test_free_in_flight_releases_everything),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
