/* Pseudo-terminals for SPAWN with PTY_ROWS/PTY_COLS, via /dev/ptmx. */
#ifndef HUTCH_INIT_PTY_H
#define HUTCH_INIT_PTY_H

#include <stdint.h>

#include "util/err.h"

/* Open a master/slave pair (both O_CLOEXEC, master O_NOCTTY) with the
 * given window size. */
int hu_pty_open(uint16_t rows, uint16_t cols, int *master, int *slave, hu_err *err);
/* In the child, after setsid(): make the slave the controlling terminal and
 * stdin/stdout/stderr. */
int hu_pty_make_controlling(int slave, hu_err *err);
int hu_pty_resize(int master, uint16_t rows, uint16_t cols, hu_err *err);

#endif
