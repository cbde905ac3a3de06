/*
 * The process table of hutch-init: processes started by SPAWN, who is
 * subscribed to their output, their stdin, reaping and exit records.
 */
#ifndef HUTCH_INIT_PROC_H
#define HUTCH_INIT_PROC_H

#include "init/conn.h"
#include "init/request.h"
#include "util/err.h"

/* Block SIGCHLD and watch it through a signalfd in the loop. */
int hu_proc_init(hu_err *err);
/* Release everything at exit (processes keep running; init is going away). */
void hu_proc_fini(void);

void hu_proc_spawn(struct hu_conn *c, const struct hu_request *req);
void hu_proc_attach(struct hu_conn *c, const struct hu_request *req);
void hu_proc_stdin(struct hu_conn *c, const struct hu_request *req);
void hu_proc_close_stdin(struct hu_conn *c, const struct hu_request *req);
void hu_proc_signal(struct hu_conn *c, const struct hu_request *req);
void hu_proc_resize(struct hu_conn *c, const struct hu_request *req);
void hu_proc_list(struct hu_conn *c, const struct hu_request *req);

/* c is closing: drop its subscriptions and stdin waits. */
void hu_proc_forget_conn(struct hu_conn *c);
/* c's queue fell below its bound: resume output it held back. */
void hu_proc_conn_drained(struct hu_conn *c);

#endif
