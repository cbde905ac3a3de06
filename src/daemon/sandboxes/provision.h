/*
 * The code interpreter template, provisioned by the daemon itself: at start,
 * `hutch serve` runs the template's recipe (images/code-interpreter/build.sh,
 * or the folder interpreter.recipe names) in the background, as
 * `build.sh --daemon --data-dir D --cache-dir C --hutch SELF`, and reads its
 * progress from the script's output. The recipe keeps its own cache (the
 * Debian tree, keyed by the package list) and records its checksum in the
 * template's description, so a start with an unchanged recipe costs one run
 * of the script that finds the template up to date, and a changed recipe is
 * rebuilt while the old template keeps serving: the script prepares the new
 * tree and exits 4; once no sandbox, snapshot or pool build uses the old
 * template, the daemon moves it aside (a dot-name, which listings skip and the
 * next run of the script removes) and runs the script again, which copies the
 * cached tree in.
 *
 * What it does is in the log (one line per step) and in GET /templates
 * (hu_provision_describe). A create for the template before it exists gets
 * EINPROGRESS (503 with Retry-After) with the step it is at. One recipe
 * run at a time; a failed build is retried every HU_PROVISION_RETRY_S.
 * interpreter.provision = false (or --interpreter-provision false, or
 * HUTCH_INTERPRETER_PROVISION=0) turns all of it off.
 */
#ifndef HUTCH_DAEMON_PROVISION_H
#define HUTCH_DAEMON_PROVISION_H

#include <jansson.h>
#include <stddef.h>

#include "daemon/core/daemon.h"

#define HU_PROVISION_TEMPLATE "code-interpreter-v1"
#define HU_PROVISION_RETRY_S 600    /* after a failed build */
#define HU_PROVISION_WAIT_S 10      /* an old template still in use: looked at again this often */
#define HU_PROVISION_TIMEOUT_S 3600 /* then the build is killed (a stuck download) */

enum hu_provision_state {
	HU_PROV_OFF,      /* turned off, or no recipe */
	HU_PROV_CHECKING, /* the recipe runs; no step seen yet (an up-to-date check takes a moment) */
	HU_PROV_BUILDING, /* a step is under way */
	HU_PROV_WAITING,  /* a new tree is ready; the old template is in use */
	HU_PROV_READY,
	HU_PROV_FAILED,   /* retried later */
};

/* The state, the step "N/M: what", the latest line of the recipe; pure, for tests and fuzzing. */
struct hu_provision_progress {
	enum hu_provision_state state;
	unsigned step, steps;
	char what[160];
	char last[256];
};
/* One line of the recipe's output (without its newline): a step line
 * ("code-interpreter: step N/M: WHAT", 0 < N <= M <= 99) moves the progress
 * on; every line becomes `last` (without the "code-interpreter: " prefix).
 * Returns 1 for a step line, else 0. */
int hu_provision_parse_line(struct hu_provision_progress *p, const char *line, size_t len);
const char *hu_provision_state_name(enum hu_provision_state s);

/* Start provisioning (after the pools: it may drop the pool of the old
 * template). Off, or no recipe found: logged, 0. */
int hu_provision_start(struct hu_daemon *d, hu_err *err);
/* Shutdown: the recipe's process group gets SIGTERM (its caches survive a
 * kill: the next start picks up). */
void hu_provision_stop(struct hu_daemon *d);
/* A create for template_id that does not exist (yet): -1 with EINPROGRESS
 * and the progress in err when it is being provisioned, else 0. */
int hu_provision_check(const struct hu_daemon *d, const char *template_id, hu_err *err);
/* GET /templates: the progress of template_id as {state, step, steps,
 * stepName, message, startedAt} (NULL when the daemon does not provision
 * it); *not_built = 1 while it is not built yet (the list then shows it
 * with buildStatus "building" or "error"). */
json_t *hu_provision_describe(const struct hu_daemon *d, const char *template_id, int *not_built);

#endif
