/*
 * The compiled seccomp program, cached in the run directory so that a
 * short-lived `hutch run` does not compile it (libseccomp, with its probes of
 * the kernel) every time. docs/security.md says why the cache cannot be
 * poisoned: it lives in a directory only root can enter, every entry is
 * checked (owner, mode, links, size, key, checksum) before use, and anything
 * doubtful is compiled afresh and replaced.
 */
#ifndef HUTCH_RUNTIME_SECCOMP_CACHE_H
#define HUTCH_RUNTIME_SECCOMP_CACHE_H

#include <stdint.h>
#include <sys/utsname.h>

#include "runtime/seccomp.h"
#include "util/err.h"

/* What the compiled program depends on, compared byte for byte: this binary
 * (device, inode, size, mtime and ctime of /proc/self/exe: any rebuild or
 * rewrite changes one), libseccomp's version and the kernel (uname). */
struct hu_seccomp_key {
	char tag[24];
	uint64_t dev, ino, size, mtime_s, mtime_ns, ctime_s, ctime_ns;
	uint32_t lib_major, lib_minor, lib_micro, reserved;
	struct utsname uts;
};

enum hu_seccomp_cache_state {
	HU_SECCOMP_CACHE_HIT,     /* used as it was */
	HU_SECCOMP_CACHE_MISS,    /* none yet: compiled and stored */
	HU_SECCOMP_CACHE_STALE,   /* made by another binary, libseccomp or kernel: compiled and replaced */
	HU_SECCOMP_CACHE_REFUSED, /* failed a check: compiled, and replaced where the directory is sound */
};

/* This process's key (every byte set, padding included). */
int hu_seccomp_cache_key(struct hu_seccomp_key *key, hu_err *err);

/* Read the entry in directory `dirfd` into *out if it passes every check;
 * *state says HIT, MISS, STALE or REFUSED (out is empty unless HIT). Fails
 * only for lack of memory. */
int hu_seccomp_cache_load(int dirfd, const struct hu_seccomp_key *key, struct hu_seccomp_prog *out,
			  enum hu_seccomp_cache_state *state, hu_err *err);

/* Write `prog` as the entry for `key` (a private temporary file renamed
 * over the entry: readers see the old entry or the new one, whole). */
int hu_seccomp_cache_store(int dirfd, const struct hu_seccomp_key *key, const struct hu_seccomp_prog *prog,
			   hu_err *err);

/* <run_dir>/cache, made 0700 if missing; -1 (nothing cached there) unless it
 * is a directory that only we (root) can enter and write. init_keep.c keeps
 * its record there too. */
int hu_seccomp_cache_dir(const char *run_dir);

/* The program for this process: from <run_dir>/cache when it passes the
 * checks, else compiled (and stored when the directory is sound; a failure
 * to store does not fail the call). `state` may be NULL. */
int hu_seccomp_get(const char *run_dir, struct hu_seccomp_prog *out, enum hu_seccomp_cache_state *state,
		   hu_err *err);
/* The same with the cache directory already open (hu_seccomp_cache_dir;
 * -1: compile, store nothing). */
int hu_seccomp_get_at(int dirfd, struct hu_seccomp_prog *out, enum hu_seccomp_cache_state *state, hu_err *err);

#endif
