/*
 * The store `hutch serve` would use: the embedded SQLite file of one host,
 * or a PostgreSQL database that several nodes share. For PostgreSQL the
 * doctor connects (leaving the schema as it is), reads the server's version
 * and clock, and the nodes table: which leases are live, this node's among
 * them, and how far apart the nodes' clocks are. Leases are kept in the
 * server's clock, but a deadline is written in the clock of the node that
 * moved it, so nodes whose clocks disagree shorten or stretch each other's
 * sandboxes by the difference.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/doctor/doctor.h"
#include "daemon/core/config.h"
#include "daemon/store/store.h"

/* More apart than this and deadlines visibly move (timeouts are seconds). */
#define SKEW_WARN_MS 1000

struct nodes_seen {
	const char *self;
	int live, expired;
	int self_found, self_live;
	int64_t self_left_ms;
	int64_t skew_min, skew_max; /* over the live nodes */
	char expired_names[256];
};

static void node_seen(const struct hu_node *n, void *arg)
{
	struct nodes_seen *s = arg;

	if (!strcmp(n->name, s->self)) {
		s->self_found = 1;
		s->self_live = n->alive;
		s->self_left_ms = n->lease_left_ms;
	}
	if (!n->alive) {
		s->expired++;
		doctor_appendf(s->expired_names, sizeof(s->expired_names), "%s%s", s->expired > 1 ? ", " : "",
			       n->name);
		return;
	}
	if (!s->live++ || n->clock_skew_ms < s->skew_min)
		s->skew_min = n->clock_skew_ms;
	if (s->live == 1 || n->clock_skew_ms > s->skew_max)
		s->skew_max = n->clock_skew_ms;
}

static void report_schema(const struct hu_store_health *h, struct doctor_result *r)
{
	if (h->schema < 0)
		doctor_found(r, "no schema yet (the first `hutch serve` makes version %d)", h->schema_hutch);
	else if (h->schema < h->schema_hutch)
		doctor_found(r, "schema %d (the next `hutch serve` migrates it to %d)", h->schema, h->schema_hutch);
	else if (h->schema > h->schema_hutch)
		doctor_verdict(r, DOCTOR_FAIL, "this hutch: the schema is version %d, newer than this hutch's %d"
			       " (upgrade hutch)", h->schema, h->schema_hutch);
	else
		doctor_found(r, "schema %d", h->schema);
}

static void report_nodes(struct hu_store *st, const char *self, struct doctor_result *r)
{
	struct nodes_seen s = {.self = self};
	hu_err err;

	if (hu_store_node_each(st, node_seen, &s, &err) < 0) {
		doctor_verdict(r, DOCTOR_WARN, "the node checks: cannot list the nodes: %s", err.msg);
		return;
	}
	doctor_found(r, "%d node%s with a live lease", s.live, s.live == 1 ? "" : "s");
	if (s.expired)
		doctor_found(r, "expired: %s (their sandboxes are answered as unavailable)", s.expired_names);
	if (!s.self_found)
		doctor_found(r, "this node (%s) has not registered yet", self);
	else if (s.self_live)
		doctor_found(r, "this node (%s): lease live for %" PRId64 ".%01" PRId64 " s more", self,
			     s.self_left_ms / 1000, s.self_left_ms % 1000 / 100);
	else
		doctor_found(r, "this node (%s): lease expired %" PRId64 " s ago (not running, or it lost the store)",
			     self, -s.self_left_ms / 1000);
	if (s.live > 1) {
		doctor_found(r, "the live nodes' clocks are %" PRId64 " ms apart", s.skew_max - s.skew_min);
		if (s.skew_max - s.skew_min > SKEW_WARN_MS)
			doctor_verdict(r, DOCTOR_WARN, "exact deadlines: a timeout moved on one node is off by the"
				       " clocks' difference on another (run NTP on every node)");
	}
}

static void check_postgresql(const char *location, const char *self, struct doctor_result *r)
{
	struct hu_store *st;
	struct hu_store_health h;
	hu_err err;

	/* never print the URI: it may carry a password */
	if (hu_store_open_to_inspect(location, &st, &err) < 0) {
		doctor_verdict(r, DOCTOR_FAIL, "`hutch serve` with store = postgresql://...: %s", err.msg);
		return;
	}
	if (hu_store_health(st, &h, &err) < 0) {
		doctor_verdict(r, DOCTOR_FAIL, "`hutch serve` with this store: %s", err.msg);
		hu_store_close(st);
		return;
	}
	doctor_found(r, "postgresql %s, reached in %" PRId64 ".%03" PRId64 " ms", h.server, h.round_trip_us / 1000,
		     h.round_trip_us % 1000);
	report_schema(&h, r);
	doctor_found(r, "this host's clock is %+" PRId64 " ms from the server's", h.skew_ms);
	if (h.skew_ms > SKEW_WARN_MS || h.skew_ms < -SKEW_WARN_MS)
		doctor_verdict(r, DOCTOR_WARN, "exact deadlines for this node's writes (run NTP)");
	if (h.schema >= 0)
		report_nodes(st, self, r);
	hu_store_close(st);
}

void doctor_check_store(const struct doctor_ctx *cx, struct doctor_result *r)
{
	char *args[] = {"doctor", "--config", (char *)cx->config_path, NULL};
	struct hu_config cfg;
	char self[HU_NODE_NAME_MAX];
	hu_err err;

	if (hu_config_from_args(&cfg, cx->config_path ? 3 : 1, args, &err) < 0) {
		doctor_verdict(r, DOCTOR_FAIL, "`hutch serve`: configuration: %s", err.msg);
		return;
	}
	if (!cfg.store[0]) {
		doctor_found(r, "sqlite in %s/hutch.db (embedded, one host)", cfg.data_dir);
		return;
	}
	hu_config_node_name(&cfg, self, sizeof(self));
	check_postgresql(hu_config_store_location(&cfg), self, r);
}
