/*
 * The one error convention of hutch.
 *
 * Every fallible function returns a negative int (-1) on failure and fills the
 * caller's hu_err with an errno-style code and a message that carries the
 * context of the failure ("mount overlay at /run/...: Permission denied").
 * Callers that add context use hu_err_prefix() on the way up; the message
 * finally reaches the log, the CLI's stderr or the API's JSON error unchanged.
 * The global errno is never the channel for an answer.
 */
#ifndef HUTCH_UTIL_ERR_H
#define HUTCH_UTIL_ERR_H

#include <errno.h>
#include <stddef.h>

#define HU_ERR_MSG_MAX 512

typedef struct hu_err {
	int code; /* errno value (positive), 0 when no error */
	char msg[HU_ERR_MSG_MAX];
} hu_err;

/* Set the error to `code` with a formatted message; when code > 0 the text of
 * strerror(code) is appended. Always returns -1 so callers can `return hu_err_set(...)`. */
int hu_err_set(hu_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* hu_err_set() with the current errno. */
int hu_err_sys(hu_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepend "context: " to an existing message, keeping the code. */
void hu_err_prefix(hu_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline void hu_err_clear(hu_err *err)
{
	err->code = 0;
	err->msg[0] = '\0';
}

#endif
