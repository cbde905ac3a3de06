/* The daemon's DNS proxy (dns_proxy.h). */
#include <arpa/inet.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/dns/dns_msg.h"
#include "daemon/dns/dns_proxy.h"
#include "daemon/dns/dns_learn_queue.h"
#include "daemon/dns/dns_learned.h"
#include "daemon/dns/dns_slots.h"
#include "daemon/sandboxes/registry.h"
#include "runtime/net.h"

#define TTL_MIN_S 5         /* learned addresses live at least this long */
#define TTL_MAX_S 3600      /* and at most this long */
#define BATCH 64            /* datagrams read per wakeup */

/* What a query in flight needs besides its slot (dns_slots.h). */
struct pending {
	uint16_t client_id;
	uint16_t qtype;
	uint32_t sbx_addr; /* the sandbox's address (host order) */
	struct sockaddr_in client;
	char sbx_id[HU_ID_MAX + 1];
	char name[HU_DNS_NAME_MAX + 1];
};

struct hu_dns_proxy {
	struct hu_daemon *d;
	int fd;              /* sandboxes' queries, on every host address */
	int up;              /* connected to the resolver */
	struct event *ev_fd, *ev_up;
	struct hu_dns_slots slots;
	struct hu_dns_learned *learned; /* per-sandbox account of dallow/dallow6 elements */
	struct hu_dns_learn_queue *learnq; /* adds them, off the loop */
	struct pending pend[HU_DNS_SLOTS];
	uint8_t buf[65536];
};

static int udp_socket(hu_err *err)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hu_err_sys(err, "dns proxy: socket");
	return fd;
}

int hu_dns_proxy_bind(struct hu_dns_proxy **out, unsigned *port, hu_err *err)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t alen = sizeof(a);
	struct hu_dns_proxy *p = calloc(1, sizeof(*p));

	if (!p)
		return hu_err_set(err, ENOMEM, "dns proxy");
	p->up = -1;
	if (!(p->learned = hu_dns_learned_new())) {
		free(p);
		return hu_err_set(err, ENOMEM, "dns proxy");
	}
	p->fd = udp_socket(err);
	if (p->fd < 0) {
		hu_dns_learned_free(p->learned);
		free(p);
		return -1;
	}
	if (bind(p->fd, (struct sockaddr *)&a, sizeof(a)) < 0 || getsockname(p->fd, (struct sockaddr *)&a, &alen) < 0) {
		hu_err_sys(err, "dns proxy: bind");
		hu_dns_proxy_free(p);
		return -1;
	}
	*port = ntohs(a.sin_port);
	*out = p;
	return 0;
}

static void reply(struct hu_dns_proxy *p, const uint8_t *msg, size_t len, const struct sockaddr_in *to)
{
	/* a full socket buffer loses the datagram: DNS clients retry */
	(void)sendto(p->fd, msg, len, 0, (const struct sockaddr *)to, sizeof(*to));
}

static void refuse(struct hu_dns_proxy *p, const uint8_t *msg, const struct hu_dns_question *q,
		   const struct sockaddr_in *to)
{
	uint8_t out[600];
	long n = hu_dns_refused(msg, q, out, sizeof(out));
	if (n > 0)
		reply(p, out, (size_t)n, to);
}

/* The sandbox behind a source address, if the daemon runs it with internet. */
static struct hu_sbx *sandbox_of(struct hu_dns_proxy *p, uint32_t addr, char *id)
{
	hu_err ignore;
	if (hu_net_addr_owner(p->d->rt, addr, id, HU_ID_MAX + 1, &ignore) < 0)
		return NULL;
	struct hu_sbx *s = hu_registry_get(p->d->reg, id);
	return s && s->internet ? s : NULL;
}

static int random_id(uint16_t *out, void *arg)
{
	(void)arg;
	return getrandom(out, sizeof(*out), 0) == sizeof(*out) ? 0 : -1;
}

