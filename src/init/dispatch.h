/* Turning one request frame into the action of the module that owns it. */
#ifndef HUTCH_INIT_DISPATCH_H
#define HUTCH_INIT_DISPATCH_H

#include <stdint.h>

#include "init/conn.h"
#include "proto/initproto.h"

/* Decode and act on one request from c. Replies go to c's queue. -1 means a
 * protocol error: the caller closes c (and only c). */
int hu_dispatch(struct hu_conn *c, const struct hu_frame_hdr *hdr, const uint8_t *payload);

#endif
