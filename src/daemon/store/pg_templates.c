/*
 * The templates table of the PostgreSQL store (store.h "templates of a
 * shared store"): what a node built, so that the others can fetch it
 * (cluster/template_fetch.h). Which nodes have a template is the nodes'
 * own `templates` list, published with each lease renewal.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/pg_internal.h"

int hu_pg_template_record(struct hu_store *base, const struct hu_template_row *t, hu_err *err)
{
	char at[24];
	const char *p[] = {t->id, t->checksum, t->meta ? t->meta : "{}", t->node, at};

	snprintf(at, sizeof(at), "%" PRId64, t->created_ms);
	/* a template deleted and built again elsewhere is the later build */
	return hu_pg_exec(hu_pg(base), "record a template",
			  "INSERT INTO templates (id, checksum, meta, node, created_at) VALUES ($1, $2, $3, $4, $5)"
			  " ON CONFLICT (id) DO UPDATE SET checksum = $2, meta = $3, node = $4, created_at = $5"
			  " WHERE templates.created_at < $5::bigint",
			  5, p, NULL, err);
}

int hu_pg_template_find(struct hu_store *base, const char *id, struct hu_template_row *out, hu_err *err)
{
	struct pg_store *st = hu_pg(base);
	const char *p[] = {id, st->node};
	PGresult *res;
	int rc = 0;

	/* a source: a live node (draining ones too: they serve what they
	 * have) that lists the template, its builder first */
	if (hu_pg_exec(st, "find a template",
		       "SELECT t.id, t.checksum, t.meta, t.node, t.created_at, coalesce(s.name, ''), coalesce(s.address, '')"
		       " FROM templates t LEFT JOIN LATERAL (SELECT n.name, n.address FROM nodes n"
		       " WHERE n.lease_until > now() AND n.name <> $2 AND t.id = ANY(string_to_array(n.templates, ','))"
		       " ORDER BY n.name = t.node DESC, n.name LIMIT 1) s ON true WHERE t.id = $1",
		       2, p, &res, err) < 0)
		return -1;
	if (PQntuples(res) != 1) {
		rc = hu_err_set(err, -ENOENT, "template '%.64s' is not recorded in the store", id);
	} else {
		snprintf(out->id, sizeof(out->id), "%s", PQgetvalue(res, 0, 0));
		snprintf(out->checksum, sizeof(out->checksum), "%s", PQgetvalue(res, 0, 1));
		out->meta = strdup(PQgetvalue(res, 0, 2));
		snprintf(out->node, sizeof(out->node), "%s", PQgetvalue(res, 0, 3));
		out->created_ms = strtoll(PQgetvalue(res, 0, 4), NULL, 10);
		snprintf(out->source.name, sizeof(out->source.name), "%s", PQgetvalue(res, 0, 5));
		snprintf(out->source.address, sizeof(out->source.address), "%s", PQgetvalue(res, 0, 6));
		out->source.alive = out->source.name[0] != '\0';
		if (!out->meta)
			rc = hu_err_set(err, -ENOMEM, "template '%.64s'", id);
	}
	PQclear(res);
	return rc;
}
