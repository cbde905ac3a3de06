/*
 * The DNS proxy's queries in flight to the resolver: HU_DNS_SLOTS of them,
 * at most HU_DNS_SLOT_SHARE per sandbox address (one sandbox flooding the
 * proxy cannot take the slots of the others), each forwarded with an
 * upstream id of 16 random bits of its own (never derived from the slot:
 * a forged answer has to guess all 16, plus the question), found again
 * through a table indexed by that id. A slot unanswered for
 * HU_DNS_SLOT_TTL_S is free again. Pure: the caller passes the time and the
 * random numbers, so the unit tests drive it.
 */
#ifndef HUTCH_DAEMON_DNS_SLOTS_H
#define HUTCH_DAEMON_DNS_SLOTS_H

#include <stdint.h>

#define HU_DNS_SLOTS 1024
#define HU_DNS_SLOT_SHARE 128
#define HU_DNS_SLOT_TTL_S 5

struct hu_dns_slots {
	uint32_t addr[HU_DNS_SLOTS]; /* the asking sandbox's address */
	int64_t at[HU_DNS_SLOTS];    /* when (seconds) */
	uint16_t id[HU_DNS_SLOTS];   /* its upstream id */
	uint8_t used[HU_DNS_SLOTS];
	uint16_t by_id[65536];       /* upstream id -> slot + 1, 0 = none */
	unsigned cursor;
};

/* 16 random bits (getrandom in the daemon, a sequence in the tests). */
typedef int (*hu_dns_rand_fn)(uint16_t *out, void *arg);

/* A slot for a query from addr at now, its upstream id in *id; -1 when the
 * sandbox already has its share in flight, every slot is taken, or no
 * random id could be drawn. */
int hu_dns_slots_take(struct hu_dns_slots *t, uint32_t addr, int64_t now, hu_dns_rand_fn rnd, void *arg,
		      uint16_t *id);
/* The live slot of upstream id, or -1. */
int hu_dns_slots_find(const struct hu_dns_slots *t, uint16_t id, int64_t now);
void hu_dns_slots_release(struct hu_dns_slots *t, int slot);
/* Queries of addr in flight now (for tests and metrics). */
unsigned hu_dns_slots_in_flight(const struct hu_dns_slots *t, uint32_t addr, int64_t now);

#endif
