/*
 * hutch serve's context: the one struct every layer above the store is
 * handed. It owns the event loop, the settings, the runtime, the store, the
 * registry of live sandboxes and the HTTP server, and the bookkeeping of
 * work in flight (creates, kills, template starts) that outlives a single
 * callback. The layers' own types stay opaque here; each is defined in its
 * folder (docs/architecture.md, "Layers").
 */
#ifndef HUTCH_DAEMON_CORE_DAEMON_H
#define HUTCH_DAEMON_CORE_DAEMON_H

#include <event2/event.h>
#include <stdint.h>

#include "daemon/common/json.h"
#include "daemon/common/log.h"
#include "daemon/core/config.h"
#include "daemon/http/request.h"
#include "util/err.h"

struct hu_store;
struct hu_registry;
struct hu_http;
struct hu_sbx;
struct hu_cluster;
struct hu_ingress;
struct hu_tls;

/* The loop's priorities (serve.c): events get HU_LOOP_PRIORITIES / 2 by
 * default; background work takes HU_LOOP_PRIORITY_IDLE, the lowest; the
 * API connections' writes take 0, the highest (http/server.h
 * answers_first: an answer leaves before the next request is worked on). */
#define HU_LOOP_PRIORITIES 3
#define HU_LOOP_PRIORITY_IDLE (HU_LOOP_PRIORITIES - 1)

struct hu_daemon {
	struct event_base *base;
	struct hu_http *http; /* http/server.h: the listener, connections, requests in flight */
	struct hu_config cfg;
	struct hu_runtime *rt;
	struct hu_store *store;
	struct hu_registry *reg;
	int stopping;
	struct hu_pending_create *creating; /* sandboxes being created (sandbox_ops.c) */
	unsigned n_creating;
	struct hu_pending_kill *killing; /* kills waiting for an init to die (sbx_kill.c) */
	unsigned n_killing;
	struct tpl_start *tpl_starts; /* template start commands being started (tpl_start.c) */
	struct event *lifecycle_tick; /* lifecycle.c */
	struct hu_pools *pools;       /* warm pools (pool.c) */
	uint64_t lifecycle_ticks;
	struct hu_dns_proxy *dns; /* dns_proxy.c (network nat only) */
	struct hu_tls *tls;   /* http/tls.h: the listener's certificate, or NULL for plain HTTP */
	struct hu_ingress *ingress; /* ingress/ingress.c: proxied port connections (created on first use) */
	int datadir_lock;         /* datadir_lock.h: held shared while serving, -1 before */
	struct hu_cluster *cluster; /* cluster/node.h: this node of a shared store, NULL on one host */
	struct hu_provision *provision; /* sandboxes/provision.h: the code interpreter template, NULL when off */
};

/* The daemon a request arrived at (every request's r->app). */
static inline struct hu_daemon *hu_req_daemon(const struct hu_req *r)
{
	return r->app;
}

/* The sandbox a data-plane request acts on (the dispatcher sets r->target;
 * it is NULL once the sandbox is gone). */
static inline struct hu_sbx *hu_req_sbx(const struct hu_req *r)
{
	return r->target;
}

/* The envd version hutch advertises: the highest whose features are all
 * implemented (see docs/api.md). */
#define HU_ENVD_VERSION "0.6.4"

#endif
