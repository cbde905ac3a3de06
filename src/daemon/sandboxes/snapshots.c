/* Snapshots of sandboxes' files (snapshots.h). */
#include "daemon/sandboxes/snapshots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "daemon/common/fault.h"
#include "daemon/common/log.h"
#include "daemon/sandboxes/templates.h"
#include "daemon/store/store.h"
#include "util/clock.h"

#define ID_LEN 20 /* "s" + 19 of [a-z0-9], like sandbox ids */

int hu_snapshot_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= HU_SNAPSHOT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return 0;
	}
	return 1;
}

static int new_id(char *id, hu_err *err)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint8_t rnd[64];
	size_t n = 0;

	id[n++] = 's';
	while (n < ID_LEN) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return hu_err_sys(err, "getrandom");
		for (size_t i = 0; i < sizeof(rnd) && n < ID_LEN; i++)
			if (rnd[i] < 252) /* uniform: 252 = 7 * 36 */
				id[n++] = alphabet[rnd[i] % 36];
	}
	id[n] = '\0';
	return 0;
}

/* The files of s at this instant: a running sandbox is frozen for the copy. */
static int copy_files(struct hu_sbx *s, const char *snap_id, hu_err *err)
{
	int frozen = 0;
	hu_err e;

	int64_t t0 = hu_mono_ms();
	if (s->state == HU_SBX_RUNNING) {
		if (hu_sandbox_freeze(s->rt, err) < 0)
			return -1;
		frozen = 1;
	}
	int rc = hu_sandbox_snapshot(s->rt, snap_id, err);
	hu_fault_point("snapshot.made");
	/* a crash before the thaw leaves it frozen: the next start thaws a
	 * sandbox stored as running */
	if (frozen && hu_sandbox_thaw(s->rt, &e) < 0)
		hu_log(HU_LOG_WARN, s->id, 0, "%s", e.msg);
	/* the whole window: freeze, copy, thaw */
	if (rc == 0)
		hu_log(HU_LOG_INFO, s->id, 0, "snapshot %s of its files taken (%s for %lld ms)", snap_id,
		       frozen ? "frozen" : "paused", (long long)(hu_mono_ms() - t0));
	return rc;
}

int hu_snapshot_take(struct hu_daemon *d, struct hu_sbx *s, const char *name, enum hu_snapshot_state state,
		     struct hu_snapshot_row *out, hu_err *err)
{
	struct hu_snapshot_row row = {0}, old = {0};
	int replace = 0;
	hu_err ignored;

	if (name && *name && !hu_snapshot_name_valid(name))
		return hu_err_set(err, -EINVAL, "snapshot name '%.64s': 1 to 63 of A-Z a-z 0-9 . _ -, starting with a letter or digit", name);
	struct hu_tpl_meta tpl;
	if (name && *name && hu_template_lookup(d, s->team, name, &tpl, &ignored) == 0) {
		/* a snapshot's name is looked up before templates: it must not
		 * hide one the team uses */
		hu_tpl_meta_free(&tpl);
		return hu_err_set(err, -EEXIST, "'%.64s' names a template; choose another name", name);
	}
	if (name && *name && hu_store_snapshot_find(d->store, s->team, name, &old, &ignored) == 0) {
		if (!strcmp(old.id, name))
			return hu_err_set(err, -EEXIST, "'%.64s' is a snapshot id", name);
		replace = 1;
	}
	if (new_id(row.id, err) < 0)
		return -1;
	snprintf(row.team, sizeof(row.team), "%s", s->team);
	snprintf(row.sandbox_id, sizeof(row.sandbox_id), "%s", s->id);
	snprintf(row.template_id, sizeof(row.template_id), "%s", s->template_id);
	row.state = HU_SNAP_CREATING;
	row.created_at_ms = hu_wall_ms();
	row.cpu_millis = s->cpu_millis;
	row.memory_bytes = s->memory_bytes;
	row.disk_bytes = s->disk_bytes;
	/* the intent first: a start that finds it not ready undoes it */
	if (hu_store_snapshot_put(d->store, &row, err) < 0)
		return -1;
	hu_fault_point("snapshot.stored");
	if (copy_files(s, row.id, err) < 0)
		goto fail;
	row.state = state;
	if (replace) {
		/* the name moves in one transaction; the old files go after */
		if (hu_store_begin(d->store, err) < 0)
			goto fail;
		snprintf(row.name, sizeof(row.name), "%s", name);
		if (hu_store_snapshot_delete(d->store, old.id, err) < 0 || hu_store_snapshot_put(d->store, &row, err) < 0) {
			hu_store_commit(d->store, &ignored);
			goto fail;
		}
		if (hu_store_commit(d->store, err) < 0)
			goto fail;
		if (hu_snapshot_delete(d->rt, old.id, &ignored) < 0)
			hu_log(HU_LOG_WARN, NULL, 0, "snapshot %s: %s (removed at the next start)", old.id, ignored.msg);
		else
			hu_log(HU_LOG_INFO, NULL, 0, "snapshot %s replaced by %s under the name %s", old.id, row.id, name);
	} else {
		if (name && *name)
			snprintf(row.name, sizeof(row.name), "%s", name);
		if (hu_store_snapshot_put(d->store, &row, err) < 0)
			goto fail;
	}
	*out = row;
	return 0;
fail:
	hu_snapshot_delete(d->rt, row.id, &ignored);
	hu_store_snapshot_delete(d->store, row.id, &ignored);
	hu_err_prefix(err, "snapshot of sandbox %s", s->id);
	return -1;
}

