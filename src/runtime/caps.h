/*
 * Capability handling for processes hutch-init starts. Raw prctl/capset, so
 * hutch-init needs no libcap.
 *
 * - A process run as `user` gets no capabilities at all: empty effective,
 *   permitted, inheritable, ambient and bounding sets.
 * - A process run as `root` gets HU_CAPS_ROOT_DEFAULT (chown, dac_override,
 *   fowner, fsetid, kill, setgid, setuid, setpcap, net_bind_service,
 *   audit_write, setfcap), all of them scoped to the sandbox's own
 *   user namespace; everything else, including the bounding set, is dropped.
 */
#ifndef HUTCH_RUNTIME_CAPS_H
#define HUTCH_RUNTIME_CAPS_H

#include <stdint.h>

#include "util/err.h"

extern const uint64_t HU_CAPS_ROOT_DEFAULT;

/* Reduce the bounding set to `keep` (a bit mask of CAP_* numbers). */
int hu_caps_bound_to(uint64_t keep, hu_err *err);
/* Set effective = permitted = inheritable = `keep` and clear ambient. */
int hu_caps_set(uint64_t keep, hu_err *err);
/* Both of the above: what a spawned process calls right before execve (after
 * setresuid for `user`, which already clears them; this makes it explicit). */
int hu_caps_drop_to(uint64_t keep, hu_err *err);

#endif
