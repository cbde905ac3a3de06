/*
 * The JSON bodies of the control plane, decoded into plain structs by pure
 * functions (no daemon, no I/O), so unit tests and a fuzzer can drive them.
 * Every decoder validates the whole body before it hands anything out:
 * wrong types get EINVAL with a message naming the field (the API answers
 * 400 with it); unknown fields are ignored, as E2B does; JSON null counts as
 * "not given".
 */
#ifndef HUTCH_DAEMON_API_JSON_H
#define HUTCH_DAEMON_API_JSON_H

#include <jansson.h>
#include <stdint.h>

#include "daemon/sandboxes/new_sandbox.h"
#include "runtime/sandbox.h"
#include "util/err.h"

/* A sandbox's timeout window: E2B's Pro maximum is 24 hours. */
#define HU_TIMEOUT_MAX_S 86400
#define HU_RECLAIM_MAX_S (30 * 86400) /* reclaimAfter: a month */
/* Bounds on metadata and envVars, so one request cannot make every list
 * answer and store row huge. */
#define HU_MAP_MAX_ENTRIES 256
#define HU_MAP_KEY_MAX 256
#define HU_MAP_VALUE_MAX 16384


/* On failure *out holds nothing that needs freeing. */
int hu_api_decode_new_sandbox(const json_t *body, struct hu_new_sandbox *out, hu_err *err);
void hu_new_sandbox_clear(struct hu_new_sandbox *ns);

/* The egress part of E2B's `network` object ({allowOut?, denyOut?}, IPs and
 * CIDRs) into rules; egressProxy and per-host rules are refused (not
 * supported), the inbound-traffic fields are ignored. */
int hu_api_decode_network(const json_t *net, struct hu_net_rules *rules, hu_err *err);
/* PUT /sandboxes/{id}/network: the new egress rules (missing lists are
 * empty) and allow_internet_access (-1 when not given). */
int hu_api_decode_network_update(const json_t *body, struct hu_net_rules *rules, int *allow_internet, hu_err *err);

/* POST /sandboxes/{id}/timeout: {"timeout": s}, required. */
int hu_api_decode_timeout(const json_t *body, int32_t *seconds, hu_err *err);
/* POST /sandboxes/{id}/refreshes: {"duration": s}, optional (*present 0). */
int hu_api_decode_refresh(const json_t *body, int *present, int32_t *seconds, hu_err *err);

/* POST .../connect ({timeout?, memory?}) and the older POST .../resume
 * ({timeout?, autoPause?, memory?}). */
struct hu_connect_req {
	int has_timeout;
	int32_t timeout_s;
	int memory; /* 1 unless "memory": false (resume keeping memory) */
};
int hu_api_decode_connect(const json_t *body, struct hu_connect_req *out, hu_err *err);

/* POST /sandboxes/{id}/pause: {"memory": bool}? -> *memory (1 default). */
int hu_api_decode_pause(const json_t *body, int *memory, hu_err *err);

/* GET /v2/sandboxes query: ?metadata=&state=&limit=&nextToken=&order=
 * &startedAfter=&template= (each NULL when absent). Sandboxes are listed in
 * (startedAt, id) order, newest first unless order=asc; the page token
 * names the last sandbox returned, so a page stays correct when sandboxes
 * come and go between calls. */
#define HU_LIST_DEFAULT_LIMIT 100
#define HU_LIST_MAX_LIMIT 1000
#define HU_STATE_BIT(state) (1u << (state))
#define HU_LIST_TOKEN_MAX (2 * (24 + HU_ID_MAX) + 1)

struct hu_list_params {
	const char *metadata, *state, *limit, *next_token, *order, *started_after, *template_id;
};

struct hu_list_query {
	json_t *metadata;         /* filter object (owned), NULL = none */
	unsigned states;          /* HU_STATE_BIT(HU_SBX_RUNNING) | ... */
	const char *template_id;  /* borrowed from the params, NULL = any */
	int has_started_after;
	int64_t started_after_ms;
	int asc;
	size_t limit;
	int has_cursor;           /* from nextToken: list strictly after it */
	int64_t cursor_started_ms;
	char cursor_id[HU_ID_MAX];
};

int hu_api_decode_list_query(const struct hu_list_params *p, struct hu_list_query *q, hu_err *err);
void hu_list_query_clear(struct hu_list_query *q);
/* The opaque page token for a position in the list order. */
void hu_list_token_encode(int64_t started_ms, const char *id, char out[HU_LIST_TOKEN_MAX]);

#endif
