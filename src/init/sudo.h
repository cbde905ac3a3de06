/*
 * `sudo` inside a sandbox. Sandboxes run with no_new_privs, so a setuid sudo
 * cannot work; E2B's template gives `user` passwordless sudo, and programs
 * (and E2B's own tests) rely on it. hutch-init therefore serves root commands
 * itself: the template's /opt/hutch/bin/sudo is hutch-init under that name
 * (hu_sudo_client_main), which sends its argv, working directory and its
 * stdin/stdout/stderr (SCM_RIGHTS) to init over an abstract unix socket,
 * waits, and exits with the command's status.
 *
 * The socket lives in the sandbox's own network namespace (abstract names
 * are per namespace), so only processes of that sandbox can reach it; what
 * it grants is what root of the sandbox has, which the API's caller has
 * anyway (user "root"). docs/security.md has the analysis.
 *
 * Wire format (SOCK_SEQPACKET, one request, one reply):
 *   request: "cwd\0arg0\0arg1\0...\0" (at most 64 KiB, 1..1024 args) with
 *            exactly three fds: the caller's stdin, stdout, stderr;
 *   reply:   4 bytes, the command's wait status (host byte order), or a
 *            text starting with "E" describing why nothing ran.
 */
#ifndef HUTCH_INIT_SUDO_H
#define HUTCH_INIT_SUDO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/err.h"

#define HU_SUDO_SOCKET "hutch-sudo" /* abstract: "\0hutch-sudo" */
#define HU_SUDO_MAX_REQUEST 65536
#define HU_SUDO_MAX_ARGS 1024
#define HU_SUDO_MAX_WAITING 64 /* sudo commands running at once */

/* Start serving sudo (init, in a sandbox). */
int hu_sudo_listen(hu_err *err);
void hu_sudo_shutdown(void);
/* Init reaped pid: if it is a sudo command, report its status; true if so. */
bool hu_sudo_reaped(pid_t pid, int status);

/* A request split into cwd and a NULL-terminated argv pointing into buf
 * (pure, fuzzed). argv must have room for HU_SUDO_MAX_ARGS + 1 entries. */
int hu_sudo_parse_request(char *buf, size_t len, const char **cwd, char **argv, size_t *argc, hu_err *err);

/* main() of the `sudo` shim. */
int hu_sudo_client_main(int argc, char **argv);

#endif