int hu_snapshot_lookup(struct hu_daemon *d, const char *team, const char *key, int forks,
		       struct hu_snapshot_row *out, hu_err *err)
{
	char bare[HU_SNAPSHOT_NAME_MAX + 16];
	const char *colon;

	snprintf(bare, sizeof(bare), "%s", key);
	colon = strrchr(bare, ':');
	if (colon && (!strcmp(colon, ":default") || !strcmp(colon, ":latest")))
		bare[colon - bare] = '\0';
	if (!d->store || hu_store_snapshot_find(d->store, team, bare, out, err) < 0)
		return d->store ? -1 : hu_err_set(err, -ENOENT, "no store");
	if (out->state == HU_SNAP_READY || (forks && out->state == HU_SNAP_FORK))
		return 0;
	return hu_err_set(err, -ENOENT, "snapshot '%.64s' not found", key);
}

int hu_snapshot_remove(struct hu_daemon *d, const struct hu_snapshot_row *row, hu_err *err)
{
	/* the files first: a row without files cannot be used, files without
	 * a row are removed at the next start */
	if (hu_snapshot_delete(d->rt, row->id, err) < 0 || hu_store_snapshot_delete(d->store, row->id, err) < 0) {
		hu_err_prefix(err, "remove snapshot %s", row->id);
		return -1;
	}
	return 0;
}

struct tpl_use {
	const char *template_id;
	int found;
};

static void uses(const struct hu_snapshot_row *row, void *arg)
{
	struct tpl_use *u = arg;
	if (!strcmp(row->template_id, u->template_id))
		u->found = 1;
}

int hu_snapshot_uses_template(struct hu_daemon *d, const char *template_id)
{
	struct tpl_use u = {.template_id = template_id};
	hu_err e;

	if (!d->store)
		return 0;
	if (hu_store_snapshot_each(d->store, NULL, uses, &u, &e) < 0)
		return 1; /* cannot tell: keep the template */
	return u.found;
}

/* ---- start-up ------------------------------------------------------------ */

struct rows {
	struct hu_snapshot_row *v;
	size_t n, cap;
	int oom;
};

static void collect(const struct hu_snapshot_row *row, void *arg)
{
	struct rows *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct hu_snapshot_row *v = realloc(l->v, cap * sizeof(*v));
		if (!v) {
			l->oom = 1;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *row;
}

struct scan {
	struct hu_daemon *d;
	const struct rows *rows;
};

static int kept_files(const char *name, void *arg)
{
	struct scan *sc = arg;
	hu_err e;

	for (size_t i = 0; i < sc->rows->n; i++)
		if (!strcmp(sc->rows->v[i].id, name) && sc->rows->v[i].state == HU_SNAP_READY)
			return 0;
	hu_log(HU_LOG_INFO, NULL, 0, "removing snapshot files %s that no snapshot owns", name);
	if (hu_snapshot_delete(sc->d->rt, name, &e) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "%s", e.msg);
	return 0;
}

static int here(const char *name, void *arg)
{
	const char *id = arg;
	return !strcmp(name, id);
}

/* A row not ready: this node's interrupted work when the store is this
 * host's alone, when its files are here, or when it is too old to be
 * anyone's work in progress; otherwise it may be another node's snapshot
 * being made (a store shared by nodes). */
#define STALE_MS (3600 * 1000)

void hu_snapshots_reconcile(struct hu_daemon *d)
{
	struct rows l = {0};
	hu_err e;

	if (!d->store)
		return;
	if (hu_store_snapshot_each(d->store, NULL, collect, &l, &e) < 0 || l.oom) {
		hu_log(HU_LOG_WARN, NULL, 0, "snapshots: %s", l.oom ? "out of memory" : e.msg);
		free(l.v);
		return;
	}
	/* one host's store (SQLite): every row is this node's */
	int shared = strcmp(hu_store_backend_name(d->store), "sqlite") != 0;
	for (size_t i = 0; i < l.n; i++) {
		if (l.v[i].state == HU_SNAP_READY)
			continue;
		int local = !shared || hu_runtime_snapshots(d->rt, here, l.v[i].id, &e) > 0;
		if (!local && hu_wall_ms() - l.v[i].created_at_ms < STALE_MS)
			continue;
		hu_log(HU_LOG_INFO, NULL, 0, "undoing %s %s of sandbox %s, interrupted by the last stop",
		       l.v[i].state == HU_SNAP_FORK ? "the fork point" : "the snapshot", l.v[i].id, l.v[i].sandbox_id);
		if (hu_snapshot_remove(d, &l.v[i], &e) < 0)
			hu_log(HU_LOG_WARN, NULL, 0, "%s", e.msg);
		l.v[i].state = HU_SNAP_CREATING; /* its files, if any are left, go below */
	}
	struct scan sc = {.d = d, .rows = &l};
	if (hu_runtime_snapshots(d->rt, kept_files, &sc, &e) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "snapshots: %s", e.msg);
	free(l.v);
}
