/*
 * A time limit for a child between fork/clone and execve that ends at the
 * execve: a POSIX timer of the child's own (CLOCK_MONOTONIC, SIGKILL).
 *
 * Why a POSIX timer: a successful execve deletes the process's POSIX timers
 * (the kernel's begin_new_exec calls exit_itimers), so the limit cannot
 * reach the program; alarm() and setitimer() survive execve and would kill
 * the program later. tests/unit/util/test_execdeadline.c checks both halves.
 */
#ifndef HUTCH_UTIL_EXECDEADLINE_H
#define HUTCH_UTIL_EXECDEADLINE_H

#include "util/err.h"

/* In a child about to exec: be SIGKILLed in ms milliseconds unless execve
 * succeeds first. Raw system calls only (glibc's timer_create wrapper brings
 * the SIGEV_THREAD machinery along): safe in a CLONE_VM child, it writes no
 * memory but its own stack and errno. */
int hu_exec_deadline_arm(unsigned ms, hu_err *err);

#endif
