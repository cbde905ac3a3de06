/*
 * hutch serve: the daemon's shared context and its HTTP plumbing.
 *
 * One libevent loop serves everything on one port: the control plane (E2B
 * REST, authenticated by X-API-KEY) and the data plane (envd over Connect,
 * routed by the E2b-Sandbox-Id header, authenticated by X-Access-Token).
 * Handlers get a struct hu_req and answer through the reply helpers below;
 * every error answer is JSON {"code": <status>, "message": "..."} (control
 * plane) or a Connect error (data plane), never an empty or HTML body.
 */
#ifndef HUTCH_DAEMON_DAEMON_H
#define HUTCH_DAEMON_DAEMON_H

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>

#include "runtime/sandbox.h"
#include "util/err.h"

struct hu_store;
struct hu_registry;

#define HU_HOST_MOUNT_ROOTS_MAX 8
#define HU_POOL_TEMPLATES_MAX 16

/* hutch serve settings: flags > config file > embedded defaults. */
struct hu_config {
	char listen_addr[64];    /* default 127.0.0.1 */
	uint16_t port;           /* default 3000 */
	char data_dir[PATH_MAX]; /* default /var/lib/hutch */
	char run_dir[PATH_MAX];  /* default /run/hutch */
	char config_path[PATH_MAX];
	uint64_t max_body_bytes;       /* default 256 MiB (413 above it) */
	uint32_t idle_timeout_s;       /* idle HTTP connections, default 60 */
	uint32_t default_timeout_s;    /* sandbox timeout when create gives none, default 300 */
	uint64_t default_memory_bytes; /* per sandbox, default 512 MiB */
	uint32_t default_cpu_millis;   /* default 1000 */
	uint64_t default_disk_bytes;   /* default 1 GiB */
	uint64_t default_pids;         /* default 512 */
	uint32_t max_sandboxes;        /* default 1000 */
	char log_level[16];            /* debug|info|warn|error, default info */
	uint32_t release_after_s;      /* pause.release_after: paused this long, memory is released (600) */
	uint32_t reclaim_after_s;      /* reclaim.after: paused this long, the sandbox is deleted (86400) */
	uint64_t pressure_min_available; /* pressure.min_available: MemAvailable below it is pressure
					  * (0 = 5% of MemTotal) */
	uint32_t pressure_psi_avg10;   /* pressure.psi_avg10: memory PSI "some avg10" above it (%) is
					* pressure (default 10) */
	uint64_t admission_reserve;    /* admission.reserve: memory kept for the host (0 = 10%, at least 512 MiB) */
	double admission_memory_overcommit; /* admission.memory_overcommit: memory limits may add up to this
					     * many times the usable memory (default 4) */
	double admission_cpu_overcommit; /* admission.cpu_overcommit: CPU limits of running sandboxes may add
					  * up to this many times the CPUs (default 0: no CPU budget) */
	double admission_pids_overcommit; /* admission.pids_overcommit: pids limits may add up to this many
					   * times pid_max less a reserve (default 1: a fork bomb in every
					   * sandbox at once still leaves the host its pids) */
	int admission_refuse_under_pressure; /* admission.refuse_under_pressure (default true) */
	char volume_root[PATH_MAX];    /* named volumes live here; "" = <data_dir>/volumes */
	uint64_t volume_max_bytes;     /* every volume capped at most this (default for no size); 0 = no limit */
	/* host directories that metadata["host-mount"] may mount (empty: none) */
	char host_mount_roots[HU_HOST_MOUNT_ROOTS_MAX][PATH_MAX];
	unsigned n_host_mount_roots;
	/* the network boundary ("" = the runtime's default or its HUTCH_NET*
	 * variable; checked when the runtime opens): network, network_name,
	 * network_pool, network_dns, network_uplink, network_allow, network_deny */
	char net_mode[8];
	char net_name[16];
	char net_pool[32];
	char net_pool6[48]; /* network_pool6 */
	char net_dns[32];
	char net_uplinks[80];
	char net_allow[1024];
	char net_deny[1024];
	char net_flows[16]; /* network_flows: connections a sandbox may hold */
	/* io.weight, io.bps, io.iops: every sandbox's block I/O ("" = the
	 * runtime's default or its HUTCH_IO_* variable) */
	char io_weight[16];
	char io_bps[24];
	char io_iops[24];
	/* warm pools (pool.h): pool.size for `base`, pool.size.<template> */
	uint32_t pool_size;
	struct {
		char template_id[HU_ID_MAX];
		uint32_t size;
	} pool_sizes[HU_POOL_TEMPLATES_MAX];
	unsigned n_pool_sizes;
};

