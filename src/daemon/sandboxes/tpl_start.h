/*
 * A template's start command and readiness check (templates.h): when a
 * sandbox built on a template that has them is up, the start command runs
 * in the background (sh -c, as the template's user, in its cwd, with the
 * sandbox's envs, tagged "template-start"), then the ready command runs
 * every READY_POLL_MS until it exits 0. The create answers only then; if
 * the check does not pass within the template's timeout, the create fails
 * and the caller destroys the sandbox.
 */
#ifndef HUTCH_DAEMON_TPL_START_H
#define HUTCH_DAEMON_TPL_START_H

#include "daemon/core/daemon.h"
#include "template/template.h"

struct hu_sbx;

/* done(arg, NULL) when ready, done(arg, err) when not; called once, from
 * the loop, never before hu_tpl_start returns 0. -1: could not begin
 * (done is not called). */
typedef void (*hu_tpl_start_fn)(void *arg, const hu_err *err);
int hu_tpl_start(struct hu_daemon *d, struct hu_sbx *s, const struct hu_tpl_meta *m, hu_tpl_start_fn done, void *arg,
		 hu_err *err);
/* The same for s's own template, read now: 1 started (done follows), 0 the
 * template has neither command (or is gone: nothing to run), -1 could not
 * begin (err says why). */
int hu_tpl_start_sandbox(struct hu_daemon *d, struct hu_sbx *s, hu_tpl_start_fn done, void *arg, hu_err *err);
/* Daemon shutdown: every start still waiting for its readiness check ends
 * now, its done called with an error (a create then fails and is undone). */
void hu_tpl_start_cancel_all(struct hu_daemon *d);

#endif
