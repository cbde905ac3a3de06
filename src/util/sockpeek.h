/* Whether a kept, idle socket is still quiet before it is reused. */
#ifndef HUTCH_UTIL_SOCKPEEK_H
#define HUTCH_UTIL_SOCKPEEK_H

#include <stdbool.h>

/* True when nothing waits to be read on fd: no byte and no close from the
 * peer. A close (or a stray byte) may have arrived in the same wake-up as
 * the request that would go on the connection, before the loop's own read
 * event could drop it; a non-blocking MSG_PEEK finds it without taking it. */
bool hu_sock_quiet(int fd);

#endif
