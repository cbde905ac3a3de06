/*
 * The doctor's probes: a probe runs in a forked child, where it may unshare,
 * mount and load filters, and everything it did ends with the child. On
 * success it may describe what it saw in `info`; on failure it fills err.
 * Both travel back over a pipe. A probe that hangs is killed after a timeout,
 * and it dies with the doctor.
 */
#ifndef HUTCH_CLI_DOCTOR_PROBE_H
#define HUTCH_CLI_DOCTOR_PROBE_H

#include <stddef.h>
#include <sys/types.h>

#include "util/err.h"

/*
 * The host uid the probes map to root inside their user namespaces. It lies
 * just below the first sandbox uid slot (0x40000000, runtime_internal.h), so a
 * probe never runs as the uid of a live sandbox and could never signal or
 * ptrace one of its processes.
 */
#define DOCTOR_PROBE_UID 0x3ffffffeu

typedef int doctor_probe_fn(void *arg, char *info, size_t n, hu_err *err);

/* hu_err for a failed call, worded "<call> returned EINVAL (Invalid
 * argument)": the errno name is what an operator searches for. */
int doctor_probe_sys(hu_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Run fn(arg) in a forked child; its info (or error) comes back here. */
int doctor_run_probe(doctor_probe_fn *fn, void *arg, char *info, size_t n, hu_err *err);

/* Run fn(arg) as root of a fresh user namespace (plus `flags`, e.g.
 * CLONE_NEWNS), mapped to DOCTOR_PROBE_UID as hutch maps a sandbox. */
int doctor_run_in_userns(int flags, doctor_probe_fn *fn, void *arg, char *info, size_t n, hu_err *err);

/*
 * The same in two steps, for a caller that needs the namespace itself: a
 * child in a new user namespace (plus `flags`), with "0 DOCTOR_PROBE_UID 1"
 * written to its uid_map and gid_map by the parent. doctor_userns_start()
 * returns once the maps are written; the caller may then open the namespace
 * files under /proc/<pid>/ns; doctor_userns_finish() lets the child become
 * root in its namespace, run fn, and reports the result.
 */
struct doctor_userns_child {
	pid_t pid;
	int go;  /* parent -> child: one byte = carry on, EOF = give up */
	int res; /* child -> parent: probe_msg for the unshare, then for fn */
};

int doctor_userns_start(struct doctor_userns_child *c, int flags, doctor_probe_fn *fn, void *arg, hu_err *err);
int doctor_userns_finish(struct doctor_userns_child *c, char *info, size_t n, hu_err *err);

/* waitpid() through EINTR; the wait status. */
int doctor_reap(pid_t pid);

/* In a new mount namespace: make every mount private, so that nothing the
 * probe mounts leaks back to the host through shared propagation (systemd
 * makes / shared). */
int doctor_make_mounts_private(hu_err *err);

#endif
