/*
 * Registration and the lease (node.h). The renewal is one short UPDATE on
 * the store's connection, from a timer on the event loop: the loop waits
 * for the store on every control-plane call already, and the store's
 * connection bounds each call (connect, statement and TCP timeouts), so a
 * renewal costs what a request costs. Leases live in the database's clock
 * (store/pg_nodes.c); the node keeps a conservative view of its own.
 */
#include "daemon/cluster/node.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/common/log.h"
#include "daemon/sandboxes/admission.h"
#include "daemon/store/store.h"

struct hu_cluster {
	struct hu_daemon *d;
	struct hu_node self;
	struct event *renew;
	int failing; /* the last renewal failed (logged once per outage) */
};

/* The defaults of node.name (<host name>-<port>: two nodes on one host
 * differ by port) and node.address (what this node listens on). */
static void identity(const struct hu_config *cfg, struct hu_node *n)
{
	hu_config_node_name(cfg, n->name, sizeof(n->name));
	if (cfg->node_address[0])
		snprintf(n->address, sizeof(n->address), "%s", cfg->node_address);
	else if (strchr(cfg->listen_addr, ':'))
		snprintf(n->address, sizeof(n->address), "http://[%s]:%u", cfg->listen_addr, cfg->port);
	else
		snprintf(n->address, sizeof(n->address), "http://%s:%u", cfg->listen_addr, cfg->port);
	snprintf(n->labels, sizeof(n->labels), "%s", cfg->node_labels);
}

/* What placement may count on here: the admission budgets. */
static int capacity(struct hu_daemon *d, struct hu_node *n, hu_err *err)
{
	struct hu_capacity cap;

	if (hu_capacity_read(d, &cap, err) < 0)
		return -1;
	n->memory_bytes = cap.mem_budget;
	/* no CPU budget (CPU is shared, not exhausted): the CPUs themselves */
	n->cpu_millis = cap.cpu_budget_millis ? cap.cpu_budget_millis : (uint64_t)cap.cpus * 1000;
	n->pids = cap.pids_budget;
	n->max_sandboxes = d->cfg.max_sandboxes;
	return 0;
}

static void renew(evutil_socket_t fd, short what, void *arg)
{
	struct hu_cluster *c = arg;
	hu_err err;

	if (hu_store_node_renew(c->d->store, HU_LEASE_TTL_MS, &err) == 0) {
		if (c->failing)
			hu_log(HU_LOG_INFO, NULL, 0, "node %s: lease renewed again", c->self.name);
		c->failing = 0;
		return;
	}
	if (err.code == ESTALE) {
		/* another process holds the name now: this one must not come
		 * back by itself, or two would take turns owning the sandboxes */
		hu_log(HU_LOG_ERROR, NULL, 0, "%s; this daemon admits no creates and writes nothing: stop it",
		       err.msg);
		event_del(c->renew);
		return;
	}
	if (!c->failing)
		hu_log(HU_LOG_WARN, NULL, 0, "node %s: renew the lease: %s (creates are refused once it expires)",
		       c->self.name, err.msg);
	c->failing = 1;
}

int hu_cluster_start(struct hu_daemon *d, hu_err *err)
{
	const struct timeval every = {HU_LEASE_RENEW_MS / 1000, (HU_LEASE_RENEW_MS % 1000) * 1000};
	struct hu_cluster *c = calloc(1, sizeof(*c));
	int64_t generation;

	if (!c)
		return hu_err_set(err, ENOMEM, "cluster");
	c->d = d;
	identity(&d->cfg, &c->self);
	if (capacity(d, &c->self, err) < 0)
		goto fail;
	if (hu_store_node_register(d->store, &c->self, HU_LEASE_TTL_MS, &generation, err) < 0) {
		if (err->code == ENOSYS) { /* one host: no nodes */
			free(c);
			return 0;
		}
		goto fail;
	}
	c->self.generation = generation;
	c->renew = event_new(d->base, -1, EV_PERSIST, renew, c);
	if (!c->renew || event_add(c->renew, &every) < 0) {
		hu_err_set(err, ENOMEM, "cluster: lease timer");
		goto fail;
	}
	d->cluster = c;
	hu_log(HU_LOG_INFO, NULL, 0,
	       "node %s at %s registered (generation %" PRId64 ", lease %d s renewed every %d s; memory %" PRIu64
	       " MiB, cpu %" PRIu64 " m, pids %" PRIu64 ", max %u sandboxes)",
	       c->self.name, c->self.address, generation, HU_LEASE_TTL_MS / 1000, HU_LEASE_RENEW_MS / 1000,
	       c->self.memory_bytes >> 20, c->self.cpu_millis, c->self.pids, c->self.max_sandboxes);
	return 0;
fail:
	if (c->renew)
		event_free(c->renew);
	free(c);
	hu_err_prefix(err, "register this node");
	return -1;
}

void hu_cluster_stop(struct hu_daemon *d)
{
	struct hu_cluster *c = d->cluster;

	if (!c)
		return;
	/* the lease is left to expire: the sandboxes run on, and the other
	 * nodes answer for them as this node's, unavailable, until it is back */
	event_free(c->renew);
	free(c);
	d->cluster = NULL;
}

const char *hu_cluster_node_name(const struct hu_daemon *d)
{
	return d->cluster ? d->cluster->self.name : NULL;
}
