/*
 * Placement on the PostgreSQL store (store.h hu_store_place). One
 * transaction behind an advisory lock, so that placements from every node
 * take turns: each one reads the loads with the reservations of those
 * before it, and the creates of a burst spread instead of all landing on
 * the node that was least loaded when the burst began. The statement after
 * the lock takes a fresh snapshot (READ COMMITTED), so it sees them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/pg_internal.h"
#include "util/hex.h"

/* "place" in ASCII, another key than the migrations' lock */
#define PLACE_LOCK "482164212577"
#define RESERVATION_S "30"

/* What a node commits: its sandbox rows (a paused one whose memory was
 * released holds none of it) and its live reservations. */
#define COMMITTED(col)                                                                                            \
	"(SELECT coalesce(sum(s." col "), 0) FROM sandboxes s WHERE s.owner = n.name AND"                         \
	" NOT (s.state = 'paused' AND s.released)) + (SELECT coalesce(sum(p." col "), 0) FROM placements p"       \
	" WHERE p.node = n.name AND p.until > now())"

/* Node n lists the template (its own data dir has it), or the create
 * names none. */
#define HAS_TEMPLATE(id) "(" id " = '' OR " id " = ANY(string_to_array(n.templates, ',')))"
/* A node without the template can fetch it (cluster/template_fetch.h) when
 * the store records it and a live node has it to send. */
#define FETCHABLE(id)                                                                                             \
	"(EXISTS (SELECT 1 FROM templates t WHERE t.id = " id ") AND EXISTS (SELECT 1 FROM nodes src"            \
	" WHERE src.lease_until > now() AND " id " = ANY(string_to_array(src.templates, ','))))"

/* The nodes that have the template come first, least loaded first among
 * them; one without it (which fetches it) only when none of those has
 * room. $8: the one node a volume ties the create to, or "". */
static const char place_sql[] =
	"WITH load AS (SELECT n.name, n.address, n.memory AS budget, n.cpu AS cpu_budget, n.pids AS pids_budget,"
	" n.max_sandboxes, " COMMITTED("memory") " AS mem, " COMMITTED("cpu") " AS cpu,"
	" (SELECT count(*) FROM sandboxes s WHERE s.owner = n.name) + (SELECT count(*) FROM placements p"
	" WHERE p.node = n.name AND p.until > now()) AS sandboxes"
	", " HAS_TEMPLATE("$1") " AS has_tpl"
	" FROM nodes n WHERE n.lease_until > now() AND NOT n.draining AND ($8 = '' OR n.name = $8)"
	" AND (" HAS_TEMPLATE("$1") " OR " FETCHABLE("$1") ")),"
	" chosen AS (SELECT name, address FROM load WHERE mem + $2::bigint <= budget"
	" AND (cpu_budget = 0 OR cpu + $3::bigint <= cpu_budget)"
	" AND (sandboxes + 1) * $4::bigint <= pids_budget AND (max_sandboxes = 0 OR sandboxes < max_sandboxes)"
	/* the placing node itself must hold its lease: one fenced out (or
	 * past its lease) places nothing, as it admits nothing */
	" AND EXISTS (SELECT 1 FROM nodes me WHERE me.name = $6 AND me.generation = $7::bigint"
	" AND me.lease_until > now())"
	" ORDER BY NOT has_tpl, (mem + $2::bigint)::float8 / greatest(budget, 1), sandboxes, name LIMIT 1)"
	" INSERT INTO placements (id, node, memory, cpu, pids, until, team, idem_key)"
	" SELECT $5, name, $2::bigint, $3::bigint, $4::bigint, now() + interval '" RESERVATION_S " seconds', $9, $10"
	" FROM chosen"
	" RETURNING node, (SELECT address FROM chosen)";

/* The node of the team's sandbox made with this Idempotency-Key, or of the
 * live reservation of a create that carries it (placed, its row not yet
 * written: the placements before this one committed theirs, under the
 * lock). The create goes there, where the sandbox, or the queue of its
 * create, answers it as a retry on one node is answered. 1 when there is
 * one (chosen filled), 0 when none, -1 on an error. */
static int by_key(struct pg_store *st, const struct hu_place_ask *ask, struct hu_node *chosen, hu_err *err)
{
	const char *p[] = {ask->team, ask->idem_key};
	PGresult *res;
	int found;

	if (hu_pg_exec(st, "placement: the Idempotency-Key's sandbox",
		       "SELECT n.name, n.address, n.lease_until > now() FROM sandboxes s JOIN nodes n ON n.name = s.owner"
		       " WHERE s.team = $1 AND s.idem_key = $2"
		       " UNION ALL SELECT n.name, n.address, n.lease_until > now() FROM placements p"
		       " JOIN nodes n ON n.name = p.node"
		       " WHERE p.team = $1 AND p.idem_key = $2 AND p.until > now() LIMIT 1",
		       2, p, &res, err) < 0)
		return -1;
	found = PQntuples(res) == 1;
	if (found) {
		snprintf(chosen->name, sizeof(chosen->name), "%s", PQgetvalue(res, 0, 0));
		snprintf(chosen->address, sizeof(chosen->address), "%s", PQgetvalue(res, 0, 1));
		chosen->alive = !strcmp(PQgetvalue(res, 0, 2), "t");
	}
	PQclear(res);
	return found;
}

