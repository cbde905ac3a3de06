/*
 * Templates as the daemon sees them: which template an E2B templateID names
 * for a team, and what a sandbox built on it starts with. Warm pools and
 * creates both go through hu_template_lookup, so they agree on what a
 * template id means.
 */
#ifndef HUTCH_DAEMON_TEMPLATES_H
#define HUTCH_DAEMON_TEMPLATES_H

#include "daemon/core/daemon.h"
#include "template/template.h"

struct hu_sbx;

/* <data_dir>/templates */
void hu_templates_dir(const struct hu_daemon *d, char *buf, size_t n);

/* The template `template_id` names for `team` (NULL: any team, for the
 * daemon's own use): m is filled (the runtime name is m->id; m->host_usr
 * says whether the host's /usr is bound; the rest are the per-sandbox
 * defaults); release it with hu_tpl_meta_free. ENOENT (404) when there is
 * no such template or it is another team's private one. */
int hu_template_lookup(const struct hu_daemon *d, const char *team, const char *template_id, struct hu_tpl_meta *m,
		       hu_err *err);

/* Whether a warm pool can keep sandboxes of this template: it exists. A
 * template with a start command or a readiness check has them run when the
 * pool builds the sandbox (the pool keeps it once the check passed), as
 * E2B's templates start theirs before any create; a create that takes one
 * has its envs written into it (sbx_envfile.h). */
int hu_template_poolable(const struct hu_daemon *d, const char *template_id);
/* A new sandbox takes the template's defaults: CPU, memory and disk when
 * the template sets them, and its envs under the create's own envVars. */
int hu_template_apply(const struct hu_tpl_meta *m, struct hu_sbx *s, hu_err *err);

/* The user and working directory of a command that names neither: the
 * template's, else "user" and NULL (init's default, the user's home).
 * user_buf/cwd_buf hold the answer. */
void hu_template_process_defaults(const struct hu_daemon *d, const struct hu_sbx *s, const char **user,
				  const char **cwd, char *user_buf, size_t user_n, char *cwd_buf, size_t cwd_n);


/* At start: every built template gets this daemon's sudo shim. */
int hu_templates_refresh_all(struct hu_daemon *d, hu_err *err);

#endif
