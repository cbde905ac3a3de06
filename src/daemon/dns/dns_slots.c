/* The DNS proxy's queries in flight (dns_slots.h). */
#include "daemon/dns/dns_slots.h"

#define ID_TRIES 8 /* draws of a random id before giving up on a busy table */

static int live(const struct hu_dns_slots *t, unsigned i, int64_t now)
{
	return t->used[i] && now - t->at[i] <= HU_DNS_SLOT_TTL_S && now >= t->at[i];
}

void hu_dns_slots_release(struct hu_dns_slots *t, int slot)
{
	if (slot < 0 || slot >= HU_DNS_SLOTS || !t->used[slot])
		return;
	if (t->by_id[t->id[slot]] == slot + 1)
		t->by_id[t->id[slot]] = 0;
	t->used[slot] = 0;
}

unsigned hu_dns_slots_in_flight(const struct hu_dns_slots *t, uint32_t addr, int64_t now)
{
	unsigned n = 0;
	for (unsigned i = 0; i < HU_DNS_SLOTS; i++)
		n += live(t, i, now) && t->addr[i] == addr;
	return n;
}

int hu_dns_slots_take(struct hu_dns_slots *t, uint32_t addr, int64_t now, hu_dns_rand_fn rnd, void *arg,
		      uint16_t *id)
{
	unsigned mine = 0;
	int free_slot = -1;

	/* one pass: this sandbox's queries in flight, and the next free slot */
	for (unsigned k = 0; k < HU_DNS_SLOTS; k++) {
		unsigned i = (t->cursor + k) % HU_DNS_SLOTS;
		if (live(t, i, now))
			mine += t->addr[i] == addr;
		else if (free_slot < 0)
			free_slot = (int)i;
	}
	if (mine >= HU_DNS_SLOT_SHARE || free_slot < 0)
		return -1;
	hu_dns_slots_release(t, free_slot); /* an expired query: forgotten */
	for (int tries = 0; tries < ID_TRIES; tries++) {
		uint16_t v;
		if (rnd(&v, arg) < 0)
			return -1;
		int other = t->by_id[v] - 1;
		if (other >= 0 && live(t, (unsigned)other, now))
			continue; /* taken by a live query: draw again */
		if (other >= 0)
			hu_dns_slots_release(t, other);
		t->addr[free_slot] = addr;
		t->at[free_slot] = now;
		t->id[free_slot] = v;
		t->used[free_slot] = 1;
		t->by_id[v] = (uint16_t)(free_slot + 1);
		t->cursor = (unsigned)(free_slot + 1) % HU_DNS_SLOTS;
		*id = v;
		return free_slot;
	}
	return -1;
}

int hu_dns_slots_find(const struct hu_dns_slots *t, uint16_t id, int64_t now)
{
	int slot = t->by_id[id] - 1;
	if (slot < 0 || !live(t, (unsigned)slot, now) || t->id[slot] != id)
		return -1;
	return slot;
}