static void on_query(struct hu_dns_proxy *p, const uint8_t *msg, size_t len, const struct sockaddr_in *from)
{
	struct hu_dns_question q;
	char id[HU_ID_MAX + 1];
	hu_err err;
	uint32_t addr = ntohl(from->sin_addr.s_addr);

	if (hu_dns_parse_query(msg, len, &q, &err) < 0)
		return; /* not DNS: nothing to answer */
	struct hu_sbx *s = sandbox_of(p, addr, id);
	/* an allowlist answers only the names it lists; anything else is
	 * refused here and goes nowhere (a name is a channel out) */
	if (!s || (hu_net_rules_allowlist(&s->net_rules) &&
		   !(q.text_ok && q.qclass == 1 && hu_net_rules_match_name(&s->net_rules, q.name)))) {
		hu_log(HU_LOG_DEBUG, s ? s->id : NULL, 0, "dns proxy: refused a query from %s", s ? "the sandbox" : "?");
		refuse(p, msg, &q, from);
		return;
	}
	uint16_t up_id;
	int slot = hu_dns_slots_take(&p->slots, addr, (int64_t)time(NULL), random_id, NULL, &up_id);
	if (slot < 0) {
		/* its share in flight, or the proxy full: the client retries */
		hu_log(HU_LOG_DEBUG, s->id, 0, "dns proxy: too many queries in flight");
		return;
	}
	struct pending *e = &p->pend[slot];
	*e = (struct pending){.client_id = q.id, .qtype = q.qtype, .sbx_addr = addr, .client = *from};
	snprintf(e->sbx_id, sizeof(e->sbx_id), "%s", id);
	snprintf(e->name, sizeof(e->name), "%s", q.name);
	uint8_t *fwd = p->buf + 32768; /* the query is at most 32 KiB (read size) */
	memcpy(fwd, msg, len);
	fwd[0] = (uint8_t)(up_id >> 8);
	fwd[1] = (uint8_t)up_id;
	if (send(p->up, fwd, len, 0) < 0)
		hu_dns_slots_release(&p->slots, slot);
}

/* A learned address lives as long as its record, within TTL_MIN_S..TTL_MAX_S. */
static unsigned clamp_ttl(uint32_t ttl)
{
	return ttl < TTL_MIN_S ? TTL_MIN_S : ttl > TTL_MAX_S ? TTL_MAX_S : (unsigned)ttl;
}

/* Does the answer fit in the sandbox's account of learned addresses
 * (dns_learned.h)? Records it when it does. */
static bool within_budget(struct hu_dns_proxy *p, uint32_t sbx, const struct hu_dns_answer *a)
{
	uint8_t all[2 * HU_DNS_A_MAX][16];
	unsigned n = 0;
	unsigned ttl = clamp_ttl(a->ttl_min);

	for (unsigned i = 0; i < a->n_a; i++, n++) {
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		uint32_t be = htonl(a->a[i]);
		memcpy(all[n], mapped, 12);
		memcpy(all[n] + 12, &be, 4);
	}
	for (unsigned i = 0; i < a->n_aaaa; i++, n++)
		memcpy(all[n], a->aaaa[i], 16);
	if (a->n_aaaa && clamp_ttl(a->ttl_min6) > ttl)
		ttl = clamp_ttl(a->ttl_min6);
	return hu_dns_learned_admit(p->learned, sbx, (const uint8_t (*)[16])all, n, ttl, (int64_t)time(NULL)) == 0;
}

/* The worker added a job's elements (or could not): send its answer. */
static void learned_done(struct hu_dns_learn_job *j, void *arg)
{
	struct hu_dns_proxy *p = arg;
	char id[HU_ID_MAX + 1];
	hu_err err;

	if (j->rc < 0) {
		hu_log(HU_LOG_WARN, j->sbx_id, 0, "dns proxy: %s", j->err);
		return;
	}
	if (j->remove)
		return;
	/* the sandbox went (or another took its address) while the job
	 * waited: its elements were deleted before these were added, so these
	 * go again, and the answer with them */
	if (!sandbox_of(p, j->sbx_addr, id) || strcmp(id, j->sbx_id)) {
		struct hu_dns_learn_job *undo = hu_dns_learn_job_new(0);
		if (!undo)
			return;
		memcpy(undo, j, sizeof(*undo));
		undo->remove = 1;
		undo->len = 0;
		if (hu_dns_learn_queue_submit(p->learnq, undo, &err) < 0)
			hu_log(HU_LOG_WARN, j->sbx_id, 0, "dns proxy: late elements stay until their TTL: %s", err.msg);
		return;
	}
	reply(p, j->msg, j->len, &j->client);
}

/* Queue the answer for the worker (dns_learn_queue.h), which adds its
 * addresses and then has it sent; dropped when the queue is full. */
static void learn_then_reply(struct hu_dns_proxy *p, const struct pending *e, const struct hu_dns_answer *a,
			     uint8_t *msg, size_t len)
{
	struct hu_dns_learn_job *j = hu_dns_learn_job_new(len);
	hu_err err;

	if (!j)
		return;
	j->sbx_addr = e->sbx_addr;
	j->n4 = a->n_a;
	j->ttl4 = clamp_ttl(a->ttl_min);
	memcpy(j->a4, a->a, sizeof(j->a4));
	j->n6 = a->n_aaaa;
	j->ttl6 = clamp_ttl(a->ttl_min6);
	memcpy(j->a6, a->aaaa, sizeof(j->a6));
	snprintf(j->sbx_id, sizeof(j->sbx_id), "%s", e->sbx_id);
	j->client = e->client;
	msg[0] = (uint8_t)(e->client_id >> 8);
	msg[1] = (uint8_t)e->client_id;
	memcpy(j->msg, msg, len);
	j->len = len;
	if (hu_dns_learn_queue_submit(p->learnq, j, &err) < 0)
		hu_log(HU_LOG_DEBUG, e->sbx_id, 0, "dns proxy: %s", err.msg);
}

