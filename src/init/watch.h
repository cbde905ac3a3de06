/*
 * Directory watches of hutch-init (WATCH_START): inotify, as the requesting
 * user, reported as WATCH_EVENT frames on the connection that asked until
 * that connection closes. Recursive watches follow subdirectories created
 * (or moved in) later. A slow client stops init reading the inotify queue;
 * if the kernel's queue then overflows, the watch ends with an ERROR rather
 * than silently losing events.
 */
#ifndef HUTCH_INIT_WATCH_H
#define HUTCH_INIT_WATCH_H

#include "init/conn.h"
#include "init/request.h"

#define HU_DIRWATCH_MAX 64          /* watches alive in one init (one inotify instance each) */
#define HU_DIRWATCH_MAX_DIRS 8192   /* directories one recursive watch follows */

void hu_dirwatch_start(struct hu_conn *c, const struct hu_request *req);
/* c is closing: end its watches. */
void hu_dirwatch_forget_conn(struct hu_conn *c);
/* c has room in its queue again: read its watches' events. */
void hu_dirwatch_conn_drained(struct hu_conn *c);

#endif
