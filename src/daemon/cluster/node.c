/*
 * Registration and the lease (node.h). The renewal is one short UPDATE on
 * the store's connection, from a timer on the event loop: the loop waits
 * for the store on every control-plane call already, and the store's
 * connection bounds each call (connect, statement and TCP timeouts), so a
 * renewal costs what a request costs. Leases live in the database's clock
 * (store/pg_nodes.c); the node keeps a conservative view of its own.
 */
#include "daemon/cluster/node.h"

#include <dirent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/cluster/cluster_internal.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/template_fetch.h"
#include "daemon/cluster/template_stale.h"
#include "daemon/common/log.h"
#include "daemon/sandboxes/admission.h"
#include "daemon/sandboxes/templates.h"
#include "daemon/store/store.h"

/* The defaults of node.name (<host name>-<port>: two nodes on one host
 * differ by port) and node.address (what this node listens on, https://
 * with tls_cert). */
static void identity(const struct hu_config *cfg, struct hu_node *n)
{
	hu_config_node_name(cfg, n->name, sizeof(n->name));
	/* a listener with TLS is reached over TLS */
	const char *scheme = cfg->tls_cert[0] ? "https" : "http";
	if (cfg->node_address[0])
		snprintf(n->address, sizeof(n->address), "%s", cfg->node_address);
	else if (strchr(cfg->listen_addr, ':'))
		snprintf(n->address, sizeof(n->address), "%s://[%s]:%u", scheme, cfg->listen_addr, cfg->port);
	else
		snprintf(n->address, sizeof(n->address), "%s://%s:%u", scheme, cfg->listen_addr, cfg->port);
	snprintf(n->labels, sizeof(n->labels), "%s", cfg->node_labels);
}

/* The templates of this node's data dir, comma-separated (placement sends
 * a create to a node that has its template first, and other nodes fetch
 * it from one: template_fetch.h). A name that does not
 * fit the list is left out: that template is used here only by creates
 * sent to this node. */
static void templates(struct hu_daemon *d, char *out, size_t cap)
{
	char dir[PATH_MAX], meta[PATH_MAX];
	size_t used = 0;
	struct dirent *e;
	DIR *dh;

	out[0] = '\0';
	hu_templates_dir(d, dir, sizeof(dir));
	if (!(dh = opendir(dir)))
		return;
	while ((e = readdir(dh))) {
		size_t n = strlen(e->d_name);
		if (e->d_name[0] == '.' || strspn(e->d_name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
							     "0123456789._-") != n)
			continue;
		/* a built template has its template.json; base has its rootfs only */
		snprintf(meta, sizeof(meta), "%s/%s/template.json", dir, e->d_name);
		int built = access(meta, R_OK) == 0;
		snprintf(meta, sizeof(meta), "%s/%s/rootfs", dir, e->d_name);
		if ((!built && access(meta, X_OK) < 0) || used + n + 2 > cap)
			continue;
		used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? "," : "", e->d_name);
	}
	closedir(dh);
}

/* What placement may count on here: the admission budgets, and the
 * templates. */
static int capacity(struct hu_daemon *d, struct hu_node *n, hu_err *err)
{
	struct hu_capacity cap;

	if (hu_capacity_read(d, &cap, err) < 0)
		return -1;
	n->memory_bytes = cap.mem_budget;
	/* 0: no CPU budget (admission.cpu_overcommit 0, the default: CPU is
	 * shared, not exhausted), so placement does not count CPU either */
	n->cpu_millis = d->cfg.admission_cpu_overcommit > 0 ? cap.cpu_budget_millis : 0;
	n->pids = cap.pids_budget;
	n->max_sandboxes = d->cfg.max_sandboxes;
	templates(d, n->templates, sizeof(n->templates));
	return 0;
}

static void renew(evutil_socket_t fd, short what, void *arg)
{
	struct hu_cluster *c = arg;
	hu_err err;

	/* budgets that cannot be read now stay as they were published */
	if (capacity(c->d, &c->self, &err) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "node %s: read the budgets: %s", c->self.name, err.msg);
	if (hu_store_node_renew(c->d->store, &c->self, HU_LEASE_TTL_MS, &err) == 0) {
		if (c->failing)
			hu_log(HU_LOG_INFO, NULL, 0, "node %s: lease renewed again", c->self.name);
		c->failing = 0;
		hu_cluster_templates_publish(c);
		hu_cluster_templates_sweep(c);
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
	if (d->cfg.cluster_secret_len)
		c->secret = d->cfg.cluster_secret;
	c->secret_len = d->cfg.cluster_secret_len;
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
	if (hu_cluster_template_fetch_init(c, err) < 0)
		goto fail;
	if (hu_cluster_place_init(c, err) < 0)
		goto fail;
	c->renew = event_new(d->base, -1, EV_PERSIST, renew, c);
	if (!c->renew || event_add(c->renew, &every) < 0) {
		hu_err_set(err, ENOMEM, "cluster: lease timer");
		goto fail;
	}
	d->cluster = c;
	hu_cluster_templates_publish(c);
	hu_log(HU_LOG_INFO, NULL, 0,
	       "node %s at %s registered (generation %" PRId64 ", lease %d s renewed every %d s; memory %" PRIu64
	       " MiB, cpu %" PRIu64 " m, pids %" PRIu64 ", max %u sandboxes)",
	       c->self.name, c->self.address, generation, HU_LEASE_TTL_MS / 1000, HU_LEASE_RENEW_MS / 1000,
	       c->self.memory_bytes >> 20, c->self.cpu_millis, c->self.pids, c->self.max_sandboxes);
	return 0;
fail:
	if (c->renew)
		event_free(c->renew);
	if (c->fetch_reaper)
		event_free(c->fetch_reaper);
	if (c->placed_ender)
		event_free(c->placed_ender);
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
	hu_cluster_forward_abort_all(c);
	hu_cluster_template_fetch_abort_all(c);
	hu_cluster_place_stop(c);
	event_free(c->renew);
	free(c);
	d->cluster = NULL;
}

const char *hu_cluster_node_name(const struct hu_daemon *d)
{
	return d->cluster ? d->cluster->self.name : NULL;
}

struct node_find {
	const char *name;
	struct hu_node *out;
	int found;
};

static void match_node(const struct hu_node *n, void *arg)
{
	struct node_find *f = arg;

	if (strcmp(n->name, f->name))
		return;
	*f->out = *n;
	f->found = 1;
}

int hu_cluster_node_find(struct hu_daemon *d, const char *name, struct hu_node *out, hu_err *err)
{
	struct node_find f = {name, out, 0};

	if (hu_store_node_each(d->store, match_node, &f, err) < 0)
		return -1;
	return f.found;
}