/* The loop's priorities (serve.c): events get HU_LOOP_PRIORITIES / 2 by
 * default; background work takes HU_LOOP_PRIORITY_IDLE, the lowest. */
#define HU_LOOP_PRIORITIES 3
#define HU_LOOP_PRIORITY_IDLE (HU_LOOP_PRIORITIES - 1)

struct hu_daemon {
	struct event_base *base;
	struct evhttp *http;
	struct hu_config cfg;
	struct hu_runtime *rt;
	struct hu_store *store;
	struct hu_registry *reg;
	uint64_t next_request_id;
	int stopping;
	struct hu_pending_create *creating; /* sandboxes being created (sandbox_ops.c) */
	unsigned n_creating;
	struct hu_pending_kill *killing; /* kills waiting for an init to die (sbx_kill.c) */
	unsigned n_killing;
	struct tpl_start *tpl_starts; /* template start commands being started (tpl_start.c) */
	struct hu_router *router; /* http.c: routes, listener, requests in flight */
	struct event *lifecycle_tick; /* lifecycle.c */
	struct hu_pools *pools;       /* warm pools (pool.c) */
	uint64_t lifecycle_ticks;
	struct hu_dns_proxy *dns; /* dns_proxy.c (network nat only) */
	int datadir_lock;         /* datadir_lock.h: held shared while serving, -1 before */
};

/* Which credentials a route needs. */
enum hu_auth {
	HU_AUTH_NONE = 0,    /* /health */
	HU_AUTH_API_KEY = 1, /* control plane: X-API-KEY -> team */
	HU_AUTH_ENVD = 2,    /* data plane: E2b-Sandbox-Id + X-Access-Token */
};

struct hu_sbx; /* a sandbox as the daemon knows it (registry.h) */

/* One HTTP request as a handler sees it. */
struct hu_req {
	struct hu_daemon *d;
	struct evhttp_request *ev;
	uint64_t id;            /* request id, for logs */
	enum evhttp_cmd_type method;
	char path[1024];        /* decoded path, without the query */
	const char *query;      /* raw query string or NULL (owned by the uri) */
	struct evkeyvalq *query_kv; /* parsed query (evhttp_parse_query_str), or NULL */
	char param[128];        /* the {id} matched in the route pattern, "" if none */
	char team[64];          /* the authenticated team (control plane) */
	struct hu_sbx *sbx;     /* the target sandbox (data plane); cleared if it is killed meanwhile */
	char sbx_id[HU_ID_MAX]; /* its id, kept for logging after sbx is gone */
	const char *user;       /* data plane: "root"/"user" from Basic auth, or NULL */
};

/* A handler answers r exactly once, with a reply helper below or a stream
 * (connect.h), either before it returns or later from a callback. r stays
 * valid until the handler has returned AND it was answered: after a late
 * (asynchronous) answer, r is gone. */
typedef void (*hu_handler)(struct hu_req *r);

/* Register a route. `pattern` is a path with at most one "{id}" segment,
 * e.g. "/sandboxes/{id}/timeout"; data-plane routes are matched only when
 * the request carries E2b-Sandbox-Id (auth HU_AUTH_ENVD). */
int hu_route(struct hu_daemon *d, enum evhttp_cmd_type method, const char *pattern, enum hu_auth auth,
	     hu_handler fn);

