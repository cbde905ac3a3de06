/*
 * The registry (registry.h): an open-addressing hash table of id -> hu_sbx
 * (linear probing, power-of-two size kept at most half full, deletion by
 * backward shift so there are no tombstones), a pidfd watch per sandbox,
 * and the timer that samples every sandbox's usage for the metrics API.
 */
#include "daemon/registry.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sandbox_ops.h"
#include "daemon/sbx_metrics.h"

#define MIN_SLOTS 64

struct hu_registry {
	struct hu_daemon *d;
	struct hu_sbx **slots;
	size_t nslots; /* a power of two */
	size_t count;
	struct event *sampler;
};

/* FNV-1a: ids are random already; this only spreads them over the slots. */
static size_t hash_id(const char *id)
{
	uint64_t h = 1469598103934665603ull;
	for (; *id; id++)
		h = (h ^ (uint8_t)*id) * 1099511628211ull;
	return (size_t)h;
}

static size_t find_slot(const struct hu_registry *reg, const char *id)
{
	size_t mask = reg->nslots - 1, i = hash_id(id) & mask;
	while (reg->slots[i] && strcmp(reg->slots[i]->id, id))
		i = (i + 1) & mask;
	return i;
}

static int grow(struct hu_registry *reg, hu_err *err)
{
	size_t old_n = reg->nslots, n = old_n * 2;
	struct hu_sbx **old = reg->slots, **slots = calloc(n, sizeof(*slots));

	if (!slots)
		return hu_err_set(err, ENOMEM, "registry");
	reg->slots = slots;
	reg->nslots = n;
	for (size_t i = 0; i < old_n; i++)
		if (old[i])
			reg->slots[find_slot(reg, old[i]->id)] = old[i];
	free(old);
	return 0;
}

static void sample_all(evutil_socket_t fd, short what, void *arg)
{
	struct hu_registry *reg = arg;
	hu_err err;

	for (size_t i = 0; i < reg->nslots; i++) {
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
	struct timeval every = {HU_METRICS_INTERVAL_S, 0};

	*out = NULL;
	if (!reg)
		return hu_err_set(err, ENOMEM, "registry");
	reg->d = d;
	reg->nslots = MIN_SLOTS;
	reg->slots = calloc(reg->nslots, sizeof(*reg->slots));
	reg->sampler = event_new(d->base, -1, EV_PERSIST, sample_all, reg);
	if (!reg->slots || !reg->sampler || event_add(reg->sampler, &every) < 0) {
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

/* A linear scan over all sandboxes: fine for the signed-URL path today.
 * TODO(issue 7): an index by token hash once every data-plane request
 * resolves by token. */
struct hu_sbx *hu_registry_by_token(struct hu_registry *reg, const char *token)
{
	struct hu_sbx *found = NULL;

	if (!token || !*token)
		return NULL;
	for (size_t i = 0; i < reg->nslots; i++)
		if (reg->slots[i] && token_equal(reg->slots[i]->access_token, token))
			found = reg->slots[i];
	return found;
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
static void on_init_exit(evutil_socket_t fd, short what, void *arg)
{
	struct hu_sbx *s = arg;
	hu_err err;

	if (hu_sbx_kill(s->reg->d, s, "hutch-init exited on its own", &err) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "cleanup after init exit: %s", err.msg);
}

int hu_registry_add(struct hu_registry *reg, struct hu_sbx *s, hu_err *err)
{
	size_t i;

	if (hu_registry_get(reg, s->id))
		return hu_err_set(err, -EEXIST, "sandbox %s is already registered", s->id);
	if ((reg->count + 1) * 2 > reg->nslots && grow(reg, err) < 0)
		return -1;
	if (s->rt && hu_sandbox_pidfd(s->rt) >= 0) {
		s->exit_watch = event_new(reg->d->base, hu_sandbox_pidfd(s->rt), EV_READ, on_init_exit, s);
		if (!s->exit_watch || event_add(s->exit_watch, NULL) < 0) {
			if (s->exit_watch)
				event_free(s->exit_watch);
			s->exit_watch = NULL;
			return hu_err_set(err, ENOMEM, "watch sandbox %s", s->id);
		}
	}
	i = find_slot(reg, s->id);
	reg->slots[i] = s;
	reg->count++;
	s->reg = reg;
	return 0;
}

void hu_registry_remove(struct hu_registry *reg, struct hu_sbx *s)
{
	size_t mask = reg->nslots - 1, i = find_slot(reg, s->id), j;

	if (s->exit_watch) {
		event_free(s->exit_watch);
		s->exit_watch = NULL;
	}
	if (reg->slots[i] != s)
		return;
	reg->slots[i] = NULL;
	reg->count--;
	/* Backward shift: pull later entries of the probe run into the hole
	 * when their home slot does not lie strictly between hole and them. */
	for (j = (i + 1) & mask; reg->slots[j]; j = (j + 1) & mask) {
		size_t home = hash_id(reg->slots[j]->id) & mask;
		int between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!between) {
			reg->slots[i] = reg->slots[j];
			reg->slots[j] = NULL;
			i = j;
		}
	}
}

const char *hu_sbx_socket(const struct hu_sbx *s)
{
	return hu_sandbox_socket(s->rt);
}

void hu_sbx_touch(struct hu_sbx *s)
{
	/* The hook where the lifecycle issue turns the timeout into an idle
	 * window; the data plane already calls it on every request. */
	(void)s;
}
