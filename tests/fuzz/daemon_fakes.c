/* Fakes of registry.h, store.h and the counters for the daemon's fuzz drivers (daemon_fakes.h). */
#include <stdio.h>
#include <string.h>

#include "daemon/sandboxes/registry.h"
#include "daemon/common/stats.h"
#include "daemon/store/store.h"
#include "daemon/ingress/ingress.h"
#include "daemon/api/handlers.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/template_fetch.h"
#include "daemon/cluster/volume_route.h"
#include "daemon_fakes.h"

struct hu_registry {
	struct hu_sbx running, paused;
};
struct hu_store {
	int unused;
};

static struct hu_registry g_reg = {
	.running = {.id = "sbxrun", .team = "default", .access_token = "tok", .state = HU_SBX_RUNNING},
	.paused = {.id = "sbxpaused", .team = "default", .access_token = "tok", .state = HU_SBX_PAUSED},
};
static struct hu_store g_store;

struct hu_registry *fake_registry(void)
{
	return &g_reg;
}

struct hu_store *fake_store(void)
{
	return &g_store;
}

struct hu_sbx *hu_registry_get(struct hu_registry *reg, const char *id)
{
	if (!strcmp(id, reg->running.id))
		return &reg->running;
	if (!strcmp(id, reg->paused.id))
		return &reg->paused;
	return NULL;
}

void hu_sbx_touch(struct hu_sbx *s)
{
	(void)s;
}

void hu_sbx_stream_begin(struct hu_sbx *s)
{
	s->active++;
}

void hu_sbx_stream_end(struct hu_sbx *s)
{
	s->active--;
}

void hu_stat_add(enum hu_stat which, uint64_t n)
{
	(void)which;
	(void)n;
}

void hu_stat_observe(enum hu_hist which, double seconds)
{
	(void)which;
	(void)seconds;
}

/* The fake paused sandbox has no autoResume; a resume is refused. */
int hu_sbx_resume(struct hu_daemon *d, struct hu_sbx *s, int32_t timeout_s, hu_err *err)
{
	(void)d;
	(void)timeout_s;
	return hu_err_set(err, EIO, "fake: cannot resume %s", s->id);
}

int hu_store_key_team(struct hu_store *st, const char *key, char *team_out, size_t n, hu_err *err)
{
	if (!strcmp(key, "hutch_fuzzkey")) {
		snprintf(team_out, n, "default");
		return 0;
	}
	if (!strcmp(key, "broken"))
		return hu_err_set(err, EIO, "store: read key");
	return hu_err_set(err, -ENOENT, "unknown API key");
}

/* The other nodes' sandboxes (store.c): the fuzzed daemon is one node with
 * no store, as signed_url.c's scan_elsewhere checks first; a signature it
 * would look up there is nobody's. */
int hu_store_sandbox_by_signature(struct hu_store *st, const char *prefix, const char *suffix, const uint8_t *digest,
				  size_t digest_len, char *id, size_t n, hu_err *err)
{
	(void)st, (void)prefix, (void)suffix, (void)digest, (void)digest_len, (void)id, (void)n;
	return hu_err_set(err, -ENOENT, "fake: no other node");
}

/* The signature index and the scan over sandboxes (registry.c), for the
 * signed-URL path of the HTTP fuzzer: the two fake sandboxes. */
const char *hu_registry_sig_hint(struct hu_registry *reg, const uint8_t digest[HU_SIG_DIGEST_LEN])
{
	(void)reg;
	(void)digest;
	return NULL;
}

void hu_registry_sig_remember(struct hu_registry *reg, const uint8_t digest[HU_SIG_DIGEST_LEN], const char *id)
{
	(void)reg;
	(void)digest;
	(void)id;
}

void hu_registry_each(struct hu_registry *reg, int (*fn)(struct hu_sbx *s, void *arg), void *arg)
{
	if (!fn(&reg->running, arg))
		fn(&reg->paused, arg);
}

/* No sandbox of the fakes died, none lives on another node, and no port
 * is served: the dispatcher's answers for those cases are its own. */
const char *hu_registry_death(struct hu_registry *reg, const char *id, const char *team, const char *token)
{
	(void)reg;
	(void)id;
	(void)team;
	(void)token;
	return NULL;
}

void hu_ingress_handle(struct hu_req *r, struct hu_sbx *s, uint16_t port)
{
	(void)s;
	hu_reply_error(r, 502, "fake: no server on port %u", (unsigned)port);
}

/* One host: no cluster, so a client's forwarding proof is refused as a
 * node without cluster.secret refuses it (cluster/forward.c). */
int hu_cluster_accept_forwarded(struct hu_req *r, bool *forwarded)
{
	*forwarded = false;
	if (!hu_req_header(r, "X-Hutch-Forwarded"))
		return 0;
	hu_reply_error(r, 403, "fake: no forwarded calls");
	return -1;
}

int hu_cluster_route_elsewhere(struct hu_req *r, const char *id, const char *team, bool forwarded,
			       enum hu_fwd_answer how)
{
	(void)r;
	(void)id;
	(void)team;
	(void)forwarded;
	(void)how;
	return 0;
}

int hu_cluster_route_volume(struct hu_req *r, const char *key, const char *team, bool forwarded)
{
	(void)r;
	(void)key;
	(void)team;
	(void)forwarded;
	return 0;
}

int hu_cluster_place(struct hu_req *r, bool forwarded, char *placement, hu_handler create)
{
	(void)r;
	(void)forwarded;
	(void)create;
	placement[0] = '\0';
	return 0;
}

/* one host: no node asks for templates (template_fetch.h answers so too) */
void hu_cluster_template_serve(struct hu_req *r, bool forwarded)
{
	(void)forwarded;
	hu_reply_error(r, 403, "%s is for the nodes of the cluster", r->path);
}

void hu_cluster_placed(struct hu_daemon *d, const char *placement)
{
	(void)d;
	(void)placement;
}

void hu_api_create_sandbox(struct hu_req *r)
{
	hu_reply_error(r, 500, "fake: no creates");
}

/* dispatch.c tells the log reads from the other control-plane calls by their handlers */
void hu_api_get_logs_v1(struct hu_req *r)
{
	hu_reply_error(r, 500, "fake: no logs");
}

void hu_api_get_logs_v2(struct hu_req *r)
{
	hu_reply_error(r, 500, "fake: no logs");
}
