/*
 * Listing sandboxes: GET /v2/sandboxes (filters, order, pages) and the
 * older GET /sandboxes (running ones, one page). A team sees only its own,
 * on every node of a cluster.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/handlers.h"
#include "daemon/api/api_json.h"
#include "daemon/api/api_sandboxes.h"
#include "daemon/api/metadata_filter.h"
#include "daemon/store/store.h"

struct matches {
	const struct hu_daemon *d;
	const char *team;
	const struct hu_list_query *q;
	struct hu_listed *items;
	size_t n, cap;
	size_t running; /* the team's running sandboxes, for X-Total-Running */
	int oom;
};

/* Order by (startedAt, id): ids break ties, so the order is total and a
 * page token is an exact position. */
static int cmp_position(int64_t a_ms, const char *a_id, int64_t b_ms, const char *b_id)
{
	if (a_ms != b_ms)
		return a_ms < b_ms ? -1 : 1;
	return strcmp(a_id, b_id);
}

static int cmp_asc(const void *a, const void *b)
{
	const struct hu_listed *x = a, *y = b;
	return cmp_position(x->started_at_ms, x->id, y->started_at_ms, y->id);
}

static int cmp_desc(const void *a, const void *b)
{
	return cmp_asc(b, a);
}

static int wanted(enum hu_sbx_state state, const char *id, const char *template_id, int64_t started_at_ms,
		  const json_t *metadata, const struct hu_list_query *q)
{
	if (!(q->states & HU_STATE_BIT(state)))
		return 0;
	if (q->template_id && strcmp(q->template_id, template_id))
		return 0;
	if (q->has_started_after && started_at_ms < q->started_after_ms)
		return 0;
	if (q->has_cursor) { /* strictly after the token's position */
		int c = cmp_position(started_at_ms, id, q->cursor_started_ms, q->cursor_id);
		if (q->asc ? c <= 0 : c >= 0)
			return 0;
	}
	return !q->metadata || hu_metadata_filter_match(q->metadata, metadata);
}

/* Room for one more item; NULL when out of memory. */
static struct hu_listed *next_item(struct matches *m)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct hu_listed *grown = realloc(m->items, cap * sizeof(*grown));
		if (!grown) {
			m->oom = 1;
			return NULL;
		}
		m->items = grown;
		m->cap = cap;
	}
	return &m->items[m->n++];
}

static int collect(struct hu_sbx *s, void *arg)
{
	struct matches *m = arg;
	struct hu_listed *v;

	if (strcmp(s->team, m->team))
		return 0;
	if (s->state == HU_SBX_RUNNING)
		m->running++;
	if (!wanted(s->state, s->id, s->template_id, s->started_at_ms, s->metadata, m->q))
		return 0;
	if (!(v = next_item(m)))
		return 1;
	hu_listed_of_sbx(s, v);
	return 0;
}

/* A row of another node's sandbox (the store selected the team's). */
static void collect_row(struct hu_sandbox_row *row, void *arg)
{
	struct matches *m = arg;
	struct hu_listed *v;

	if (m->oom)
		return;
	if (row->state == HU_SBX_RUNNING)
		m->running++;
	if (!wanted(row->state, row->id, row->template_id, row->started_at_ms, row->metadata, m->q))
		return;
	if ((v = next_item(m)))
		hu_listed_of_row(m->d, row, v);
}

static void matches_free(struct matches *m)
{
	for (size_t i = 0; i < m->n; i++)
		hu_listed_clear(&m->items[i]);
	free(m->items);
}

/* Answer one page of the sandboxes matching q; `paged` 0 = all of them.
 * A node of a cluster lists its own sandboxes from its registry and every
 * other node's from their rows in the store, which each owner keeps
 * current (docs/operations.md "Any node answers any call"). */
static void reply_list(struct hu_req *r, const struct hu_list_query *q, int paged)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct matches m = {.d = d, .team = r->principal, .q = q};
	size_t count;
	char num[32], token[HU_LIST_TOKEN_MAX];
	json_t *arr;
	hu_err err;

	hu_registry_each(d->reg, collect, &m);
	if (!m.oom && d->cluster && d->store && hu_store_sandbox_others(d->store, r->principal, collect_row, &m, &err) < 0) {
		matches_free(&m);
		/* a part of the list is out of reach: no list rather than a
		 * short one (a platform reclaiming from it would miss some) */
		hu_err_prefix(&err, "listing the other nodes' sandboxes");
		hu_reply_err(r, &err);
		return;
	}
	arr = json_array();
	if (!arr || m.oom) {
		json_decref(arr);
		matches_free(&m);
		hu_reply_error(r, 500, "out of memory listing sandboxes");
		return;
	}
	if (m.n > 1)
		qsort(m.items, m.n, sizeof(*m.items), q->asc ? cmp_asc : cmp_desc);
	count = paged && m.n > q->limit ? q->limit : m.n;
	for (size_t i = 0; i < count; i++) {
		if (json_array_append_new(arr, hu_listed_json(&m.items[i])) < 0) {
			json_decref(arr);
			matches_free(&m);
			hu_reply_error(r, 500, "out of memory listing sandboxes");
			return;
		}
	}
	if (count < m.n) {
		hu_list_token_encode(m.items[count - 1].started_at_ms, m.items[count - 1].id, token);
		hu_reply_header(r, "X-Next-Token", token);
	}
	snprintf(num, sizeof(num), "%zu", m.running);
	hu_reply_header(r, "X-Total-Running", num);
	matches_free(&m);
	hu_reply_json(r, 200, arr);
}

void hu_api_list_v2(struct hu_req *r)
{
	struct hu_list_params p = {
		.metadata = hu_req_query(r, "metadata"),
		.state = hu_req_query(r, "state"),
		.limit = hu_req_query(r, "limit"),
		.next_token = hu_req_query(r, "nextToken"),
		.order = hu_req_query(r, "order"),
		.started_after = hu_req_query(r, "startedAfter"),
		.template_id = hu_req_query(r, "template"),
	};
	struct hu_list_query q;
	hu_err err;

	if (hu_api_decode_list_query(&p, &q, &err) < 0) {
		hu_reply_error(r, 400, "%s", err.msg);
		return;
	}
	reply_list(r, &q, 1);
	hu_list_query_clear(&q);
}

/* The deprecated list: running sandboxes only, all in one answer. */
void hu_api_list_v1(struct hu_req *r)
{
	struct hu_list_params p = {.metadata = hu_req_query(r, "metadata"), .state = "running"};
	struct hu_list_query q;
	hu_err err;

	if (hu_api_decode_list_query(&p, &q, &err) < 0) {
		hu_reply_error(r, 400, "%s", err.msg);
		return;
	}
	reply_list(r, &q, 0);
	hu_list_query_clear(&q);
}