/* A sandbox is being freed: every request still in flight forgets it (its
 * r->sbx becomes NULL), so no late reply, log line or stream reads freed
 * memory. Called by the kill path before the sandbox is freed. */
void hu_http_forget_sandbox(struct hu_daemon *d, const struct hu_sbx *s);

/* ---- replies (control plane) ------------------------------------------ */
/* Send `body` (reference stolen) as JSON with `status`. */
void hu_reply_json(struct hu_req *r, int status, json_t *body);
/* `body` (not freed) with a Content-Type of its own (GET /metrics). */
struct evbuffer;
void hu_reply_text(struct hu_req *r, int status, const char *content_type, struct evbuffer *body);
/* 204 No Content, or 200/201 with Content-Length: 0 when status says so. */
void hu_reply_empty(struct hu_req *r, int status);
/* {"code": status, "message": "..."} */
void hu_reply_error(struct hu_req *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Map a hu_err (errno) to an HTTP status and reply with its message. */
void hu_reply_err(struct hu_req *r, const hu_err *err);
/* Add a response header (e.g. X-Next-Token). */
void hu_reply_header(struct hu_req *r, const char *name, const char *value);

/* ---- request body ----------------------------------------------------- */
/* The raw body (possibly empty). Valid until the reply is sent. */
const uint8_t *hu_req_body(struct hu_req *r, size_t *len);
/* Parse the body as a JSON object. An empty body gives an empty object.
 * On malformed JSON or a non-object, replies 400 and returns -1. */
int hu_req_json(struct hu_req *r, json_t **out);
/* A request header, or NULL. */
const char *hu_req_header(struct hu_req *r, const char *name);
/* A query parameter (decoded), or NULL. */
const char *hu_req_query(struct hu_req *r, const char *name);

/* A JSON string of s; bytes that are not valid UTF-8 become '?' (error
 * messages may echo client input, and json_string() refuses such bytes). */
json_t *hu_json_text(const char *s);
/* Parse buf as one JSON object; -1 with EINVAL and the reason otherwise. */
int hu_json_parse_object(const uint8_t *buf, size_t len, json_t **out, hu_err *err);

/* ---- the server (http.c), driven by serve.c ---------------------------- */
/* Create d->http on d->base with the limits of d->cfg and the dispatcher.
 * d->store == NULL answers every API-key route 401 and d->reg == NULL every
 * data-plane request 502: the fuzz driver runs the dispatcher that way. */
int hu_http_init(struct hu_daemon *d, hu_err *err);
/* Listen on cfg.listen_addr:cfg.port. */
int hu_http_listen(struct hu_daemon *d, hu_err *err);
/* Shutdown, step 1: stop accepting and close every connection (streams get
 * on_gone; replies to requests still in flight are dropped). Call while the
 * registry is alive. Step 2, after the registry is freed: hu_http_free. */
void hu_http_close(struct hu_daemon *d);
void hu_http_free(struct hu_daemon *d);

/* ---- request ownership, between http.c and connect.c ------------------- */
struct hu_stream;
/* The request's answer is complete: r is freed once its handler returned. */
void hu_req_finish(struct hu_req *r);
/* r is answered by stream s from now on (hu_http_free ends leftovers). */
void hu_req_set_stream(struct hu_req *r, struct hu_stream *s);

/* Structured logging (log.c): time, level, sandbox id, request id, message. */
enum hu_log_level { HU_LOG_DEBUG, HU_LOG_INFO, HU_LOG_WARN, HU_LOG_ERROR };
void hu_log(enum hu_log_level lvl, const char *sandbox_id, uint64_t req_id, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Log to stderr and <data_dir>/logs/hutch.log (data_dir NULL: stderr only). */
int hu_log_open(const char *data_dir, enum hu_log_level min, hu_err *err);
void hu_log_close(void);
/* "debug" | "info" | "warn" | "error"; -1 for anything else. */
int hu_log_level_parse(const char *name, enum hu_log_level *out);

/* The envd version hutch advertises: the highest whose features are all
 * implemented (see docs/api.md). */
#define HU_ENVD_VERSION "0.6.4"

#endif
