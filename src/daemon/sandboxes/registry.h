/*
 * The daemon's live sandboxes: one struct hu_sbx per sandbox, indexed by id
 * (and by access token). The store (store.h) is the
 * source of truth on disk; the registry holds what only a live process can:
 * the runtime handle, timers and streams.
 */
#ifndef HUTCH_DAEMON_REGISTRY_H
#define HUTCH_DAEMON_REGISTRY_H

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/core/daemon.h"
#include "daemon/store/store.h" /* enum hu_sbx_state, HU_IDEM_KEY_MAX */


/* end_at of a sandbox whose timeout is -1 (never): 9999-12-31T23:59:59Z,
 * the largest time RFC 3339 can write, so clients parse it as a date. */
#define HU_NEVER_MS 253402300799000LL

struct hu_sbx {
	char id[HU_ID_MAX];
	char team[64];
	char template_id[HU_ID_MAX];
	char access_token[65];    /* random hex; X-Access-Token on the data plane */
	char traffic_token[65];   /* random hex, or "" with public traffic: E2B-Traffic-Access-Token on ports */
	char mask_host[256];      /* maskRequestHost: the Host port requests are sent with ("${PORT}" = the port), or "" */
	enum hu_sbx_state state;
	int64_t started_at_ms;    /* unix ms */
	int64_t end_at_ms;        /* unix ms: the idle deadline (HU_NEVER_MS: none) */
	int32_t timeout_s;        /* the idle window; -1 = never times out */
	int64_t paused_at_ms;     /* unix ms, when paused (release and reclaim count from it) */
	uint32_t pauses;          /* times paused while live: the ingress reuses no connection across one */
	int64_t last_active_ms;   /* last request or stream end: memory pressure releases LRU first */
	int32_t reclaim_after_s;  /* paused longer than this: deleted (0 = the server's setting, -1 = never) */
	int released;             /* paused with memory released: no processes, files kept */
	unsigned active;          /* open data-plane streams: the sandbox is not idle */
	int dirty;                /* end_at moved since the store last saw it (saved within a second) */
	char idem_key[HU_IDEM_KEY_MAX]; /* Idempotency-Key of its create, or "" */
	json_t *metadata;         /* object of string -> string (owned) */
	json_t *env_vars;         /* object of string -> string (owned): default env of every command */
	int auto_pause;           /* lifecycle.onTimeout == pause, else kill */
	int auto_pause_memory;    /* 0: a timeout pause releases memory at once (autoPauseMemory: false) */
	int auto_resume;          /* a data-plane request resumes a paused sandbox */
	json_t *mounts;           /* volumes and host mounts (owned; sbx_mounts.h), [] when none */
	int allow_internet;       /* as the client gave it: -1 = not given */
	int internet;             /* it has a veth and NAT (network = nat, and allow_internet != 0) */
	int has_network;          /* the client gave `network` rules */
	struct hu_net_rules net_rules; /* its allowOut / denyOut (runtime/net.h) */
	uint32_t cpu_millis;
	uint64_t memory_bytes;
	uint64_t disk_bytes;
	/* what it holds now (memory charge, tasks), read at freeze, at a pool
	 * build's end and by the sampler: a frozen or warm sandbox commits
	 * these, not its limits (commit.h); 0 = not read yet */
	uint64_t held_memory_bytes;
	uint64_t held_pids;
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
/* The signature index for signed URLs (signed_url.c): the id of the sandbox
 * this 32-byte signature digest verified for before, or NULL. A hint only:
 * the caller verifies it again. */
#define HU_SIG_DIGEST_LEN 32 /* sha256 */
const char *hu_registry_sig_hint(struct hu_registry *reg, const uint8_t digest[HU_SIG_DIGEST_LEN]);
/* Why sandbox id's hutch-init died, if it did within the last minutes and
 * team matches (control plane), or, with team NULL, token is its access
 * token (data plane); NULL otherwise (init_death.h). */
const char *hu_registry_death(struct hu_registry *reg, const char *id, const char *team, const char *token);
void hu_registry_sig_remember(struct hu_registry *reg, const uint8_t digest[HU_SIG_DIGEST_LEN], const char *id);
/* Index s (its id must be new) and watch its hutch-init: if init exits on
 * its own, the sandbox is killed (hu_sbx_kill) and removed. */
int hu_registry_add(struct hu_registry *reg, struct hu_sbx *s, hu_err *err);
/* Watch / stop watching s's hutch-init (a memory release stops it on
 * purpose; a restart over kept files starts a new one). */
int hu_registry_watch(struct hu_registry *reg, struct hu_sbx *s, hu_err *err);
void hu_registry_unwatch(struct hu_registry *reg, struct hu_sbx *s);
/* Unindex s and stop watching it; s itself is not freed. */
void hu_registry_remove(struct hu_registry *reg, struct hu_sbx *s);
/* Free what the daemon holds for s (timers, watches, JSON, samples), not
 * the runtime sandbox: destroy or hand off s->rt first. */
void hu_sbx_free(struct hu_sbx *s);
/* Iterate: call fn for each sandbox; stop when fn returns non-zero. fn must
 * not add or remove sandboxes (collect them first). */
void hu_registry_each(struct hu_registry *reg, int (*fn)(struct hu_sbx *s, void *arg), void *arg);

/* No running sandbox has this id any more (killed, timed out, paused, or
 * its init died): a stream of it whose init connection closed should be
 * cut, not ended, as envd's are when E2B's VM goes away. The SDK then
 * probes /health (502) and reports the sandbox as killed. */
bool hu_registry_sandbox_gone(struct hu_registry *reg, const char *id);

/* The unix socket path of the sandbox's hutch-init. */
const char *hu_sbx_socket(const struct hu_sbx *s);
/* Record activity (a data-plane request, the end of a stream): the idle
 * deadline moves to at least now + timeout. In memory at once; the store
 * gets it within a second (lifecycle.c). */
void hu_sbx_touch(struct hu_sbx *s);
/* A data-plane stream opened / ended: while one is open the sandbox is not
 * idle, whatever its deadline says. */
void hu_sbx_stream_begin(struct hu_sbx *s);
void hu_sbx_stream_end(struct hu_sbx *s);

#endif
