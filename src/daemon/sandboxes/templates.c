/* Template resolution and defaults for the daemon (templates.h). */
#include <stdio.h>
#include <string.h>

#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/templates.h"

void hu_templates_dir(const struct hu_daemon *d, char *buf, size_t n)
{
	snprintf(buf, n, "%s/templates", d->cfg.data_dir);
}

int hu_template_lookup(const struct hu_daemon *d, const char *team, const char *template_id, struct hu_tpl_meta *m,
		       hu_err *err)
{
	char dir[PATH_MAX];

	hu_templates_dir(d, dir, sizeof(dir));
	if (hu_tpl_meta_read(dir, template_id, m, err) < 0) {
		if (err->code == ENOENT)
			hu_err_set(err, -ENOENT, "template '%.64s' not found", template_id);
		return -1;
	}
	/* another team's private template does not exist for this one */
	if (team && !m->is_public && strcmp(m->team, team)) {
		hu_tpl_meta_free(m);
		return hu_err_set(err, -ENOENT, "template '%.64s' not found", template_id);
	}
	return 0;
}

int hu_template_poolable(const struct hu_daemon *d, const char *template_id)
{
	struct hu_tpl_meta m;
	hu_err ignore;

	if (hu_template_lookup(d, NULL, template_id, &m, &ignore) < 0)
		return 0;
	hu_tpl_meta_free(&m);
	return 1;
}

int hu_template_apply(const struct hu_tpl_meta *m, struct hu_sbx *s, hu_err *err)
{
	const char *k;
	json_t *v;

	if (m->cpu_millis)
		s->cpu_millis = m->cpu_millis;
	if (m->memory_bytes)
		s->memory_bytes = m->memory_bytes;
	if (m->disk_bytes)
		s->disk_bytes = m->disk_bytes;
	json_object_foreach(m->envs, k, v)
		if (!json_object_get(s->env_vars, k) && json_object_set(s->env_vars, k, v) < 0)
			return hu_err_set(err, ENOMEM, "template envs");
	return 0;
}

void hu_template_process_defaults(const struct hu_daemon *d, const struct hu_sbx *s, const char **user,
				  const char **cwd, char *user_buf, size_t user_n, char *cwd_buf, size_t cwd_n)
{
	struct hu_tpl_meta m;
	hu_err ignore;

	*user = "user";
	*cwd = NULL;
	if (!strcmp(s->template_id, "base") || hu_template_lookup(d, NULL, s->template_id, &m, &ignore) < 0)
		return;
	if (m.user[0]) {
		snprintf(user_buf, user_n, "%s", m.user);
		*user = user_buf;
	}
	if (m.cwd[0]) {
		snprintf(cwd_buf, cwd_n, "%s", m.cwd);
		*cwd = cwd_buf;
	}
	hu_tpl_meta_free(&m);
}

struct refresh_ctx {
	struct hu_daemon *d;
};

static int refresh_one(const struct hu_tpl_meta *m, void *arg)
{
	struct refresh_ctx *c = arg;
	hu_err err;

	if (m->host_usr)
		return 0; /* base: hu_template_ensure_base does it */
	if (hu_template_refresh(c->d->rt, m->id, &err) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "%s", err.msg);
	return 0;
}

int hu_templates_refresh_all(struct hu_daemon *d, hu_err *err)
{
	char dir[PATH_MAX];
	struct refresh_ctx c = {d};

	hu_templates_dir(d, dir, sizeof(dir));
	return hu_tpl_list(dir, refresh_one, &c, err);
}
