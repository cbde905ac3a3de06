/*
 * The registry (registry.h): an open-addressing hash table of id -> hu_sbx
 * (linear probing, power-of-two size kept at most half full, deletion by
 * backward shift so there are no tombstones), a pidfd watch per sandbox,
 * and the timer that samples every sandbox's usage for the metrics API.
 */
#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/init_death.h"
#include "util/clock.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/sandboxes/sbx_metrics.h"

#define MIN_SLOTS 64
#define SIG_HINTS 1024 /* signature index entries (a power of two) */

/* One entry of the signature index: a signature digest and the sandbox it
 * verified for. Direct-mapped by the digest's first bytes (the digest is a
 * sha256, uniformly spread already); a newer signature overwrites an older
 * one in its slot, which only costs that older link a fresh search. */
struct sig_hint {
	uint8_t digest[HU_SIG_DIGEST_LEN];
	char id[HU_ID_MAX];
};

struct hu_registry {
	struct hu_daemon *d;
	struct hu_sbx **slots;  /* by id */
	struct hu_sbx **tslots; /* by access token: the same sandboxes, same size */
	size_t nslots; /* a power of two */
	size_t count;
	struct event *sampler;
	size_t sample_next; /* the slot the sampler's next slice starts at */
	struct sig_hint *sig_hints; /* SIG_HINTS entries */
	struct hu_deaths *deaths;   /* why recent sandboxes' inits died (init_death.h) */
};

/* FNV-1a: ids are random already; this only spreads them over the slots. */
static size_t hash_id(const char *id)
{
	uint64_t h = 1469598103934665603ull;
	for (; *id; id++)
		h = (h ^ (uint8_t)*id) * 1099511628211ull;
	return (size_t)h;
}

/* The two tables differ only in the key: a sandbox's id or its token. */
enum key { BY_ID, BY_TOKEN };

static const char *key_of(const struct hu_sbx *s, enum key k)
{
	return k == BY_ID ? s->id : s->access_token;
}

static size_t find_in(struct hu_sbx *const *slots, size_t nslots, enum key k, const char *key)
{
	size_t mask = nslots - 1, i = hash_id(key) & mask;
	while (slots[i] && strcmp(key_of(slots[i], k), key))
		i = (i + 1) & mask;
	return i;
}

static size_t find_slot(const struct hu_registry *reg, const char *id)
{
	return find_in(reg->slots, reg->nslots, BY_ID, id);
}

/* Remove s from one table; backward shift: later entries of the probe run
 * move into the hole when their home slot does not lie strictly between
 * hole and them, so there are no tombstones. */
static bool remove_from(struct hu_sbx **slots, size_t nslots, enum key k, const struct hu_sbx *s)
{
	size_t mask = nslots - 1, i = find_in(slots, nslots, k, key_of(s, k)), j;
	if (slots[i] != s)
		return false;
	slots[i] = NULL;
	for (j = (i + 1) & mask; slots[j]; j = (j + 1) & mask) {
		size_t home = hash_id(key_of(slots[j], k)) & mask;
		int between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!between) {
			slots[i] = slots[j];
			slots[j] = NULL;
			i = j;
		}
	}
	return true;
}

static int grow(struct hu_registry *reg, hu_err *err)
{
	size_t old_n = reg->nslots, n = old_n * 2;
	struct hu_sbx **old = reg->slots, **slots = calloc(n, sizeof(*slots));
	struct hu_sbx **tslots = calloc(n, sizeof(*tslots));

	if (!slots || !tslots) {
		free(slots);
		free(tslots);
		return hu_err_set(err, ENOMEM, "registry");
	}
	for (size_t i = 0; i < old_n; i++) {
		if (!old[i])
			continue;
		slots[find_in(slots, n, BY_ID, old[i]->id)] = old[i];
		if (old[i]->access_token[0])
			tslots[find_in(tslots, n, BY_TOKEN, old[i]->access_token)] = old[i];
	}
	free(old);
	free(reg->tslots);
	reg->slots = slots;
	reg->tslots = tslots;
	reg->nslots = n;
	return 0;
}

/* Every sandbox is sampled once per HU_METRICS_INTERVAL_S, but not all at
 * once: sampling reads a few cgroup files and statfs()s the disk, ~0.1 ms per
 * sandbox, and with 1000 sandboxes one pass held the event loop for ~100 ms
 * every 5 s (a request arriving then waited for it). The timer fires
 * SAMPLE_SLICES times per interval and walks 1/SAMPLE_SLICES of the slots. A
 * slot table that grows mid-interval may sample a sandbox twice or skip it
 * once: a graph point more or less, nothing else. */
