/* The code interpreter template, provisioned in the background (provision.h). */
#include "daemon/sandboxes/provision.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/sandboxes/snapshots.h"
#include "daemon/sandboxes/templates.h"
#include "util/clock.h"

extern char **environ;

#define EXIT_STALE 4 /* build.sh --daemon: a new tree is ready, the old template is in place */
#define LINE_MAX_BYTES 512

struct hu_provision {
	struct hu_daemon *d;
	char script[PATH_MAX + 16]; /* <recipe>/build.sh */
	char self[PATH_MAX];        /* this hutch binary, for the recipe's `hutch template build` */
	char cache[PATH_MAX];
	struct hu_provision_progress p;
	pid_t pid;
	int pidfd, out_fd;
	struct event *out_ev, *exit_ev, *timer;
	char line[LINE_MAX_BYTES];
	size_t line_len;
	int saw_step;          /* this run built something (an up-to-date check prints no step) */
	int64_t started_ms;    /* wall clock, the first run of this provisioning */
	unsigned runs;
};

/* ---- the recipe ---------------------------------------------------------------- */

static int is_script(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* interpreter.recipe, or the folder beside the binary: <bin>/../images/code-interpreter in a checkout
 * (build/hutch-full), <prefix>/share/hutch/code-interpreter once installed (<prefix>/libexec/hutch/hutch-full;
 * <prefix>/bin/hutch only runs `hutch run` itself). */
static int find_recipe(struct hu_provision *pv, hu_err *err)
{
	const struct hu_config *cfg = &pv->d->cfg;
	char bin[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", pv->self, sizeof(pv->self) - 1);

	if (n <= 0)
		return hu_err_sys(err, "find this binary (/proc/self/exe)");
	pv->self[n] = '\0';
	if (cfg->interp_recipe[0]) {
		snprintf(pv->script, sizeof(pv->script), "%s/build.sh", cfg->interp_recipe);
		if (!is_script(pv->script))
			return hu_err_set(err, -ENOENT, "interpreter.recipe %s has no build.sh", cfg->interp_recipe);
		return 0;
	}
	snprintf(bin, sizeof(bin), "%s", pv->self);
	char *slash = strrchr(bin, '/');
	if (slash)
		*slash = '\0';
	static const char *const beside[] = {"../images/code-interpreter", "../share/hutch/code-interpreter",
						   "../../share/hutch/code-interpreter"};
	for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]); i++) {
		snprintf(pv->script, sizeof(pv->script), "%s/%s/build.sh", bin, beside[i]);
		if (is_script(pv->script))
			return 0;
	}
	return hu_err_set(err, -ENOENT, "no recipe beside %s (%s/../images/code-interpreter or "
					"%s/../share/hutch/code-interpreter); set interpreter.recipe",
			  pv->self, bin, bin);
}

/* ---- one run of the recipe ------------------------------------------------------ */

static void run_recipe(struct hu_provision *pv);

static void later(struct hu_provision *pv, int seconds)
{
	struct timeval tv = {seconds, 0};
	evtimer_add(pv->timer, &tv);
}

static void run_end(struct hu_provision *pv)
{
	if (pv->out_ev)
		event_free(pv->out_ev);
	if (pv->exit_ev)
		event_free(pv->exit_ev);
	pv->out_ev = pv->exit_ev = NULL;
	if (pv->out_fd >= 0)
		close(pv->out_fd);
	if (pv->pidfd >= 0)
		close(pv->pidfd);
	pv->out_fd = pv->pidfd = -1;
	pv->pid = 0;
}

static void on_line(struct hu_provision *pv, const char *line, size_t len)
{
	if (hu_provision_parse_line(&pv->p, line, len)) {
		pv->p.state = HU_PROV_BUILDING;
		pv->saw_step = 1;
		hu_log(HU_LOG_INFO, NULL, 0, "template %s: step %u of %u: %s", HU_PROVISION_TEMPLATE, pv->p.step,
		       pv->p.steps, pv->p.what);
		return;
	}
	/* the recipe's own lines; what debootstrap and apt say (indented) only at debug */
	int indented = pv->p.last[0] == ' ';
	hu_log(strstr(pv->p.last, "error") ? HU_LOG_WARN : indented ? HU_LOG_DEBUG : HU_LOG_INFO, NULL, 0,
	       "template %s: %s", HU_PROVISION_TEMPLATE, pv->p.last);
}

