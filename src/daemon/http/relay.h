/*
 * A byte relay between a client and a server, both bufferevents. Each
 * direction is bounded: when the side being written to holds more than
 * HU_RELAY_HIGH bytes unsent, the other side is not read until it drains
 * below HU_RELAY_LOW, so a reader that stalls slows its writer down instead
 * of growing the daemon's memory (and TCP carries the pressure back).
 *
 * Two modes. Two-way (WebSocket and other upgrades, what ingress.c uses):
 * bytes flow both ways, and an end of stream on one side is passed on as a
 * half-close. Response only: the client is only watched for going away, and
 * what it sends meanwhile is left unread. Either way the relay ends when the server's end of stream
 * has been written out to the client, or on the first error.
 */
#ifndef HUTCH_DAEMON_HTTP_RELAY_H
#define HUTCH_DAEMON_HTTP_RELAY_H

#include <event2/bufferevent.h>
#include <stdbool.h>
#include <stdint.h>

#define HU_RELAY_HIGH (256u * 1024)
#define HU_RELAY_LOW (64u * 1024)

struct hu_relay;

/* The relay is over (why: NULL on a clean end). The owner frees both
 * bufferevents after hu_relay_free. */
typedef void (*hu_relay_done_cb)(struct hu_relay *rl, const char *why, void *arg);

/* Start relaying; neither bufferevent is owned. Bytes already in either
 * input buffer are forwarded. */
struct hu_relay *hu_relay_start(struct bufferevent *client, struct bufferevent *server, bool two_way,
				hu_relay_done_cb done, void *arg);
/* Bytes moved each way so far. */
void hu_relay_counts(const struct hu_relay *rl, uint64_t *to_server, uint64_t *to_client);
/* Detach from both bufferevents (their callbacks are cleared) and free. */
void hu_relay_free(struct hu_relay *rl);

#endif