/* No node has room: the least loaded one that could take the create
 * otherwise, with no reservation, so that its admission answers why (429
 * over its budget, 503 under pressure) rather than a node that is not
 * the place for it. ENOENT when no node is live, taking placements and
 * holding the template. */
static const char fallback_sql[] =
	"SELECT n.name, n.address FROM nodes n WHERE n.lease_until > now() AND NOT n.draining"
	" AND ($4 = '' OR n.name = $4) AND (" HAS_TEMPLATE("$1") " OR " FETCHABLE("$1") ")"
	" AND EXISTS (SELECT 1 FROM nodes me WHERE me.name = $2 AND me.generation = $3::bigint"
	" AND me.lease_until > now())"
	" ORDER BY NOT " HAS_TEMPLATE("$1") ", (" COMMITTED("memory") ")::float8 / greatest(n.memory, 1), n.name LIMIT 1";

static int least_loaded(struct pg_store *st, const char *template_id, const char *node, struct hu_node *chosen,
			hu_err *err)
{
	const char *p[] = {template_id, st->node, st->generation, node};
	PGresult *res;
	int rc = 0;

	if (hu_pg_exec(st, "placement: the least loaded node", fallback_sql, 4, p, &res, err) < 0)
		return -1;
	if (PQntuples(res) != 1) {
		if (*node)
			rc = hu_err_set(err, -ENOENT, "node %.64s takes no placements (down or draining)", node);
		else
			rc = hu_err_set(err, -ENOENT, "no node takes placements and has (or can fetch) template '%.64s'",
					template_id);
	} else {
		snprintf(chosen->name, sizeof(chosen->name), "%s", PQgetvalue(res, 0, 0));
		snprintf(chosen->address, sizeof(chosen->address), "%s", PQgetvalue(res, 0, 1));
	}
	PQclear(res);
	return rc;
}

static int place_locked(struct pg_store *st, const struct hu_place_ask *ask, struct hu_node *chosen,
			char *placement, hu_err *err)
{
	char mem[24], cpu[24], pids[24];
	const char *key = ask->idem_key && *ask->idem_key ? ask->idem_key : NULL;
	const char *p[] = {ask->template_id ? ask->template_id : "", mem, cpu, pids, placement, st->node, st->generation,
			   ask->node ? ask->node : "", key ? ask->team : NULL, key};
	PGresult *res;
	int rc;

	if (key && (rc = by_key(st, ask, chosen, err)) != 0) {
		placement[0] = '\0';
		return rc < 0 ? -1 : 0;
	}
	snprintf(mem, sizeof(mem), "%" PRIu64, ask->memory_bytes);
	snprintf(cpu, sizeof(cpu), "%" PRIu64, ask->cpu_millis);
	snprintf(pids, sizeof(pids), "%" PRIu64, ask->pids);
	if (hu_random_hex(placement, 16, err) < 0)
		return -1;
	if (hu_pg_exec(st, "place a create", place_sql, 10, p, &res, err) < 0)
		return -1;
	chosen->alive = 1; /* both queries below pick among live nodes */
	if (PQntuples(res) != 1) {
		PQclear(res);
		placement[0] = '\0';
		return least_loaded(st, p[0], p[7], chosen, err);
	}
	snprintf(chosen->name, sizeof(chosen->name), "%s", PQgetvalue(res, 0, 0));
	snprintf(chosen->address, sizeof(chosen->address), "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	return 0;
}

int hu_pg_place(struct hu_store *base, const struct hu_place_ask *ask, struct hu_node *chosen, char *placement,
		hu_err *err)
{
	struct pg_store *st = hu_pg(base);
	hu_err ignored;

	memset(chosen, 0, sizeof(*chosen));
	placement[0] = '\0';
	if (st->in_tx)
		return hu_err_set(err, -EINVAL, "store: placement inside a transaction");
	if (!st->node[0])
		return hu_err_set(err, -EINVAL, "store: placement by a process that is no node");
	/* BEGIN and the lock in one round trip */
	if (hu_pg_simple(st, "placement", "BEGIN; SELECT pg_advisory_xact_lock(" PLACE_LOCK ")", err) < 0)
		return -1;
	if (place_locked(st, ask, chosen, placement, err) < 0) {
		if (st->conn)
			hu_pg_simple(st, "placement", "ROLLBACK", &ignored);
		placement[0] = '\0';
		return -1;
	}
	if (hu_pg_simple(st, "placement", "COMMIT", err) < 0) {
		placement[0] = '\0';
		return -1;
	}
	return 0;
}

int hu_pg_placement_done(struct hu_store *base, const char *placement, hu_err *err)
{
	const char *p[] = {placement};

	/* expired ones of any node go too: their creates are long over */
	return hu_pg_exec(hu_pg(base), "end a reservation",
			  "DELETE FROM placements WHERE id = $1 OR until < now() - interval '" RESERVATION_S " seconds'",
			  1, p, NULL, err);
}
