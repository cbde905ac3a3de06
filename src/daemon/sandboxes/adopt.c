/*
 * Start-up reconciliation (lifecycle.h, hu_lifecycle_adopt): the store says
 * what should exist, the host says what does. Every stored sandbox ends in
 * exactly one of: adopted (running or paused, as stored), finished (an
 * interrupted create or kill is completed), or lost (cleaned up, and
 * recorded so that the API can say so). Nothing is left without an owner.
 */
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/sbx_metrics.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/common/stats.h"
#include "daemon/sandboxes/sbx_store.h"
#include "daemon/store/store.h"

struct loaded {
	struct hu_sbx_list rows;
	int oom;
};

static void collect(struct hu_sbx *s, void *arg)
{
	struct loaded *l = arg;
	if (hu_sbx_list_add(&l->rows, s) < 0) {
		l->oom = 1;
		hu_sbx_free(s);
	}
}

/* Remove what is left of s on the host and its row. */
static void remove_remains(struct hu_daemon *d, struct hu_sbx *s)
{
	hu_err e;

	if (s->rt) {
		if (hu_sandbox_destroy(s->rt, &e) < 0)
			hu_log(HU_LOG_WARN, s->id, 0, "%s", e.msg);
		s->rt = NULL;
	} else if (hu_sandbox_cleanup_leftover(d->rt, s->id, &e) < 0) {
		hu_log(HU_LOG_WARN, s->id, 0, "%s", e.msg);
	}
	if (hu_store_sandbox_delete(d->store, s->id, &e) < 0)
		hu_log(HU_LOG_WARN, s->id, 0, "%s", e.msg);
}

static void lost(struct hu_daemon *d, struct hu_sbx *s, const char *reason)
{
	hu_err e;

	hu_log(HU_LOG_WARN, s->id, 0, "lost while the server was down: %s; cleaned up", reason);
	hu_stat_add(HU_STAT_LOST, 1);
	remove_remains(d, s);
	if (hu_store_lost_add(d->store, s->id, s->team, reason, &e) < 0)
		hu_log(HU_LOG_WARN, s->id, 0, "%s", e.msg);
	hu_sbx_free(s);
}

/* Bring the host in line with the stored state and register s. */
static void adopt_one(struct hu_daemon *d, struct hu_sbx *s)
{
	int alive = 0, changed = 0;
	hu_err e;

	if (s->state == HU_SBX_CREATING || s->state == HU_SBX_KILLING) {
		hu_log(HU_LOG_INFO, s->id, 0, "finishing an interrupted %s", s->state == HU_SBX_CREATING ? "create" : "kill");
		remove_remains(d, s);
		hu_sbx_free(s);
		return;
	}
	if (hu_sandbox_adopt(d->rt, s->id, &s->rt, &alive, &e) < 0) {
		lost(d, s, "its files were gone (was the host restarted?)");
		return;
	}
	if (!alive && s->state == HU_SBX_RUNNING) {
		lost(d, s, "its hutch-init exited while the server was down");
		return;
	}
	if (alive && s->state == HU_SBX_RUNNING) {
		/* a crash between freeze and saving the pause leaves it frozen */
		if (hu_sandbox_thaw(s->rt, &e) < 0)
			hu_log(HU_LOG_WARN, s->id, 0, "%s", e.msg);
	} else if (alive) {
		/* paused; released but alive = a crash in the middle of a resume */
		changed = s->released;
		s->released = 0;
		if (hu_sandbox_freeze(s->rt, &e) < 0)
			hu_log(HU_LOG_WARN, s->id, 0, "%s", e.msg);
		/* frozen: it commits what it holds from the first create on */
		hu_sbx_read_held(s);
	} else if (!s->released) {
		/* paused and without processes (a crash in the middle of a
		 * release, or killed from the host): the files are what is left */
		s->released = 1;
		changed = 1;
	}
	if (hu_sbx_new_timer(d, s, &e) < 0 || hu_registry_add(d->reg, s, &e) < 0) {
		hu_log(HU_LOG_ERROR, s->id, 0, "cannot adopt: %s", e.msg);
		hu_sandbox_close(s->rt);
		hu_sbx_free(s);
		return;
	}
	if (changed && hu_sbx_store_put(d->store, s, &e) < 0)
		hu_log(HU_LOG_WARN, s->id, 0, "%s", e.msg);
	if (s->state == HU_SBX_RUNNING)
		hu_sbx_arm_deadline(s); /* a deadline passed meanwhile fires at once */
	hu_log(HU_LOG_INFO, s->id, 0, "adopted: %s%s", s->state == HU_SBX_RUNNING ? "running" : "paused",
	       s->released ? ", memory released" : "");
}

int hu_lifecycle_adopt(struct hu_daemon *d, hu_err *err)
{
	struct loaded l = {0};

	if (hu_sbx_store_load(d->store, collect, &l, err) < 0 || l.oom) {
		for (size_t i = 0; i < l.rows.n; i++)
			hu_sbx_free(l.rows.v[i]);
		free(l.rows.v);
		return l.oom ? hu_err_set(err, ENOMEM, "adopt sandboxes") : -1;
	}
	for (size_t i = 0; i < l.rows.n; i++)
		adopt_one(d, l.rows.v[i]);
	free(l.rows.v);
	return 0;
}
