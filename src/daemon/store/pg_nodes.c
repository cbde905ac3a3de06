/*
 * The nodes table of the PostgreSQL store (store.h "nodes"). Leases are
 * kept in the database server's clock: a lease is `lease_until > now()`
 * there, whatever the nodes' clocks say. This process keeps its own view
 * on the monotonic clock, measured from before it sent the renewal, so it
 * never believes in a lease the database has already let expire.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/pg_internal.h"
#include "util/clock.h"

int hu_pg_node_live(struct pg_store *st, hu_err *err)
{
	if (!st->node[0] || hu_mono_ms() < st->lease_until_ms)
		return 0;
	return hu_err_set(err, -ENOTCONN, "node %s has no live lease (the store was out of reach?): it admits no"
			  " creates until it renews", st->node);
}

int hu_pg_node_register(struct hu_store *base, const struct hu_node *n, int64_t ttl_ms, int64_t *generation,
			hu_err *err)
{
	struct pg_store *st = hu_pg(base);
	char memory[24], cpu[24], pids[24], maxs[24], ttl[24];
	const char *p[] = {n->name, n->address, n->labels, memory, cpu, pids, maxs, ttl, n->templates};
	int64_t t0 = hu_mono_ms();
	PGresult *res;

	snprintf(memory, sizeof(memory), "%" PRIu64, n->memory_bytes);
	snprintf(cpu, sizeof(cpu), "%" PRIu64, n->cpu_millis);
	snprintf(pids, sizeof(pids), "%" PRIu64, n->pids);
	snprintf(maxs, sizeof(maxs), "%" PRIu32, n->max_sandboxes);
	snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
	/* a name registered again takes the row over with the next generation:
	 * a process still running under the old one fails its next renewal */
	if (hu_pg_exec(st, "register node",
		       "INSERT INTO nodes (name, address, labels, memory, cpu, pids, max_sandboxes, generation,"
		       " lease_until, registered_at, templates) VALUES ($1, $2, $3, $4, $5, $6, $7, 1,"
		       " now() + $8::bigint * interval '1 millisecond', now(), $9)"
		       " ON CONFLICT (name) DO UPDATE SET address = $2, labels = $3, memory = $4, cpu = $5, pids = $6,"
		       " max_sandboxes = $7, generation = nodes.generation + 1,"
		       " lease_until = now() + $8::bigint * interval '1 millisecond', registered_at = now(), templates = $9"
		       " RETURNING generation",
		       9, p, &res, err) < 0) {
		hu_err_prefix(err, "node %s", n->name);
		return -1;
	}
	*generation = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	snprintf(st->node, sizeof(st->node), "%s", n->name);
	snprintf(st->generation, sizeof(st->generation), "%" PRId64, *generation);
	st->lease_until_ms = t0 + ttl_ms;
	return 0;
}

int hu_pg_node_renew(struct hu_store *base, const struct hu_node *n, int64_t ttl_ms, hu_err *err)
{
	struct pg_store *st = hu_pg(base);
	char ttl[24], wall[24], memory[24], cpu[24], pids[24], maxs[24];
	const char *p[] = {st->node, st->generation, ttl, wall, memory, cpu, pids, maxs, n->templates};
	int64_t t0 = hu_mono_ms();
	PGresult *res;
	int renewed;

	if (!st->node[0])
		return hu_err_set(err, -EINVAL, "store: not registered as a node");
	snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
	snprintf(memory, sizeof(memory), "%" PRIu64, n->memory_bytes);
	snprintf(cpu, sizeof(cpu), "%" PRIu64, n->cpu_millis);
	snprintf(pids, sizeof(pids), "%" PRIu64, n->pids);
	snprintf(maxs, sizeof(maxs), "%" PRIu32, n->max_sandboxes);
	/* the node's clock as it sends, against the server's as it runs the
	 * statement: the skew, plus half a round trip (well under a ms here);
	 * and the budgets go with the lease: placement reads what holds now */
	snprintf(wall, sizeof(wall), "%" PRId64, hu_wall_ms());
	if (hu_pg_exec(st, "renew the lease",
		       "UPDATE nodes SET lease_until = now() + $3::bigint * interval '1 millisecond',"
		       " clock_skew_ms = $4::bigint - (extract(epoch FROM clock_timestamp()) * 1000)::bigint,"
		       " memory = $5, cpu = $6, pids = $7, max_sandboxes = $8, templates = $9"
		       " WHERE name = $1 AND generation = $2::bigint",
		       9, p, &res, err) < 0) {
		hu_err_prefix(err, "node %s", st->node);
		return -1;
	}
	renewed = !strcmp(PQcmdTuples(res), "1");
	PQclear(res);
	if (!renewed) {
		st->lease_until_ms = 0;
		return hu_err_set(err, -ESTALE, "node %s: registered again by another process (this one had generation"
				  " %s): fenced out", st->node, st->generation);
	}
	st->lease_until_ms = t0 + ttl_ms;
	return 0;
}

