/*
 * Shared libraries loaded on first use. libarchive (with libxml2, ICU and
 * libstdc++ behind it) and libnftables are needed only to import a template
 * layer and to run sandboxes with internet access; linked into the binary,
 * the dynamic loader maps and binds them (every symbol, -z now) at the start
 * of every hutch command, which costs more than a whole bwrap run. Loaded
 * here instead, only the commands that use them pay.
 */
#ifndef HUTCH_UTIL_DYNLIB_H
#define HUTCH_UTIL_DYNLIB_H

#include <stddef.h>

#include "util/err.h"

struct hu_dynsym {
	const char *name;
	void **slot; /* where the symbol's address is stored */
};

/* dlopen `soname` (the name the linker would have recorded, so the same
 * library the system's loader would pick) with every symbol bound now, and
 * fill every slot; fails naming the first missing symbol. The library stays
 * loaded for the life of the process. Not thread-safe: each caller runs it
 * once, under pthread_once. */
int hu_dynlib_open(const char *soname, const struct hu_dynsym *syms, size_t n, hu_err *err);

#endif