#define SAMPLE_SLICES 50

static void sample_all(evutil_socket_t fd, short what, void *arg)
{
	struct hu_registry *reg = arg;
	size_t per = (reg->nslots + SAMPLE_SLICES - 1) / SAMPLE_SLICES;
	hu_err err;

	for (size_t k = 0; k < per; k++) {
		size_t i = reg->sample_next++ % reg->nslots;
		struct hu_sbx *s = reg->slots[i];
		/* A failed sample is a gap in the graph, not a reason to act:
		 * a dead sandbox is noticed by its exit watch. */
		if (s && hu_sbx_metrics_record(s, &err) < 0)
			hu_log(HU_LOG_DEBUG, s->id, 0, "metrics sample: %s", err.msg);
	}
}

int hu_registry_new(struct hu_daemon *d, struct hu_registry **out, hu_err *err)
{
	struct hu_registry *reg = calloc(1, sizeof(*reg));
	struct timeval every = {0, HU_METRICS_INTERVAL_S * 1000000 / SAMPLE_SLICES};

	*out = NULL;
	if (!reg)
		return hu_err_set(err, ENOMEM, "registry");
	reg->d = d;
	reg->nslots = MIN_SLOTS;
	reg->slots = calloc(reg->nslots, sizeof(*reg->slots));
	reg->tslots = calloc(reg->nslots, sizeof(*reg->tslots));
	reg->sig_hints = calloc(SIG_HINTS, sizeof(*reg->sig_hints));
	reg->deaths = calloc(1, sizeof(*reg->deaths));
	reg->sampler = event_new(d->base, -1, EV_PERSIST, sample_all, reg);
	if (!reg->slots || !reg->tslots || !reg->sig_hints || !reg->sampler || event_add(reg->sampler, &every) < 0) {
		hu_registry_free(reg);
		return hu_err_set(err, ENOMEM, "registry");
	}
	*out = reg;
	return 0;
}

void hu_sbx_free(struct hu_sbx *s)
{
	if (!s)
		return;
	if (s->timer)
		event_free(s->timer);
	if (s->exit_watch)
		event_free(s->exit_watch);
	json_decref(s->metadata);
	json_decref(s->env_vars);
	json_decref(s->mounts);
	free(s->metrics);
	free(s);
}

/* Sandboxes outlive the daemon (a restarted one adopts them), so only the
 * daemon's side is freed: the runtime handles are closed, not destroyed. */
void hu_registry_free(struct hu_registry *reg)
{
	if (!reg)
		return;
	for (size_t i = 0; reg->slots && i < reg->nslots; i++) {
		if (reg->slots[i])
			hu_sandbox_close(reg->slots[i]->rt);
		hu_sbx_free(reg->slots[i]);
	}
	if (reg->sampler)
		event_free(reg->sampler);
	free(reg->slots);
	free(reg->tslots);
	free(reg->sig_hints);
	free(reg->deaths);
	free(reg);
}

struct hu_daemon *hu_registry_daemon(const struct hu_registry *reg)
{
	return reg->d;
}

struct hu_sbx *hu_registry_get(struct hu_registry *reg, const char *id)
{
	return reg->slots[find_slot(reg, id)];
}

/* Constant-time, so the time taken does not tell how many leading
 * characters of a guessed token were right. */
static int token_equal(const char *a, const char *b)
{
	size_t n = strlen(a);
	return n > 0 && strlen(b) == n && CRYPTO_memcmp(a, b, n) == 0;
}

/* One probe in the token table; the final compare is constant-time. */
struct hu_sbx *hu_registry_by_token(struct hu_registry *reg, const char *token)
{
	if (!token || !*token)
		return NULL;
	struct hu_sbx *s = reg->tslots[find_in(reg->tslots, reg->nslots, BY_TOKEN, token)];
	return s && token_equal(s->access_token, token) ? s : NULL;
}

static struct sig_hint *sig_slot(struct hu_registry *reg, const uint8_t *digest)
{
	size_t i = ((size_t)digest[0] << 8 | digest[1]) & (SIG_HINTS - 1);
	return &reg->sig_hints[i];
}

const char *hu_registry_sig_hint(struct hu_registry *reg, const uint8_t digest[HU_SIG_DIGEST_LEN])
{
	struct sig_hint *h = sig_slot(reg, digest);
	/* The caller verifies the sandbox it gets against the full signature,
	 * so a plain compare is enough here. */
	return h->id[0] && !memcmp(h->digest, digest, HU_SIG_DIGEST_LEN) ? h->id : NULL;
}

