/* Per-sandbox account of learned addresses (dns_learned.h). */
#include "daemon/dns/dns_learned.h"

#include <stdlib.h>
#include <string.h>

#define TABLE 4096 /* sandbox addresses with live entries, open addressing */

struct entry {
	uint8_t a[16];
	int64_t until;
};

struct bucket {
	uint32_t sbx;
	unsigned n;
	struct entry e[HU_DNS_LEARNED_MAX];
};

struct hu_dns_learned {
	struct bucket *t[TABLE];
	unsigned sweep; /* the next slot an admit tidies up */
	unsigned used;  /* buckets in the table */
};

struct hu_dns_learned *hu_dns_learned_new(void)
{
	return calloc(1, sizeof(struct hu_dns_learned));
}

void hu_dns_learned_free(struct hu_dns_learned *l)
{
	if (!l)
		return;
	for (unsigned i = 0; i < TABLE; i++)
		free(l->t[i]);
	free(l);
}

static void prune(struct bucket *b, int64_t now)
{
	unsigned k = 0;
	for (unsigned i = 0; i < b->n; i++)
		if (b->e[i].until > now)
			b->e[k++] = b->e[i];
	b->n = k;
}

/* The slot of sbx, or of the first free one on its probe path; -1 full. */
static int find(const struct hu_dns_learned *l, uint32_t sbx, int *free_at)
{
	unsigned h = (sbx * 2654435761u) % TABLE;
	*free_at = -1;
	for (unsigned k = 0; k < TABLE; k++) {
		unsigned i = (h + k) % TABLE;
		if (!l->t[i]) {
			if (*free_at < 0)
				*free_at = (int)i;
			return -1; /* open addressing without deletion markers: see drop() */
		}
		if (l->t[i]->sbx == sbx)
			return (int)i;
	}
	return -1;
}

/* Empty buckets are freed and their probe chain re-inserted, so that
 * find() can stop at the first hole. */
static void drop(struct hu_dns_learned *l, unsigned i)
{
	free(l->t[i]);
	l->t[i] = NULL;
	l->used--;
	for (unsigned k = (i + 1) % TABLE; l->t[k]; k = (k + 1) % TABLE) {
		struct bucket *b = l->t[k];
		int free_at;
		l->t[k] = NULL;
		find(l, b->sbx, &free_at);
		l->t[free_at] = b;
	}
}

static void tidy_one(struct hu_dns_learned *l, int64_t now)
{
	unsigned i = l->sweep;
	l->sweep = (l->sweep + 1) % TABLE;
	if (l->t[i]) {
		prune(l->t[i], now);
		if (!l->t[i]->n)
			drop(l, i);
	}
}

/* Three quarters full: every bucket is tidied (expired sandboxes' buckets
 * go), so probe chains stay short and a new sandbox finds room. */
static void sweep_all(struct hu_dns_learned *l, int64_t now)
{
	for (unsigned i = 0; i < TABLE; i++)
		while (l->t[i]) {
			prune(l->t[i], now);
			if (l->t[i]->n)
				break;
			drop(l, i); /* may move another bucket into slot i: look again */
		}
}

unsigned hu_dns_learned_count(struct hu_dns_learned *l, uint32_t sbx, int64_t now)
{
	int free_at, i = find(l, sbx, &free_at);
	if (i < 0)
		return 0;
	prune(l->t[i], now);
	return l->t[i]->n;
}

static struct entry *known(struct bucket *b, const uint8_t a[16])
{
	for (unsigned i = 0; i < b->n; i++)
		if (!memcmp(b->e[i].a, a, 16))
			return &b->e[i];
	return NULL;
}

int hu_dns_learned_admit(struct hu_dns_learned *l, uint32_t sbx, const uint8_t (*addrs)[16], unsigned n,
			 unsigned ttl, int64_t now)
{
	int free_at, i;

	tidy_one(l, now);
	if (n == 0)
		return 0;
	if ((i = find(l, sbx, &free_at)) < 0) {
		if (l->used >= TABLE / 4 * 3) {
			sweep_all(l, now);
			find(l, sbx, &free_at);
		}
		if (free_at < 0 || l->used >= TABLE - 1 || !(l->t[free_at] = calloc(1, sizeof(struct bucket))))
			return -1;
		l->used++;
		l->t[free_at]->sbx = sbx;
		i = free_at;
	}
	struct bucket *b = l->t[i];
	prune(b, now);
	/* all or nothing: count the new ones first (duplicates in the answer
	 * count once) */
	unsigned fresh = 0;
	for (unsigned k = 0; k < n; k++) {
		int dup = known(b, addrs[k]) != NULL;
		for (unsigned j = 0; j < k && !dup; j++)
			dup = !memcmp(addrs[j], addrs[k], 16);
		fresh += !dup;
	}
	if (b->n + fresh > HU_DNS_LEARNED_MAX) {
		if (!b->n)
			drop(l, (unsigned)i);
		return -1;
	}
	int64_t until = now + (int64_t)ttl;
	for (unsigned k = 0; k < n; k++) {
		struct entry *e = known(b, addrs[k]);
		if (!e) {
			e = &b->e[b->n++];
			memcpy(e->a, addrs[k], 16);
			e->until = until;
		} else if (e->until < until) {
			e->until = until;
		}
	}
	return 0;
}
