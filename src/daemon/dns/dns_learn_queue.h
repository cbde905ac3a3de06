/*
 * The DNS proxy's nftables work, off the event loop. An answer to an
 * allowlisted sandbox is handed over only once its addresses are elements
 * of dallow/dallow6 (without them it would lead nowhere), and adding them is
 * an nftables transaction that may take milliseconds, or much longer on a
 * loaded host. So the loop puts the answer in a bounded queue and goes on;
 * one worker thread takes everything queued, adds it all in one
 * transaction (hu_net_learner_run), and hands the jobs back through an
 * eventfd; the loop then sends the answers. A slow transaction delays only
 * the answers waiting for it: other sandboxes' DNS, refusals and HTTP go on.
 * When the queue is full an answer is dropped (the client retries), like a
 * query beyond the pending slots. A sandbox removed while its answer waited
 * has had its elements deleted already: the proxy then queues a job that
 * takes the late ones out again (dns_proxy.c, learned_done).
 */
#ifndef HUTCH_DAEMON_DNS_LEARN_QUEUE_H
#define HUTCH_DAEMON_DNS_LEARN_QUEUE_H

#include <event2/event.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/dns/dns_msg.h"
#include "daemon/sandboxes/registry.h" /* HU_ID_MAX */
#include "runtime/net.h"
#include "util/err.h"

#define HU_DNS_LEARN_QUEUE_MAX 256 /* answers waiting for their elements */
#define HU_DNS_LEARN_BATCH 64     /* answers per transaction at most */

struct hu_dns_learn_job {
	struct hu_dns_learn_job *next;
	/* what to add */
	uint32_t sbx_addr;
	unsigned n4, ttl4, n6, ttl6;
	uint32_t a4[HU_DNS_A_MAX];
	uint8_t a6[HU_DNS_A_MAX][16];
	int remove;                 /* take them out instead (hu_net_learn_req) */
	/* what to do after: the answer, for the sandbox that asked */
	char sbx_id[HU_ID_MAX + 1];
	struct sockaddr_in client;
	int rc;                     /* 0: the elements are in */
	char err[200];              /* why not */
	size_t len;
	uint8_t msg[];              /* the answer, ready to send */
};

struct hu_dns_learn_queue;
typedef void hu_dns_learn_done(struct hu_dns_learn_job *job, void *arg);

/* A job with room for a len-byte answer (malloc; NULL when short). */
struct hu_dns_learn_job *hu_dns_learn_job_new(size_t len);

/* Start the worker on learner (taken). done runs on base's loop for every
 * job the worker finished; the job is freed after it. */
int hu_dns_learn_queue_start(struct hu_dns_learn_queue **out, struct event_base *base, struct hu_net_learner *learner,
			     hu_dns_learn_done *done, void *arg, hu_err *err);
/* Queue job (taken either way). -1 with EAGAIN when the queue is full. */
int hu_dns_learn_queue_submit(struct hu_dns_learn_queue *q, struct hu_dns_learn_job *job, hu_err *err);
/* Stop the worker (after its current transaction), free what is left. */
void hu_dns_learn_queue_free(struct hu_dns_learn_queue *q);

#endif
