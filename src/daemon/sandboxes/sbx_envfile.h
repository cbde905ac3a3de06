/*
 * The sandbox's own environment, told to processes that started before it
 * was known. A warm pool sandbox of a template with a start command (the
 * code interpreter's server and its kernels) runs that command when the
 * pool builds it, with the template's envs only; when a create takes it,
 * the create's envs (the template's under the request's envVars) are
 * written, as one JSON object of names to strings, to HU_SBX_ENV_FILE in
 * the sandbox, as root (mode 0644: the sandbox's user reads it, cannot
 * change it), before the create answers. A server reads it there
 * (images/code-interpreter/server/sandbox_env.py); a cold create's start
 * command gets the same envs as its environment and finds no file.
 */
#ifndef HUTCH_DAEMON_SBX_ENVFILE_H
#define HUTCH_DAEMON_SBX_ENVFILE_H

#include "daemon/core/daemon.h"

#define HU_SBX_ENV_FILE "/run/hutch/envs.json"
#define HU_SBX_ENV_TIMEOUT_MS 5000

struct hu_sbx;

/* done(arg, NULL) once the file is written, done(arg, err) if it could not
 * be; from the loop, never before this returns 0. -1: not begun (done is
 * not called). */
typedef void (*hu_sbx_envfile_fn)(void *arg, const hu_err *err);
int hu_sbx_envfile_write(struct hu_daemon *d, const struct hu_sbx *s, hu_sbx_envfile_fn done, void *arg, hu_err *err);

#endif
