/*
 * Placement of a create on a node of the cluster (forward.h
 * hu_cluster_place): what the create asks (its template, the node its
 * volumes live on, the default budgets), the store's choice
 * (hu_store_place, one transaction), then the create forwarded to that
 * node, or made here, once the template is here (template_fetch.h).
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/cluster_internal.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/template_fetch.h"
#include "daemon/common/log.h"

/* The node whose disk holds the volumes the create mounts ("" when none of
 * them is tied to one). A volume the team does not have is left to the
 * create, which answers 404 for it. -1 with err: volumes on two nodes, or
 * the store failed. */
static int volume_node(struct hu_daemon *d, const char *team, const json_t *body, char *node, size_t cap,
		       char *volume, size_t vcap, hu_err *err)
{
	const json_t *mounts = json_object_get(body, "volumeMounts"), *m;
	struct hu_volume v;
	size_t i;

	node[0] = volume[0] = '\0';
	if (!json_is_array(mounts))
		return 0;
	json_array_foreach(mounts, i, m) {
		const json_t *name = json_object_get(m, "name");
		if (!json_is_string(name))
			continue;
		if (hu_store_volume_find(d->store, team, json_string_value(name), &v, err) < 0) {
			if (err->code == ENOENT)
				continue;
			return -1;
		}
		if (!v.node[0])
			continue;
		if (node[0] && strcmp(node, v.node))
			return hu_err_set(err, -EINVAL,
					  "volumes '%s' and '%s' live on different nodes (%s and %s): a sandbox can mount"
					  " volumes of one node only",
					  volume, v.name, node, v.node);
		snprintf(node, cap, "%s", v.node);
		snprintf(volume, vcap, "%s", v.name);
	}
	return 0;
}

/* Placement found no place on the volume's node: say why, by the node's
 * state. */
static void volume_node_unavailable(struct hu_req *r, const char *volume, const char *node)
{
	struct hu_node n;
	hu_err err;
	int found = hu_cluster_node_find(hu_req_daemon(r), node, &n, &err);

	if (found < 0) {
		hu_err_prefix(&err, "placement");
		hu_reply_err(r, &err);
		return;
	}
	hu_reply_header(r, "Retry-After", "1");
	hu_reply_error(r, 503, "volume '%s' lives on node %s, which %s: a sandbox that mounts it runs only there",
		       volume, node,
		       !found ? "is no longer registered" : !n.alive ? "is down (its lease has expired)"
		       : n.draining ? "is draining (it takes no new sandboxes)" : "takes no placements now");
}

int hu_cluster_place(struct hu_req *r, bool forwarded, char *placement, hu_handler create)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct hu_cluster *c = d->cluster;
	char template_id[HU_ID_MAX], vnode[HU_NODE_NAME_MAX], volume[HU_VOLUME_NAME_MAX];
	struct hu_node chosen;
	json_t *body = NULL;
	hu_err err;

	placement[0] = '\0';
	if (!c || !c->secret || !d->store)
		return 0;
	if (hu_req_json(r, &body) < 0)
		return 1; /* answered 400 */
	const json_t *tpl = json_object_get(body, "templateID");
	snprintf(template_id, sizeof(template_id), "%s", json_is_string(tpl) ? json_string_value(tpl) : "base");
	/* a create sent here by placement is made here, its template fetched
	 * first when this node does not have it */
	if (forwarded) {
		json_decref(body);
		return hu_cluster_template_fetch(r, template_id, create, "");
	}
	if (volume_node(d, r->principal, body, vnode, sizeof(vnode), volume, sizeof(volume), &err) < 0) {
		json_decref(body);
		hu_reply_err(r, &err);
		return 1;
	}
	struct hu_place_ask ask = {
		.team = r->principal,
		.idem_key = hu_req_header(r, "Idempotency-Key"),
		.template_id = template_id,
		.memory_bytes = d->cfg.default_memory_bytes,
		.cpu_millis = d->cfg.default_cpu_millis,
		.pids = d->cfg.default_pids,
		.node = vnode,
	};
	int rc = hu_store_place(d->store, &ask, &chosen, placement, &err);
	json_decref(body);
	if (rc < 0) {
		placement[0] = '\0';
		if (err.code == ENOENT && vnode[0]) {
			volume_node_unavailable(r, volume, vnode);
			return 1;
		}
		if (err.code == ENOENT) /* none fits: this node tries, and says why it cannot */
			return hu_cluster_template_fetch(r, template_id, create, "");
		hu_err_prefix(&err, "placement");
		hu_reply_err(r, &err);
		return 1;
	}
	if (!strcmp(chosen.name, c->self.name))
		return hu_cluster_template_fetch(r, template_id, create, placement);
	if (!chosen.alive) { /* the key's sandbox (or its create) is on a node that is down */
		hu_reply_header(r, "Retry-After", "5");
		hu_reply_error(r, 503, "the sandbox of Idempotency-Key '%s' is on node %s, which is unavailable (its lease"
			       " has expired)", ask.idem_key, chosen.name);
		return 1;
	}
	hu_cluster_forward(r, &chosen, placement, HU_FWD_BUFFERED);
	placement[0] = '\0';
	return 1;
}

void hu_cluster_placed(struct hu_daemon *d, const char *placement)
{
	hu_err err;

	if (placement[0] && d->store && hu_store_placement_done(d->store, placement, &err) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "placement %s: %s (it expires by itself)", placement, err.msg);
}

struct hu_placed_later {
	struct hu_placed_later *next;
	char id[HU_PLACEMENT_ID_MAX];
};

static void end_queued(evutil_socket_t fd, short what, void *arg)
{
	struct hu_cluster *c = arg;
	struct hu_placed_later *q;

	while ((q = c->placed_later)) {
		c->placed_later = q->next;
		hu_cluster_placed(c->d, q->id);
		free(q);
	}
}

void hu_cluster_placed_later(struct hu_cluster *c, const char *placement)
{
	struct hu_placed_later *q;

	if (!placement[0])
		return;
	if (!c->placed_ender || !(q = calloc(1, sizeof(*q)))) {
		hu_cluster_placed(c->d, placement);
		return;
	}
	snprintf(q->id, sizeof(q->id), "%s", placement);
	q->next = c->placed_later;
	c->placed_later = q;
	/* the loop polls after this callback (docs/architecture.md "The loop's
	 * order"): the answers' writes, at the highest priority, run first */
	event_active(c->placed_ender, EV_TIMEOUT, 0);
}

int hu_cluster_place_init(struct hu_cluster *c, hu_err *err)
{
	if (!(c->placed_ender = event_new(c->d->base, -1, 0, end_queued, c)))
		return hu_err_set(err, -ENOMEM, "cluster: placement reservations");
	return 0;
}

void hu_cluster_place_stop(struct hu_cluster *c)
{
	end_queued(-1, 0, c);
	if (c->placed_ender) {
		event_free(c->placed_ender);
		c->placed_ender = NULL;
	}
}
