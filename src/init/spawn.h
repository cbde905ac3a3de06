/*
 * Starting one process for SPAWN: user, environment, pipes or pty, the
 * child's setup up to execvp, and the CLOEXEC error pipe that turns a failed
 * exec into an ERROR reply instead of a process that exits 127.
 */
#ifndef HUTCH_INIT_SPAWN_H
#define HUTCH_INIT_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

#include "init/request.h"
#include "util/err.h"

struct hu_spawned {
	pid_t pid;
	int out_fd[2];  /* init's read ends: stdout and stderr, or [0] = pty master */
	int stdin_fd;   /* init's write end (pty: a dup of the master), or -1 */
	bool pty;
	char **envv;    /* the environment the process got (malloc'd, NULL-terminated) */
	char *cwd;      /* its working directory (malloc'd) */
};

/* Start req's process. On success every fd in res is O_NONBLOCK|O_CLOEXEC and
 * owned by the caller. */
int hu_spawn(const struct hu_request *req, struct hu_spawned *res, hu_err *err);

void hu_strv_free(char **v);

/* In a child about to exec: every signal back to its default, none blocked. */
void hu_spawn_reset_signals(void);
/* In a child about to exec: become u (ids, groups, and the capabilities a
 * command of that user gets: HU_CAPS_ROOT_DEFAULT for root, none else). */
struct hu_user;
int hu_spawn_become(const struct hu_user *u, hu_err *err);

#endif
