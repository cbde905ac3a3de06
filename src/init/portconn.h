/*
 * PORT_CONNECT: a TCP connection to a server inside the sandbox, handed to
 * the daemon as a descriptor. init lives in the sandbox's network namespace,
 * so 127.0.0.1 here is the sandbox's own loopback: servers that listen only
 * there are reachable, and the sandbox needs no route to the outside.
 */
#ifndef HUTCH_INIT_PORTCONN_H
#define HUTCH_INIT_PORTCONN_H

#include "init/conn.h"
#include "init/request.h"

/* Connect to 127.0.0.1:req->port (non-blocking, never waits) and reply
 * PORT_SOCKET with the socket attached, or ERROR (ECONNREFUSED when nothing
 * listens, EBUSY when c has other replies queued). */
void hu_port_connect(struct hu_conn *c, const struct hu_request *req);

#endif