/* What the recipe wrote, in lines; an overlong one is cut. */
static void drain(struct hu_provision *pv)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(pv->out_fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n') {
				if (pv->line_len)
					on_line(pv, pv->line, pv->line_len);
				pv->line_len = 0;
			} else if (pv->line_len < sizeof(pv->line)) { /* the rest of an overlong line is dropped */
				pv->line[pv->line_len++] = buf[i];
			}
		}
	}
}

static void on_output(evutil_socket_t fd, short what, void *arg)
{
	drain(arg);
}

static int uses_template(const struct hu_sbx *s, void *arg)
{
	return !strcmp(s->template_id, (const char *)arg);
}

/* A new recipe's tree is ready: the old template goes aside once nothing holds it, then the recipe runs
 * again (and only copies). */
static void replace_old(struct hu_provision *pv)
{
	struct hu_daemon *d = pv->d;
	char dir[PATH_MAX], from[PATH_MAX + 80], to[PATH_MAX + 120];

	if (hu_sbx_any(d, uses_template, HU_PROVISION_TEMPLATE) || hu_snapshot_uses_template(d, HU_PROVISION_TEMPLATE)) {
		if (pv->p.state != HU_PROV_WAITING)
			hu_log(HU_LOG_INFO, NULL, 0,
			       "template %s: the new recipe's tree is ready; the old template is replaced once no sandbox "
			       "or snapshot uses it (they keep it meanwhile)", HU_PROVISION_TEMPLATE);
		pv->p.state = HU_PROV_WAITING;
		snprintf(pv->p.what, sizeof(pv->p.what), "waiting for the sandboxes and snapshots of the old template");
		later(pv, HU_PROVISION_WAIT_S);
		return;
	}
	if (hu_pool_drop_template(d, HU_PROVISION_TEMPLATE)) {
		later(pv, 1); /* a pool sandbox of the old template is being built */
		return;
	}
	hu_templates_dir(d, dir, sizeof(dir));
	snprintf(from, sizeof(from), "%s/%s", dir, HU_PROVISION_TEMPLATE);
	snprintf(to, sizeof(to), "%s/.stale-%s-%lld", dir, HU_PROVISION_TEMPLATE, (long long)hu_wall_ms());
	if (rename(from, to) < 0 && errno != ENOENT) {
		pv->p.state = HU_PROV_FAILED;
		snprintf(pv->p.last, sizeof(pv->p.last), "move the old template aside: %s", strerror(errno));
		hu_log(HU_LOG_WARN, NULL, 0, "template %s: %s", HU_PROVISION_TEMPLATE, pv->p.last);
		later(pv, HU_PROVISION_RETRY_S);
		return;
	}
	hu_log(HU_LOG_INFO, NULL, 0, "template %s: the old template is moved aside; building the new one",
	       HU_PROVISION_TEMPLATE);
	run_recipe(pv);
}

