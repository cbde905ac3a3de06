/* Passing file descriptors over a unix socket (SCM_RIGHTS). */
#ifndef HUTCH_UTIL_FDPASS_H
#define HUTCH_UTIL_FDPASS_H

#include <stddef.h>

/* Send `len` bytes of data with `nfds` descriptors attached. 0 or -1 (errno). */
int hu_send_fds(int sock, const void *data, size_t len, const int *fds, size_t nfds);
/* Receive up to `len` bytes and up to `max_fds` descriptors (made CLOEXEC).
 * Returns the byte count (0 at EOF) or -1 (errno); *nfds gets the count. */
long hu_recv_fds(int sock, void *data, size_t len, int *fds, size_t max_fds, size_t *nfds);

#endif