int hu_pg_node_each(struct hu_store *base, void (*fn)(const struct hu_node *n, void *arg), void *arg, hu_err *err)
{
	PGresult *res;
	struct hu_node n;

	if (hu_pg_exec(hu_pg(base), "list nodes",
		       "SELECT name, address, labels, memory, cpu, pids, max_sandboxes, generation, lease_until > now(),"
		       " (extract(epoch FROM lease_until - now()) * 1000)::bigint, clock_skew_ms, templates, draining"
		       " FROM nodes ORDER BY name",
		       0, NULL, &res, err) < 0)
		return -1;
	for (int r = 0; r < PQntuples(res); r++) {
		memset(&n, 0, sizeof(n));
		snprintf(n.name, sizeof(n.name), "%s", PQgetvalue(res, r, 0));
		snprintf(n.address, sizeof(n.address), "%s", PQgetvalue(res, r, 1));
		snprintf(n.labels, sizeof(n.labels), "%s", PQgetvalue(res, r, 2));
		n.memory_bytes = strtoull(PQgetvalue(res, r, 3), NULL, 10);
		n.cpu_millis = strtoull(PQgetvalue(res, r, 4), NULL, 10);
		n.pids = strtoull(PQgetvalue(res, r, 5), NULL, 10);
		n.max_sandboxes = (uint32_t)strtoul(PQgetvalue(res, r, 6), NULL, 10);
		n.generation = strtoll(PQgetvalue(res, r, 7), NULL, 10);
		n.alive = PQgetvalue(res, r, 8)[0] == 't';
		n.lease_left_ms = strtoll(PQgetvalue(res, r, 9), NULL, 10);
		n.clock_skew_ms = strtoll(PQgetvalue(res, r, 10), NULL, 10);
		snprintf(n.templates, sizeof(n.templates), "%s", PQgetvalue(res, r, 11));
		n.draining = PQgetvalue(res, r, 12)[0] == 't';
		fn(&n, arg);
	}
	PQclear(res);
	return 0;
}

int hu_pg_sandbox_owner(struct hu_store *base, const char *id, char *team, size_t n, struct hu_node *owner,
			hu_err *err)
{
	struct pg_store *st = hu_pg(base);
	const char *p[] = {id, st->node};
	PGresult *res;
	int rc = 0;

	if (hu_pg_exec(st, "find the owner of a sandbox",
		       "SELECT s.team, n.name, n.address, n.lease_until > now(),"
		       " (extract(epoch FROM n.lease_until - now()) * 1000)::bigint"
		       " FROM sandboxes s JOIN nodes n ON n.name = s.owner WHERE s.id = $1 AND s.owner <> $2",
		       2, p, &res, err) < 0)
		return -1;
	if (PQntuples(res) != 1) {
		rc = hu_err_set(err, -ENOENT, "sandbox %.64s: no other node owns it", id);
	} else {
		memset(owner, 0, sizeof(*owner));
		snprintf(team, n, "%s", PQgetvalue(res, 0, 0));
		snprintf(owner->name, sizeof(owner->name), "%s", PQgetvalue(res, 0, 1));
		snprintf(owner->address, sizeof(owner->address), "%s", PQgetvalue(res, 0, 2));
		owner->alive = PQgetvalue(res, 0, 3)[0] == 't';
		owner->lease_left_ms = strtoll(PQgetvalue(res, 0, 4), NULL, 10);
	}
	PQclear(res);
	return rc;
}

int hu_pg_node_set_draining(struct hu_store *base, const char *name, bool draining, hu_err *err)
{
	const char *p[] = {name, draining ? "true" : "false"};
	PGresult *res;
	int found;

	if (hu_pg_exec(hu_pg(base), draining ? "drain a node" : "undrain a node",
		       "UPDATE nodes SET draining = $2::boolean WHERE name = $1", 2, p, &res, err) < 0)
		return -1;
	found = !strcmp(PQcmdTuples(res), "1");
	PQclear(res);
	return found ? 0 : hu_err_set(err, -ENOENT, "no node %.64s in the store", name);
}

int hu_pg_node_remove(struct hu_store *base, const char *name, hu_err *err)
{
	struct pg_store *st = hu_pg(base);
	const char *p[] = {name};
	PGresult *res;

	/* one statement: a node whose lease is renewed, or that gets a
	 * sandbox, between a check and a delete is never removed */
	if (hu_pg_exec(st, "remove a node",
		       "WITH gone AS (DELETE FROM nodes WHERE name = $1 AND lease_until <= now()"
		       " AND NOT EXISTS (SELECT 1 FROM sandboxes WHERE owner = $1) RETURNING name)"
		       " SELECT (SELECT count(*) FROM gone),"
		       " (SELECT count(*) FROM nodes WHERE name = $1 AND lease_until > now()),"
		       " (SELECT count(*) FROM sandboxes WHERE owner = $1),"
		       " (SELECT count(*) FROM nodes WHERE name = $1)",
		       1, p, &res, err) < 0)
		return -1;
	long removed = strtol(PQgetvalue(res, 0, 0), NULL, 10), live = strtol(PQgetvalue(res, 0, 1), NULL, 10),
	     owned = strtol(PQgetvalue(res, 0, 2), NULL, 10), exists = strtol(PQgetvalue(res, 0, 3), NULL, 10);
	PQclear(res);
	if (removed)
		return 0;
	if (live)
		return hu_err_set(err, -EBUSY, "node %.64s has a live lease: stop it first (its lease expires 10 s after)",
				  name);
	if (owned)
		return hu_err_set(err, -EBUSY, "node %.64s still owns %ld sandbox%s: start it again to end them, or"
				  " kill them through any node", name, owned, owned == 1 ? "" : "es");
	if (!exists)
		return hu_err_set(err, -ENOENT, "no node %.64s in the store", name);
	return hu_err_set(err, -EBUSY, "node %.64s: its lease or sandboxes changed meanwhile; try again", name);
}