void hu_registry_sig_remember(struct hu_registry *reg, const uint8_t digest[HU_SIG_DIGEST_LEN], const char *id)
{
	struct sig_hint *h = sig_slot(reg, digest);
	memcpy(h->digest, digest, HU_SIG_DIGEST_LEN);
	snprintf(h->id, sizeof(h->id), "%s", id);
}

bool hu_registry_sandbox_gone(struct hu_registry *reg, const char *id)
{
	struct hu_sbx *s = reg ? hu_registry_get(reg, id) : NULL;
	return !s || s->state != HU_SBX_RUNNING;
}

size_t hu_registry_count(struct hu_registry *reg)
{
	return reg->count;
}

void hu_registry_each(struct hu_registry *reg, int (*fn)(struct hu_sbx *s, void *arg), void *arg)
{
	for (size_t i = 0; i < reg->nslots; i++)
		if (reg->slots[i] && fn(reg->slots[i], arg))
			return;
}

/* hutch-init exited without being asked: everything inside is gone with
 * it (PID 1 of the namespace), so the sandbox is dead; clean up after it. */
/* hutch-init died without being asked: say why (its wait status, peeked
 * without reaping it, and the cgroup's OOM kills), remember it, clean up. */
static void on_init_exit(evutil_socket_t fd, short what, void *arg)
{
	struct hu_sbx *s = arg;
	struct hu_cgroup_stats st = {0};
	char reason[HU_DEATH_REASON_MAX];
	siginfo_t si = {0};
	uint64_t disk;
	hu_err err;

	int known = waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED | WNOWAIT | WNOHANG) == 0 && si.si_pid;
	if (s->rt)
		hu_sandbox_stats(s->rt, &st, &disk, &err);
	hu_init_death_describe(known ? &si : NULL, st.oom_kills, reason, sizeof(reason));
	hu_log(HU_LOG_WARN, s->id, 0, "%s", reason);
	if (s->reg->deaths)
		hu_deaths_note(s->reg->deaths, s->id, s->team, s->access_token, reason, hu_mono_ms());
	if (hu_sbx_kill(s->reg->d, s, reason, &err) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "cleanup after init exit: %s", err.msg);
}

const char *hu_registry_death(struct hu_registry *reg, const char *id, const char *team, const char *token)
{
	return reg && reg->deaths ? hu_deaths_find(reg->deaths, id, team, token, hu_mono_ms()) : NULL;
}

int hu_registry_watch(struct hu_registry *reg, struct hu_sbx *s, hu_err *err)
{
	hu_registry_unwatch(reg, s);
	if (!s->rt || hu_sandbox_pidfd(s->rt) < 0)
		return 0;
	s->exit_watch = event_new(reg->d->base, hu_sandbox_pidfd(s->rt), EV_READ, on_init_exit, s);
	if (!s->exit_watch || event_add(s->exit_watch, NULL) < 0) {
		hu_registry_unwatch(reg, s);
		return hu_err_set(err, ENOMEM, "watch sandbox %s", s->id);
	}
	return 0;
}

void hu_registry_unwatch(struct hu_registry *reg, struct hu_sbx *s)
{
	if (s->exit_watch)
		event_free(s->exit_watch);
	s->exit_watch = NULL;
}

int hu_registry_add(struct hu_registry *reg, struct hu_sbx *s, hu_err *err)
{
	size_t i;

	if (hu_registry_get(reg, s->id))
		return hu_err_set(err, -EEXIST, "sandbox %s is already registered", s->id);
	if ((reg->count + 1) * 2 > reg->nslots && grow(reg, err) < 0)
		return -1;
	if (hu_registry_watch(reg, s, err) < 0)
		return -1;
	i = find_slot(reg, s->id);
	reg->slots[i] = s;
	if (s->access_token[0])
		reg->tslots[find_in(reg->tslots, reg->nslots, BY_TOKEN, s->access_token)] = s;
	reg->count++;
	s->reg = reg;
	return 0;
}

void hu_registry_remove(struct hu_registry *reg, struct hu_sbx *s)
{
	hu_registry_unwatch(reg, s);
	if (!remove_from(reg->slots, reg->nslots, BY_ID, s))
		return;
	if (s->access_token[0])
		remove_from(reg->tslots, reg->nslots, BY_TOKEN, s);
	reg->count--;
}

const char *hu_sbx_socket(const struct hu_sbx *s)
{
	return hu_sandbox_socket(s->rt);
}

