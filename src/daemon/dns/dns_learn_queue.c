/* The DNS proxy's nftables worker (dns_learn_queue.h). */
#include "daemon/dns/dns_learn_queue.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

struct hu_dns_learn_queue {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* under lock */
	struct hu_dns_learn_job *todo, **todo_tail, *done, **done_tail;
	unsigned queued; /* todo + being worked on: the bound */
	bool stop;
	/* the worker's alone */
	struct hu_net_learner *learner;
	unsigned delay_ms; /* test build: HUTCH_TEST_DNS_LEARN_DELAY_MS, a slow transaction */
	/* the loop's alone */
	int efd;
	struct event *ev;
	hu_dns_learn_done *cb;
	void *cb_arg;
};

struct hu_dns_learn_job *hu_dns_learn_job_new(size_t len)
{
	return calloc(1, sizeof(struct hu_dns_learn_job) + len);
}

static void free_list(struct hu_dns_learn_job *j)
{
	while (j) {
		struct hu_dns_learn_job *next = j->next;
		free(j);
		j = next;
	}
}

/* One transaction for the batch; if it fails, each job alone, so that one
 * job's failure does not fail the others. */
static void run_batch(struct hu_dns_learn_queue *q, struct hu_dns_learn_job *batch)
{
	struct hu_net_learn_req reqs[HU_DNS_LEARN_BATCH];
	struct hu_dns_learn_job *j;
	unsigned n = 0;
	hu_err err;

	if (q->delay_ms) {
		struct timespec ts = {q->delay_ms / 1000, (long)(q->delay_ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
	for (j = batch; j; j = j->next)
		reqs[n++] = (struct hu_net_learn_req){.sbx_addr = j->sbx_addr, .a4 = j->a4, .n4 = j->n4, .ttl4 = j->ttl4,
						      .a6 = (const uint8_t (*)[16])j->a6, .n6 = j->n6, .ttl6 = j->ttl6, .remove = j->remove};
	if (hu_net_learner_run(q->learner, reqs, n, &err) == 0)
		return;
	n = 0;
	for (j = batch; j; j = j->next, n++)
		if (hu_net_learner_run(q->learner, &reqs[n], 1, &err) < 0) {
			j->rc = -1;
			snprintf(j->err, sizeof(j->err), "%s", err.msg);
		}
}

static void *worker(void *arg)
{
	struct hu_dns_learn_queue *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->todo && !q->stop)
			pthread_cond_wait(&q->wake, &q->lock);
		if (q->stop)
			break;
		/* everything queued, up to a batch */
		struct hu_dns_learn_job *batch = q->todo, *last = batch;
		for (unsigned k = 1; k < HU_DNS_LEARN_BATCH && last->next; k++)
			last = last->next;
		q->todo = last->next;
		if (!q->todo)
			q->todo_tail = &q->todo;
		last->next = NULL;
		pthread_mutex_unlock(&q->lock);
		run_batch(q, batch);
		pthread_mutex_lock(&q->lock);
		*q->done_tail = batch;
		q->done_tail = &last->next;
		uint64_t one = 1;
		/* a full counter only means the loop has a wakeup pending */
		(void)!write(q->efd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* On the loop: hand the finished jobs back. */
static void on_done(evutil_socket_t fd, short what, void *arg)
{
	struct hu_dns_learn_queue *q = arg;
	uint64_t n;
	(void)what;

	(void)!read(fd, &n, sizeof(n));
	pthread_mutex_lock(&q->lock);
	struct hu_dns_learn_job *j = q->done;
	q->done = NULL;
	q->done_tail = &q->done;
	for (struct hu_dns_learn_job *k = j; k; k = k->next)
		q->queued--;
	pthread_mutex_unlock(&q->lock);
	while (j) {
		struct hu_dns_learn_job *next = j->next;
		q->cb(j, q->cb_arg);
		free(j);
		j = next;
	}
}

static unsigned test_delay(void)
{
#ifdef HU_TEST_HOOKS
	const char *v = getenv("HUTCH_TEST_DNS_LEARN_DELAY_MS");
	if (v && *v)
		return (unsigned)strtoul(v, NULL, 10);
#endif
	return 0;
}

int hu_dns_learn_queue_start(struct hu_dns_learn_queue **out, struct event_base *base, struct hu_net_learner *learner,
			     hu_dns_learn_done *done, void *arg, hu_err *err)
{
	struct hu_dns_learn_queue *q = calloc(1, sizeof(*q));
	if (!q) {
		hu_net_learner_free(learner);
		return hu_err_set(err, ENOMEM, "dns proxy: learn queue");
	}
	q->efd = -1;
	q->learner = learner;
	q->todo_tail = &q->todo;
	q->done_tail = &q->done;
	q->cb = done;
	q->cb_arg = arg;
	q->delay_ms = test_delay();
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->wake, NULL);
	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->efd < 0) {
		hu_err_sys(err, "dns proxy: eventfd");
		goto fail;
	}
	q->ev = event_new(base, q->efd, EV_READ | EV_PERSIST, on_done, q);
	if (!q->ev || event_add(q->ev, NULL) < 0) {
		hu_err_set(err, ENOMEM, "dns proxy: learn queue event");
		goto fail;
	}
	int rc = pthread_create(&q->thread, NULL, worker, q);
	if (rc) {
		hu_err_set(err, rc, "dns proxy: learn worker");
		goto fail;
	}
	*out = q;
	return 0;
fail:
	if (q->ev)
		event_free(q->ev);
	if (q->efd >= 0)
		close(q->efd);
	hu_net_learner_free(q->learner);
	pthread_cond_destroy(&q->wake);
	pthread_mutex_destroy(&q->lock);
	free(q);
	return -1;
}

int hu_dns_learn_queue_submit(struct hu_dns_learn_queue *q, struct hu_dns_learn_job *job, hu_err *err)
{
	pthread_mutex_lock(&q->lock);
	if (q->queued >= HU_DNS_LEARN_QUEUE_MAX) {
		pthread_mutex_unlock(&q->lock);
		free(job);
		return hu_err_set(err, -EAGAIN, "%d answers wait for nftables already", HU_DNS_LEARN_QUEUE_MAX);
	}
	job->next = NULL;
	*q->todo_tail = job;
	q->todo_tail = &job->next;
	q->queued++;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

void hu_dns_learn_queue_free(struct hu_dns_learn_queue *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	free_list(q->todo);
	free_list(q->done);
	event_free(q->ev);
	close(q->efd);
	hu_net_learner_free(q->learner);
	pthread_cond_destroy(&q->wake);
	pthread_mutex_destroy(&q->lock);
	free(q);
}