static void on_exit_ev(evutil_socket_t fd, short what, void *arg)
{
	struct hu_provision *pv = arg;
	int status = 0;
	hu_err err;

	if (what & EV_TIMEOUT) {
		kill(-pv->pid, SIGKILL);
		hu_log(HU_LOG_WARN, NULL, 0, "template %s: the recipe took longer than %d s; killed",
		       HU_PROVISION_TEMPLATE, HU_PROVISION_TIMEOUT_S);
	}
	drain(pv);
	if (pv->line_len)
		on_line(pv, pv->line, pv->line_len);
	pv->line_len = 0;
	/* the pidfd is readable once the recipe exited: this does not wait (except after the kill above) */
	pid_t got = waitpid(pv->pid, &status, 0);
	run_end(pv);
	int code = got < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (code == 0) {
		if (hu_template_refresh(pv->d->rt, HU_PROVISION_TEMPLATE, &err) < 0) {
			pv->p.state = HU_PROV_FAILED;
			snprintf(pv->p.last, sizeof(pv->p.last), "%s", err.msg);
			hu_log(HU_LOG_WARN, NULL, 0, "template %s: %s", HU_PROVISION_TEMPLATE, err.msg);
			later(pv, HU_PROVISION_RETRY_S);
			return;
		}
		pv->p.state = HU_PROV_READY;
		if (pv->saw_step)
			hu_log(HU_LOG_INFO, NULL, 0, "template %s: built in %lld s", HU_PROVISION_TEMPLATE,
			       (long long)((hu_wall_ms() - pv->started_ms) / 1000));
		else
			hu_log(HU_LOG_INFO, NULL, 0, "template %s: up to date", HU_PROVISION_TEMPLATE);
		return;
	}
	if (code == EXIT_STALE) {
		replace_old(pv);
		return;
	}
	pv->p.state = HU_PROV_FAILED;
	hu_log(HU_LOG_WARN, NULL, 0, "template %s: the recipe failed (exit %d: %s); tried again in %d s",
	       HU_PROVISION_TEMPLATE, code, pv->p.last, HU_PROVISION_RETRY_S);
	later(pv, HU_PROVISION_RETRY_S);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct hu_provision *pv = arg;
	if (pv->p.state == HU_PROV_WAITING)
		replace_old(pv);
	else
		run_recipe(pv);
}

static int spawn_recipe(struct hu_provision *pv, hu_err *err)
{
	const struct hu_config *cfg = &pv->d->cfg;
	char *argv[] = {"/bin/bash", pv->script, "--daemon", "--data-dir", (char *)cfg->data_dir, "--cache-dir",
			pv->cache, "--hutch", pv->self, "--name", HU_PROVISION_TEMPLATE, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int out[2];

	if (pipe2(out, O_CLOEXEC) < 0)
		return hu_err_sys(err, "pipe");
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	/* its own session: a stop signals the whole group (debootstrap, apt, the copy); and the signals the
	 * daemon ignores (SIGPIPE) back to their defaults, as a shell's pipelines expect */
	sigset_t def;
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGHUP);
	posix_spawnattr_setsigdefault(&attr, &def);
	sigset_t none;
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, out[1], 2);
	int rc = posix_spawn(&pv->pid, argv[0], &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(out[1]);
	if (rc) {
		close(out[0]);
		errno = rc;
		return hu_err_sys(err, "run %s", pv->script);
	}
	pv->out_fd = out[0];
	fcntl(pv->out_fd, F_SETFL, O_NONBLOCK);
	pv->pidfd = (int)syscall(SYS_pidfd_open, pv->pid, 0);
	struct timeval limit = {HU_PROVISION_TIMEOUT_S, 0};
	pv->out_ev = event_new(pv->d->base, pv->out_fd, EV_READ | EV_PERSIST, on_output, pv);
	pv->exit_ev = pv->pidfd >= 0 ? event_new(pv->d->base, pv->pidfd, EV_READ, on_exit_ev, pv) : NULL;
	if (!pv->out_ev || !pv->exit_ev || event_add(pv->out_ev, NULL) < 0 || event_add(pv->exit_ev, &limit) < 0) {
		kill(-pv->pid, SIGKILL);
		waitpid(pv->pid, NULL, 0);
		run_end(pv);
		return hu_err_set(err, ENOMEM, "watch the recipe");
	}
	return 0;
}

static void run_recipe(struct hu_provision *pv)
{
	hu_err err;

	pv->runs++;
	pv->saw_step = 0;
	if (pv->p.state != HU_PROV_BUILDING)
		pv->p.state = HU_PROV_CHECKING;
	if (spawn_recipe(pv, &err) < 0) {
		pv->p.state = HU_PROV_FAILED;
		snprintf(pv->p.last, sizeof(pv->p.last), "%s", err.msg);
		hu_log(HU_LOG_WARN, NULL, 0, "template %s: %s", HU_PROVISION_TEMPLATE, err.msg);
		later(pv, HU_PROVISION_RETRY_S);
		return;
	}
	hu_log(HU_LOG_INFO, NULL, 0, "template %s: provisioning from %s (pid %d, cache %s)", HU_PROVISION_TEMPLATE,
	       pv->script, (int)pv->pid, pv->cache);
}

/* ---- the daemon's side ------------------------------------------------------------ */

