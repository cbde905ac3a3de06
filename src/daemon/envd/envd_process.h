/*
 * envd's process.Process service (private to envd_process*.c).
 *
 * The request messages are decoded, and the response messages encoded, by
 * pure functions (envd_process_json.c: no daemon, no I/O) so that unit
 * tests and a fuzzer can drive them. The Start and Connect server streams
 * live in envd_process_stream.c, the unary calls in envd_process.c.
 *
 * proto3 JSON as envd reads it: unknown fields are ignored, null means "not
 * given", integers may be numbers or decimal strings, bytes are base64,
 * enums are names (or their numbers).
 */
#ifndef HUTCH_DAEMON_ENVD_PROCESS_H
#define HUTCH_DAEMON_ENVD_PROCESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/core/daemon.h"
#include "runtime/initclient.h"
#include "util/err.h"

/* StartRequest: {process:{cmd,args,envs,cwd}, pty?:{size:{rows,cols}}, tag?, stdin?} */
struct hu_envd_start {
	json_t *msg;        /* the request (a reference): the strings below point into it */
	const char **argv;  /* cmd then args, argc entries (malloc'd array) */
	size_t argc;
	char **envv;        /* "KEY=VALUE": sandbox defaults overridden by process.envs */
	size_t envc;
	const char *cwd;    /* NULL: the user's home */
	const char *tag;    /* NULL: none */
	bool pty;
	uint16_t rows, cols;
	bool stdin_open;    /* an absent "stdin" keeps stdin open, as envd does */
};

/* defaults: the sandbox's env_vars (object of strings) or NULL. On failure
 * *out holds nothing that needs freeing. */
int hu_envd_decode_start(const json_t *msg, const json_t *defaults, struct hu_envd_start *out, hu_err *err);
void hu_envd_start_clear(struct hu_envd_start *s);
/* The SPAWN request for a decoded start (pointers into s). */
void hu_envd_start_spawn_req(const struct hu_envd_start *s, const char *user, struct hu_spawn_req *req);

/* ProcessSelector in msg.process: {pid} or {tag}. tag points into msg. */
struct hu_envd_selector {
	uint32_t pid;     /* 0 when selected by tag */
	const char *tag;  /* NULL when selected by pid */
};
int hu_envd_decode_selector(const json_t *msg, struct hu_envd_selector *sel, hu_err *err);

/* SendSignalRequest.signal: "SIGNAL_SIGKILL", "SIGNAL_SIGTERM", ... or a number. */
int hu_envd_decode_signal(const json_t *msg, int *signum, hu_err *err);
/* SendInputRequest.input: {stdin: b64} or {pty: b64}; *data is malloc'd
 * (never NULL on success). */
int hu_envd_decode_input(const json_t *msg, uint8_t **data, size_t *len, hu_err *err);
/* UpdateRequest.pty.size; *present is 0 when the request has no pty. */
int hu_envd_decode_pty_size(const json_t *msg, int *present, uint16_t *rows, uint16_t *cols, hu_err *err);

/* ---- responses ----------------------------------------------------------- */

/* {"event":{"start":{"pid":N}}} */
json_t *hu_envd_event_start(uint32_t pid);
/* {"event":{"data":{"stdout"|"stderr"|"pty":"<base64>"}}} */
json_t *hu_envd_event_data(uint8_t stream, const uint8_t *data, size_t len);
/* {"event":{"keepalive":{}}} */
json_t *hu_envd_event_keepalive(void);
/* {"event":{"end":{exitCode, exited, status, error?}}} from an EXIT event,
 * with the values Go's os.ProcessState gives envd: "exit status 3" with
 * exitCode 3 and exited true; "signal: killed" with exitCode -1 and exited
 * false; error repeats the status unless the process exited 0. */
json_t *hu_envd_event_end(const struct hu_init_event *exit);
/* Go's ProcessState.String() for an exit code or (signum != 0) a signal. */
void hu_envd_exit_status(int32_t code, uint32_t signum, char *buf, size_t n);

/* ListResponse {"processes":[{config:{cmd,args,envs,cwd},pid,tag?}]} from a
 * PROCS payload. */
int hu_envd_encode_procs(const uint8_t *payload, size_t len, json_t **out, hu_err *err);
/* The pid of the running process tagged `tag` in a PROCS payload; -1 with
 * ESRCH when there is none. */
int hu_envd_find_tag(const uint8_t *payload, size_t len, const char *tag, uint32_t *pid, hu_err *err);

/* The Connect error code for an init error (ESRCH: no such process); envd_process.c. */
const char *hu_envd_code_for_errno(int code);

/* ---- calls in flight ----------------------------------------------------------
 * Every call that waits on the loop (a unary call waiting for init, a Start
 * that outlives its client until its deadline, a deadline kill waiting for
 * init's answer) is listed, so that hu_envd_process_shutdown() can end it:
 * a stopping daemon must not leave callbacks armed on a freed loop. */
struct hu_envd_work {
	struct hu_envd_work *prev, *next;
	void (*cancel)(struct hu_envd_work *w); /* end it now: answer, unlist, free */
};
void hu_envd_work_add(struct hu_envd_work *w);
void hu_envd_work_remove(struct hu_envd_work *w);

#endif
