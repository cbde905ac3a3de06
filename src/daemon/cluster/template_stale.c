/* Stale copies of templates rebuilt on another node (template_stale.h). */
#include "daemon/cluster/template_stale.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/cluster_internal.h"
#include "daemon/common/log.h"
#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/sandboxes/templates.h"
#include "util/clock.h"
#include "util/fileutil.h"

int hu_cluster_template_stale(struct hu_daemon *d, const struct hu_tpl_meta *m, struct hu_template_row *row)
{
	hu_err err;

	memset(row, 0, sizeof(*row));
	/* base is every node's own; a copy without a checksum cannot be compared */
	if (m->host_usr || !m->checksum[0] || !d->store)
		return 0;
	if (hu_store_template_find(d->store, m->id, row, &err) < 0) {
		if (err.code != ENOENT && err.code != ENOSYS)
			hu_log(HU_LOG_WARN, NULL, 0, "template %s: the store's record cannot be read (%s): the copy here"
			       " serves", m->id, err.msg);
		free(row->meta);
		row->meta = NULL;
		return 0;
	}
	/* a build made here after the record is this node's to publish */
	if (!strcmp(row->checksum, m->checksum) || row->created_ms <= m->created_ms) {
		free(row->meta);
		row->meta = NULL;
		return 0;
	}
	return 1;
}

int hu_cluster_template_set_aside(const char *templates_dir, const char *id, char *aside, size_t n, hu_err *err)
{
	char from[PATH_MAX];

	snprintf(from, sizeof(from), "%s/%s", templates_dir, id);
	snprintf(aside, n, "%s/" HU_TPL_STALE_PREFIX "%s-%" PRId64, templates_dir, id, hu_wall_ms());
	if (rename(from, aside) == 0)
		return 0;
	if (errno == ENOENT) {
		aside[0] = '\0';
		return 0;
	}
	hu_err_sys(err, "set %s aside", from);
	aside[0] = '\0';
	return -1;
}

struct older_user {
	char id[HU_ID_MAX];
	int64_t before_ms;
};

static int runs_on_it(const struct hu_sbx *s, void *arg)
{
	const struct older_user *u = arg;

	return !strcmp(s->template_id, u->id) && s->started_at_ms <= u->before_ms;
}

/* ".stale-<id>-<ms>" -> id and ms; 0 when the name is not one. */
static int parse_aside(const char *name, struct older_user *u)
{
	const char *rest = name + strlen(HU_TPL_STALE_PREFIX), *dash = strrchr(rest, '-');
	char *end;

	if (strncmp(name, HU_TPL_STALE_PREFIX, strlen(HU_TPL_STALE_PREFIX)) || !dash || dash == rest ||
	    (size_t)(dash - rest) >= sizeof(u->id))
		return 0;
	errno = 0;
	u->before_ms = strtoll(dash + 1, &end, 10);
	if (errno || *end || end == dash + 1)
		return 0;
	snprintf(u->id, sizeof(u->id), "%.*s", (int)(dash - rest), rest);
	return 1;
}

/* Off the loop: a template is thousands of files. What a failure leaves
 * is a .delete- name, which `hutch template rm` clears. */
static void *remove_tree(void *arg)
{
	hu_err ignored;

	hu_rm_rf(arg, &ignored);
	free(arg);
	return NULL;
}

void hu_cluster_templates_sweep(struct hu_cluster *c)
{
	char dir[PATH_MAX], path[PATH_MAX + 300];
	struct older_user u;
	struct dirent *e;
	pthread_attr_t attr;
	pthread_t t;
	DIR *dp;

	hu_templates_dir(c->d, dir, sizeof(dir));
	if (!(dp = opendir(dir)))
		return;
	while ((e = readdir(dp))) {
		if (!parse_aside(e->d_name, &u) || hu_sbx_any(c->d, runs_on_it, &u))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		/* renamed first, so that the next sweep does not start it twice */
		char *gone = malloc(sizeof(path) + 16);
		if (!gone)
			break;
		snprintf(gone, sizeof(path) + 16, "%s/.delete-%s", dir, e->d_name + strlen(HU_TPL_STALE_PREFIX));
		if (rename(path, gone) < 0) {
			free(gone);
			continue;
		}
		hu_log(HU_LOG_INFO, NULL, 0, "template %s: the copy set aside at its refetch is removed (no sandbox runs"
		       " on it)", u.id);
		if (pthread_attr_init(&attr) == 0) {
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
			if (pthread_create(&t, &attr, remove_tree, gone) == 0)
				gone = NULL;
			pthread_attr_destroy(&attr);
		}
		if (gone)
			remove_tree(gone); /* no thread: here, once */
	}
	closedir(dp);
}
