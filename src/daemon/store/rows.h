/*
 * What the store keeps, as plain values: sandbox rows with their states,
 * and named volumes. Shared by the interface (store.h) and every backend.
 */
#ifndef HUTCH_DAEMON_STORE_ROWS_H
#define HUTCH_DAEMON_STORE_ROWS_H

#include <jansson.h>
#include <stdint.h>

#include "runtime/sandbox.h"
#include "template/template.h"

/* RUNNING and PAUSED are what the API shows. CREATING and KILLING are
 * written before the runtime acts, so that a daemon killed in the middle
 * knows at its next start what to finish. */
enum hu_sbx_state { HU_SBX_RUNNING = 1, HU_SBX_PAUSED = 2, HU_SBX_CREATING = 3, HU_SBX_KILLING = 4 };

#define HU_IDEM_KEY_MAX 129 /* Idempotency-Key: 1..128 printable characters */
#define HU_NODE_NAME_MAX 64 /* node.name: 1..63 of [A-Za-z0-9._-] */

/* A sandbox as the store keeps it. On put, the JSON values are borrowed;
 * a loaded row owns them (hu_sandbox_row_clear). */
struct hu_sandbox_row {
	char id[HU_ID_MAX];
	char team[64];
	char template_id[HU_ID_MAX];
	char access_token[65];
	enum hu_sbx_state state;
	int64_t started_at_ms;   /* unix ms */
	int64_t end_at_ms;       /* unix ms: the idle deadline */
	int32_t timeout_s;       /* the idle window; -1 = never */
	int64_t paused_at_ms;    /* unix ms, 0 when running */
	int32_t reclaim_after_s; /* 0 = the server's setting, -1 = never */
	int released;            /* paused with memory released */
	char idem_key[HU_IDEM_KEY_MAX]; /* "" = none; unique per team */
	char owner[HU_NODE_NAME_MAX]; /* loaded rows: the node that runs it ("" = the only one) */
	json_t *metadata;        /* object of string -> string */
	json_t *env_vars;        /* object of string -> string */
	json_t *mounts;          /* array: volumes and host mounts (sandboxes/sbx_mounts.h) */
	json_t *network;         /* {allowOut, denyOut}, NULL when none were given */
	int auto_pause, auto_pause_memory, auto_resume;
	int allow_internet;      /* -1 = not given */
	int internet;            /* it has a veth and NAT */
	uint32_t cpu_millis;
	uint64_t memory_bytes;
	uint64_t disk_bytes;
};
/* Drop the JSON values a loaded row owns. */
void hu_sandbox_row_clear(struct hu_sandbox_row *row);

/* The state names rows carry ("running", "paused", "creating", "killing"). */
const char *hu_store_state_name(enum hu_sbx_state state);
enum hu_sbx_state hu_store_state_parse(const char *name);

/* A named volume (sandboxes/volumes.h has its files). */
#define HU_VOLUME_NAME_MAX 64 /* 1..63 of [A-Za-z0-9._-], starting with a letter or digit */
#define HU_VOLUME_ID_MAX 32

struct hu_volume {
	char id[HU_VOLUME_ID_MAX];
	char team[64];
	char name[HU_VOLUME_NAME_MAX];
	uint64_t size; /* cap in bytes; 0 = none */
	int64_t created_at_ms;
	char node[HU_NODE_NAME_MAX]; /* the node whose disk holds its files ("" = the only one) */
};

/* A hutch node of a shared store (cluster/node.h): what it offers and its
 * lease. A node holds a lease that it renews; a new registration under the
 * same name bumps the generation, which fences the previous holder out. */
struct hu_node {
	char name[HU_NODE_NAME_MAX];
	char address[256];     /* the URL other nodes reach it at */
	char labels[256];      /* comma-separated */
	uint64_t memory_bytes; /* the admission budgets (admission.h) */
	uint64_t cpu_millis;
	uint64_t pids;
	uint32_t max_sandboxes;
	int64_t generation;
	char templates[2048];  /* comma-separated: the templates this node has (placement) */
	int draining;          /* loaded: takes no new placements */
	int alive;             /* loaded: its lease has not expired */
	int64_t lease_left_ms; /* loaded: until the lease expires (negative: since) */
	int64_t clock_skew_ms; /* loaded: its wall clock minus the store server's, at its last renewal */
};

/* What a create asks of the node placement picks (store.h "nodes"). */
struct hu_place_ask {
	const char *team;
	const char *idem_key;    /* NULL or "": none */
	const char *template_id; /* "": any node */
	uint64_t memory_bytes;
	uint64_t cpu_millis;
	uint64_t pids;
	const char *node;        /* NULL or "": any; else only this node (a volume lives on its disk) */
};

#define HU_PLACEMENT_ID_MAX 40

/* A built template as the shared store records it (cluster/template_fetch.h):
 * the checksum of its transfer stream (template.h hu_tpl_export), computed
 * when it was built, its description (template.json's text) and the node
 * that built it. */
struct hu_template_row {
	char id[64];
	char checksum[HU_TPL_CHECKSUM_MAX];
	char *meta;                    /* owned: free() it */
	char node[HU_NODE_NAME_MAX];   /* its builder */
	int64_t created_ms;
	struct hu_node source;         /* loaded: a live node that has it (name "" when none) */
};

/* A snapshot of a sandbox's files (sandboxes/snapshots.h), usable as a
 * templateID. Its files are the runtime's snapshot `id`; its lower layers
 * are template_id, the template its sandbox was made from. */
#define HU_SNAPSHOT_NAME_MAX 64 /* 1..63 of [A-Za-z0-9._-], starting with a letter or digit */

enum hu_snapshot_state {
	HU_SNAP_CREATING = 0, /* written before the runtime's work: a start finding it undoes it */
	HU_SNAP_READY = 1,
	HU_SNAP_FORK = 2,     /* the point in time of a fork, removed once its sandboxes have their files */
};

struct hu_snapshot_row {
	char id[64];
	char team[64];
	char name[HU_SNAPSHOT_NAME_MAX]; /* "" = unnamed */
	char sandbox_id[64];             /* the sandbox it was taken of */
	char template_id[64];
	enum hu_snapshot_state state;
	int64_t created_at_ms;
	uint32_t cpu_millis;             /* the source's sizes: a sandbox made from it gets them */
	uint64_t memory_bytes;
	uint64_t disk_bytes;
};

/* hutch doctor's reading of a store (store.h hu_store_health). */
struct hu_store_health {
	char server[64];     /* the database server's version; "" for an embedded store */
	int schema;          /* the store's schema version (-1: none yet, the first start makes it) */
	int schema_hutch;    /* the version this hutch writes */
	int64_t round_trip_us;
	int64_t skew_ms;     /* this host's wall clock minus the server's (0 for an embedded store) */
};

#endif