static void on_answer(struct hu_dns_proxy *p, uint8_t *msg, size_t len)
{
	struct hu_dns_answer a;
	char id[HU_ID_MAX + 1];
	hu_err err;

	if (hu_dns_parse_answer(msg, len, &a, &err) < 0)
		return;
	int slot = hu_dns_slots_find(&p->slots, a.q.id, (int64_t)time(NULL));
	if (slot < 0)
		return;
	struct pending *e = &p->pend[slot];
	if (e->qtype != a.q.qtype || strcmp(e->name, a.q.name))
		return;
	hu_dns_slots_release(&p->slots, slot);
	/* the sandbox may be gone, its slot reused, or its rules changed since
	 * the query: judge the answer by what is true now */
	struct hu_sbx *s = sandbox_of(p, e->sbx_addr, id);
	if (!s || strcmp(id, e->sbx_id))
		return;
	if (hu_net_rules_allowlist(&s->net_rules)) {
		if (!hu_net_rules_match_name(&s->net_rules, e->name))
			return;
		/* without the elements the answer would lead nowhere: it is
		 * not handed over when they cannot be added. AAAA records are
		 * learned only where sandboxes have IPv6 (hu_net_learn6 does
		 * nothing otherwise); the answer goes over unchanged either way */
		if (!within_budget(p, e->sbx_addr, &a)) {
			hu_log(HU_LOG_DEBUG, s->id, 0, "dns proxy: %s: more than %d learned addresses live", e->name,
			       HU_DNS_LEARNED_MAX);
			return;
		}
		learn_then_reply(p, e, &a, msg, len);
		return;
	}
	msg[0] = (uint8_t)(e->client_id >> 8);
	msg[1] = (uint8_t)e->client_id;
	reply(p, msg, len, &e->client);
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct hu_dns_proxy *p = arg;
	(void)what;
	for (int i = 0; i < BATCH; i++) {
		struct sockaddr_in from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(fd, p->buf, fd == p->fd ? 32768 : sizeof(p->buf), 0, (struct sockaddr *)&from,
				     &flen);
		if (n < 0)
			return;
		if (fd == p->up)
			on_answer(p, p->buf, (size_t)n);
		else if (flen == sizeof(from) && from.sin_family == AF_INET)
			on_query(p, p->buf, (size_t)n, &from);
	}
}

int hu_dns_proxy_start(struct hu_dns_proxy *p, struct hu_daemon *d, hu_err *err)
{
	uint32_t res = hu_net_resolver(d->rt);
	p->d = d;
	if (!res)
		return 0; /* no resolver: the proxy refuses nothing, nobody is sent to it */
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(53), .sin_addr.s_addr = htonl(res)};
	p->up = udp_socket(err);
	if (p->up < 0)
		return -1;
	/* connected: only the resolver's datagrams come in */
	if (connect(p->up, (struct sockaddr *)&to, sizeof(to)) < 0)
		return hu_err_sys(err, "dns proxy: connect to the resolver");
	struct hu_net_learner *learner;
	if (hu_net_learner_open(d->rt, &learner, err) < 0 ||
	    hu_dns_learn_queue_start(&p->learnq, d->base, learner, learned_done, p, err) < 0)
		return -1;
	p->ev_fd = event_new(d->base, p->fd, EV_READ | EV_PERSIST, on_readable, p);
	p->ev_up = event_new(d->base, p->up, EV_READ | EV_PERSIST, on_readable, p);
	if (!p->ev_fd || !p->ev_up || event_add(p->ev_fd, NULL) < 0 || event_add(p->ev_up, NULL) < 0)
		return hu_err_set(err, ENOMEM, "dns proxy: events");
	return 0;
}

void hu_dns_proxy_free(struct hu_dns_proxy *p)
{
	if (!p)
		return;
	hu_dns_learn_queue_free(p->learnq); /* first: its worker ends after its transaction */
	if (p->ev_fd)
		event_free(p->ev_fd);
	if (p->ev_up)
		event_free(p->ev_up);
	if (p->fd >= 0)
		close(p->fd);
	if (p->up >= 0)
		close(p->up);
	hu_dns_learned_free(p->learned);
	free(p);
}
