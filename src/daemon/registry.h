/*
 * The daemon's live sandboxes: one struct hu_sbx per sandbox, indexed by id
 * (and by access token for signed URLs later). The store (store.h) is the
 * source of truth on disk; the registry holds what only a live process can:
 * the runtime handle, timers and streams.
 */
#ifndef HUTCH_DAEMON_REGISTRY_H
#define HUTCH_DAEMON_REGISTRY_H

#include <event2/event.h>
#include <jansson.h>
#include <stdint.h>

#include "daemon/daemon.h"

enum hu_sbx_state { HU_SBX_RUNNING = 1, HU_SBX_PAUSED = 2 };

struct hu_sbx {
	char id[HU_ID_MAX];
	char team[64];
	char template_id[HU_ID_MAX];
	char access_token[65];    /* random hex; X-Access-Token on the data plane */
	enum hu_sbx_state state;
	int64_t started_at_ms;    /* unix ms */
	int64_t end_at_ms;        /* unix ms; kill (or pause, later) at this time */
	int32_t timeout_s;        /* the sandbox's timeout window */
	json_t *metadata;         /* object of string -> string (owned) */
	json_t *env_vars;         /* object of string -> string (owned): default env of every command */
	int auto_pause;           /* lifecycle.onTimeout == pause (stored; lifecycle issue) */
	int auto_resume;          /* stored for the lifecycle issue */
	int allow_internet;       /* as the client gave it: -1 = not given */
	int internet;             /* it has a veth and NAT (network = nat, and allow_internet != 0) */
	int has_network;          /* the client gave `network` rules */
	struct hu_net_rules net_rules; /* its allowOut / denyOut (runtime/net.h) */
	uint32_t cpu_millis;
	uint64_t memory_bytes;
	uint64_t disk_bytes;
	struct hu_sandbox *rt;    /* runtime handle */
	struct event *timer;      /* fires at end_at */
	struct event *exit_watch; /* pidfd of hutch-init: the sandbox died */
	struct hu_sbx_metrics *metrics; /* recent usage samples (sbx_metrics.h) */
	struct hu_registry *reg;
};

struct hu_registry;

int hu_registry_new(struct hu_daemon *d, struct hu_registry **out, hu_err *err);
void hu_registry_free(struct hu_registry *reg); /* frees handles, does not destroy sandboxes */
struct hu_daemon *hu_registry_daemon(const struct hu_registry *reg);

struct hu_sbx *hu_registry_get(struct hu_registry *reg, const char *id);
/* The sandbox owning this access token, or NULL (constant-time compare). */
struct hu_sbx *hu_registry_by_token(struct hu_registry *reg, const char *token);
size_t hu_registry_count(struct hu_registry *reg);
/* Index s (its id must be new) and watch its hutch-init: if init exits on
 * its own, the sandbox is killed (hu_sbx_kill) and removed. */
int hu_registry_add(struct hu_registry *reg, struct hu_sbx *s, hu_err *err);
/* Unindex s and stop watching it; s itself is not freed. */
void hu_registry_remove(struct hu_registry *reg, struct hu_sbx *s);
/* Free what the daemon holds for s (timers, watches, JSON, samples), not
 * the runtime sandbox: destroy or hand off s->rt first. */
void hu_sbx_free(struct hu_sbx *s);
/* Iterate: call fn for each sandbox; stop when fn returns non-zero. fn must
 * not add or remove sandboxes (collect them first). */
void hu_registry_each(struct hu_registry *reg, int (*fn)(struct hu_sbx *s, void *arg), void *arg);

/* The unix socket path of the sandbox's hutch-init. */
const char *hu_sbx_socket(const struct hu_sbx *s);
/* Record activity on the data plane (a no-op until the lifecycle issue makes
 * timeout an idle window). */
void hu_sbx_touch(struct hu_sbx *s);

#endif