int hu_provision_start(struct hu_daemon *d, hu_err *err)
{
	hu_err why;

	if (!d->cfg.interp_provision) {
		hu_log(HU_LOG_INFO, NULL, 0, "template %s: not provisioned (interpreter.provision is off)",
		       HU_PROVISION_TEMPLATE);
		return 0;
	}
	struct hu_provision *pv = calloc(1, sizeof(*pv));
	if (!pv)
		return hu_err_set(err, ENOMEM, "provision");
	*pv = (struct hu_provision){.d = d, .pidfd = -1, .out_fd = -1, .started_ms = hu_wall_ms()};
	if (find_recipe(pv, &why) < 0) {
		hu_log(HU_LOG_WARN, NULL, 0, "template %s: not provisioned: %s", HU_PROVISION_TEMPLATE, why.msg);
		free(pv);
		return 0;
	}
	if (d->cfg.interp_cache_dir[0])
		snprintf(pv->cache, sizeof(pv->cache), "%s", d->cfg.interp_cache_dir);
	else
		snprintf(pv->cache, sizeof(pv->cache), "%s/cache/%s", d->cfg.data_dir, HU_PROVISION_TEMPLATE);
	/* background work: after any request */
	pv->timer = evtimer_new(d->base, on_timer, pv);
	if (!pv->timer || event_priority_set(pv->timer, HU_LOOP_PRIORITY_IDLE) < 0) {
		if (pv->timer)
			event_free(pv->timer);
		free(pv);
		return hu_err_set(err, ENOMEM, "provision timer");
	}
	d->provision = pv;
	later(pv, 0);
	pv->p.state = HU_PROV_CHECKING;
	return 0;
}

void hu_provision_stop(struct hu_daemon *d)
{
	struct hu_provision *pv = d->provision;

	if (!pv)
		return;
	if (pv->pid > 0) {
		hu_log(HU_LOG_INFO, NULL, 0, "template %s: stopping the recipe (pid %d); the next start goes on",
		       HU_PROVISION_TEMPLATE, (int)pv->pid);
		kill(-pv->pid, SIGTERM);
		/* reaped if it is already gone; else the recipe ends on its own, and so does its zombie with us */
		waitpid(pv->pid, NULL, WNOHANG);
	}
	run_end(pv);
	event_free(pv->timer);
	free(pv);
	d->provision = NULL;
}

int hu_provision_check(const struct hu_daemon *d, const char *template_id, hu_err *err)
{
	const struct hu_provision *pv = d->provision;

	if (!pv || strcmp(template_id, HU_PROVISION_TEMPLATE) || pv->p.state == HU_PROV_READY)
		return 0;
	if (pv->p.state == HU_PROV_FAILED)
		return hu_err_set(err, -EINPROGRESS,
				  "template %s could not be built yet (%s); the server tries again, see its log",
				  HU_PROVISION_TEMPLATE, pv->p.last);
	if (pv->p.step)
		return hu_err_set(err, -EINPROGRESS, "template %s is still building (step %u of %u: %s)",
				  HU_PROVISION_TEMPLATE, pv->p.step, pv->p.steps, pv->p.what);
	return hu_err_set(err, -EINPROGRESS, "template %s is still building (checking its recipe)",
			  HU_PROVISION_TEMPLATE);
}

json_t *hu_provision_describe(const struct hu_daemon *d, const char *template_id, int *not_built)
{
	const struct hu_provision *pv = d->provision;
	char dir[PATH_MAX], path[PATH_MAX + 80];
	struct stat st;

	if (!pv || strcmp(template_id, HU_PROVISION_TEMPLATE))
		return NULL;
	hu_templates_dir(d, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, HU_PROVISION_TEMPLATE);
	*not_built = stat(path, &st) < 0;
	json_t *o = json_pack("{s:s, s:I, s:s}", "state", hu_provision_state_name(pv->p.state), "startedAt",
			      (json_int_t)pv->started_ms, "message", pv->p.last);
	if (o && pv->p.step && pv->p.state != HU_PROV_READY) {
		json_object_set_new(o, "step", json_integer(pv->p.step));
		json_object_set_new(o, "steps", json_integer(pv->p.steps));
		json_object_set_new(o, "stepName", json_string(pv->p.what));
	}
	return o;
}
