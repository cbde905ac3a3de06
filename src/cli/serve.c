/*
 * hutch serve [--config FILE] [--listen ADDR] [--port N] [--data-dir DIR] [--run-dir DIR]
 *
 * The E2B-compatible daemon: one event loop serving the control plane and
 * every sandbox's data plane on one port (docs/api.md, docs/operations.md).
 * On first start it creates the data dir and an API key for team "default",
 * printed once. SIGINT/SIGTERM stop it cleanly; sandboxes keep running, and
 * the next start adopts them (as it does after a crash).
 */
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/cli.h"
#include "daemon/core/config.h"
#include "daemon/core/daemon.h"
#include "daemon/core/datadir_lock.h"
#include "daemon/dns/dns_proxy.h"
#include "daemon/common/fault.h"
#include "daemon/sandboxes/fd_budget.h"
#include "daemon/sandboxes/host_capacity.h"
#include "daemon/sandboxes/host_readings.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/provision.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/api/handlers.h"
#include "daemon/dispatch.h"
#include "daemon/envd/handlers.h"
#include "daemon/http/server.h"
#include "daemon/http/tls.h"
#include "daemon/ingress/ingress.h"
#include "daemon/routes.h"
#include "daemon/sandboxes/sandbox_ops.h"
#include "daemon/sandboxes/sbx_network.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/node.h"
#include "daemon/store/store.h"
#include "daemon/sandboxes/templates.h"
#include "daemon/sandboxes/tpl_start.h"
#include "daemon/sandboxes/volumes.h"
#include "util/fileutil.h"

#define EXIT_USAGE 2

static void serve_usage(FILE *f)
{
	fprintf(f, "usage: hutch serve [options]\n\n"
		   "Runs the E2B-compatible sandbox service (control plane and data plane on one port).\n\n"
		   "  --listen ADDR     address to listen on (default 127.0.0.1)\n"
		   "  --port N          port (default 3000)\n"
		   "  --data-dir DIR    persistent state: store, logs, templates (default /var/lib/hutch,\n"
		   "                    or $HUTCH_DATA_DIR)\n"
		   "  --run-dir DIR     volatile state of running sandboxes (default /run/hutch,\n"
		   "                    or $HUTCH_RUN_DIR)\n"
		   "  --store URI       the store: sqlite (default, in the data dir) or a postgresql:// URI\n"
		   "  --config FILE     config file (default <data-dir>/hutch.conf when it exists)\n\n"
		   "Flags override the config file; docs/operations.md lists its keys.\n");
}

/* Descriptors are what a busy daemon runs out of first (connections, init
 * sockets, pidfds): take all the hard limit allows (we cannot raise it). */
static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* What raise_nofile() got, once the log is open: admission refuses creates
 * beyond it (fd_budget.h). */
static void log_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return;
	hu_log(HU_LOG_INFO, NULL, 0,
	       "open files: %llu (RLIMIT_NOFILE, soft raised to hard), about %llu sandboxes; LimitNOFILE= raises it",
	       (unsigned long long)rl.rlim_cur,
	       (unsigned long long)hu_fd_sandboxes_allowed(HU_FD_BASE_TYPICAL, rl.rlim_cur));
}

/* How many sandboxes these settings admit on this host, and what binds. */
static void log_admits(const struct hu_config *cfg)
{
	struct hu_host_readings host;
	struct hu_host_figures h;
	struct hu_admits a;
	struct rlimit rl;
	hu_err err;

	if (hu_host_readings(&host, &err) < 0) {
		hu_log(HU_LOG_WARN, NULL, 0, "capacity: %s", err.msg);
		return;
	}
	h = (struct hu_host_figures){.mem_total = host.mem_total, .pid_max = host.pid_max, .cpus = host.cpus,
				     .fd_allowed = UINT64_MAX};
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		h.fd_allowed = hu_fd_sandboxes_allowed(HU_FD_BASE_TYPICAL, rl.rlim_cur);
	hu_admits_estimate(cfg, &h, &a);
	hu_log(HU_LOG_INFO, NULL, 0,
	       "capacity: admits about %llu running sandboxes (bound by %s) and %llu paused ones at about %llu MiB and "
	       "%d tasks each (bound by %s)",
	       (unsigned long long)a.running, a.running_raise, (unsigned long long)a.paused,
	       (unsigned long long)(HU_FROZEN_TYPICAL_MEM >> 20), HU_FROZEN_TYPICAL_PIDS, a.paused_raise);
}

static void base_url(const struct hu_config *cfg, char *out, size_t n)
{
	int v6 = strchr(cfg->listen_addr, ':') != NULL;
	snprintf(out, n, "%s://%s%s%s:%u", cfg->tls_cert[0] ? "https" : "http", v6 ? "[" : "", cfg->listen_addr, v6 ? "]" : "", (unsigned)cfg->port);
}

/* The first start has no key yet: create one and show it, once. */
static int ensure_api_key(struct hu_daemon *d, hu_err *err)
{
	char key[128], url[128];
	int count;

	if (hu_store_key_count(d->store, &count, err) < 0)
		return -1;
	if (count > 0)
		return 0;
	if (hu_store_key_create(d->store, "default", key, sizeof(key), err) < 0)
		return -1;
	base_url(&d->cfg, url, sizeof(url));
	printf("hutch: API key (shown once, store it): %s\n", key);
	printf("hutch: for the e2b SDK: E2B_API_KEY=%s E2B_API_URL=%s E2B_SANDBOX_URL=%s\n", key, url, url);
	fflush(stdout);
	hu_log(HU_LOG_INFO, NULL, 0, "created the first API key, for team default");
	return 0;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct hu_daemon *d = arg;
	hu_log(HU_LOG_INFO, NULL, 0, "%s: shutting down", strsignal((int)sig));
	d->stopping = 1;
	event_base_loopbreak(d->base);
}

/* SIGHUP: the TLS certificate and key are read again (renewed certificates
 * need no restart); a pair that does not load leaves the old one serving. */
static void on_hup(evutil_socket_t sig, short what, void *arg)
{
	struct hu_daemon *d = arg;
	hu_err err;
	if (!d->tls)
		return;
	if (hu_tls_reload(d->tls, &err) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "SIGHUP: %s (the old certificate stays)", err.msg);
	else
		hu_log(HU_LOG_INFO, NULL, 0, "SIGHUP: TLS certificate reloaded from %s", d->cfg.tls_cert);
}

static int open_runtime(struct hu_daemon *d, hu_err *err)
{
	struct hu_runtime_config rc;

	hu_runtime_config_defaults(&rc);
	snprintf(rc.data_dir, sizeof(rc.data_dir), "%s", d->cfg.data_dir);
	snprintf(rc.run_dir, sizeof(rc.run_dir), "%s", d->cfg.run_dir);
	snprintf(rc.slots_dir, sizeof(rc.slots_dir), "%s", d->cfg.slots_dir);
	hu_daemon_net_config(&d->cfg, &rc);
	/* io.*: "" leaves the runtime's default (or its HUTCH_IO_* variable) */
	if (d->cfg.io_weight[0])
		snprintf(rc.io_weight, sizeof(rc.io_weight), "%s", d->cfg.io_weight);
	if (d->cfg.io_bps[0])
		snprintf(rc.io_bps, sizeof(rc.io_bps), "%s", d->cfg.io_bps);
	if (d->cfg.io_iops[0])
		snprintf(rc.io_iops, sizeof(rc.io_iops), "%s", d->cfg.io_iops);
	/* the DNS proxy's port goes into the runtime's nftables rules */
	if (!strcmp(rc.net_mode, "nat") && hu_dns_proxy_bind(&d->dns, &rc.net_dns_proxy_port, err) < 0)
		return -1;
	if (hu_runtime_open(&rc, &d->rt, err) < 0)
		return -1;
	char net[256];
	hu_runtime_net_describe(d->rt, net, sizeof(net));
	hu_log(HU_LOG_INFO, NULL, 0, "%s", net);
	if (hu_template_ensure_base(d->rt, err) < 0)
		return -1;
	return hu_templates_refresh_all(d, err);
}

/* The HTTP server, with the dispatcher's hooks and the routing table
 * checked; it listens later, once the sandboxes are adopted. */
static int http_new(struct hu_daemon *d, hu_err *err)
{
	struct hu_http_settings set = {.max_body_bytes = d->cfg.max_body_bytes,
				       .idle_timeout_s = d->cfg.idle_timeout_s,
				       .answers_first = true};
	struct hu_http_hooks hooks = {
		.dispatch = hu_dispatch,
		.streams_body = hu_dispatch_streams_body,
		.stream_opened = hu_dispatch_stream_opened,
		.stream_closed = hu_dispatch_stream_closed,
	};

	if (hu_routes_check(err) < 0)
		return -1;
	if (!d->cfg.tls_cert[0] != !d->cfg.tls_key[0])
		return hu_err_set(err, EINVAL, "tls_cert and tls_key go together: set both or neither");
	if (hu_http_new(d->base, &set, &hooks, d, &d->http, err) < 0)
		return -1;
	if (d->cfg.tls_cert[0]) {
		if (hu_tls_new(d->cfg.tls_cert, d->cfg.tls_key, &d->tls, err) < 0)
			return -1;
		hu_http_use_tls(d->http, d->tls);
	}
	return 0;
}

/* The sweep skips what the daemon owns (registered at adoption). */
static int owned_by_daemon(const char *id, void *arg)
{
	struct hu_daemon *d = arg;
	return hu_registry_get(d->reg, id) != NULL;
}

/* Everything from the data dir to the running loop; every step's failure
 * lands in err and the caller tears down what was built. */
static int start(struct hu_daemon *d, struct event **sigs, hu_err *err)
{
	enum hu_log_level lvl = HU_LOG_INFO;
	char url[128];

	hu_log_level_parse(d->cfg.log_level, &lvl); /* validated by the config */
	if (hu_mkdir_p(d->cfg.data_dir, 0700, err) < 0 || hu_log_open(d->cfg.data_dir, lvl, err) < 0)
		return -1;
	/* before the store and the templates: `hutch template rm` works only
	 * while no daemon holds this (it waits for a removal under way) */
	if ((d->datadir_lock = hu_datadir_lock_shared(d->cfg.data_dir, err)) < 0)
		return -1;
	hu_log(HU_LOG_INFO, NULL, 0, "hutch serve starting: data %s, run %s, config %s, store %s", d->cfg.data_dir,
	       d->cfg.run_dir, d->cfg.config_path[0] ? d->cfg.config_path : "(none)",
	       d->cfg.store[0] ? "postgresql" : "sqlite");
	log_nofile();
	log_admits(&d->cfg);
	hu_fault_init();
	if (hu_store_open(hu_config_store_location(&d->cfg), &d->store, err) < 0 || open_runtime(d, err) < 0)
		return -1;
	/* three priorities, everything at the middle one by default: background
	 * work (the warm pools' refill) takes the lowest, so it runs only when
	 * the loop has no request to serve; the API connections' writes take
	 * the highest (hu_http_settings.answers_first) */
	if (!(d->base = hu_http_loop_new(HU_LOOP_PRIORITIES, err)))
		return -1;
	/* a node of a shared store registers first: the store then loads
	 * this node's sandboxes only, and writes them while its lease lives */
	if (hu_cluster_start(d, err) < 0)
		return -1;
	/* what a previous daemon left is taken over before the first request */
	if (http_new(d, err) < 0 || hu_registry_new(d, &d->reg, err) < 0 || hu_lifecycle_adopt(d, err) < 0)
		return -1;
	if (d->dns && hu_dns_proxy_start(d->dns, d, err) < 0)
		return -1;
	unsigned swept = 0;
	hu_err e;
	/* and what killed `hutch run`s left in the same run dir */
	if (hu_runtime_sweep(d->rt, 60, owned_by_daemon, d, &swept, &e) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "cleaning up dead sandboxes: %s", e.msg);
	else if (swept)
		hu_log(HU_LOG_INFO, NULL, 0, "cleaned up %u dead sandboxes", swept);
	if (hu_lifecycle_start(d, err) < 0 || hu_http_listen(d->http, d->cfg.listen_addr, d->cfg.port, err) < 0)
		return -1;
	/* after the sweep, so that it never meets a pool sandbox */
	if (hu_pool_start(d, err) < 0)
		return -1;
	/* the code interpreter template, built in the background when missing or stale */
	if (hu_provision_start(d, err) < 0)
		return -1;
	hu_volume_sweep(d);
	if (ensure_api_key(d, err) < 0)
		return -1;
	sigs[0] = evsignal_new(d->base, SIGINT, on_signal, d);
	sigs[1] = evsignal_new(d->base, SIGTERM, on_signal, d);
	sigs[2] = evsignal_new(d->base, SIGHUP, on_hup, d);
	if (!sigs[0] || !sigs[1] || !sigs[2] || evsignal_add(sigs[0], NULL) < 0 || evsignal_add(sigs[1], NULL) < 0 ||
	    evsignal_add(sigs[2], NULL) < 0)
		return hu_err_set(err, ENOMEM, "install signal handlers");
	base_url(&d->cfg, url, sizeof(url));
	printf("hutch: listening on %s\n", url);
	fflush(stdout);
	hu_log(HU_LOG_INFO, NULL, 0, "listening on %s", url);
	return 0;
}

/* Connections first (streams tell their owners while the registry lives),
 * then the registry, then what is left of the server. */
static void stop(struct hu_daemon *d, struct event **sigs)
{
	for (int i = 0; i < 3; i++)
		if (sigs[i])
			event_free(sigs[i]);
	/* Freeing the signal events restored the default action: a second
	 * SIGTERM or SIGINT (a process group signalled again, make forwarding
	 * one) would kill the daemon in the middle of the cleanup below and
	 * leave the pool's sandboxes behind. The shutdown is under way and
	 * bounded; SIGKILL still ends it. */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	d->stopping = 1;
	hu_ingress_free(d); /* its dials hold requests, its relays connections */
	hu_cluster_forward_shutdown(d); /* likewise the calls forwarded to other nodes */
	hu_http_close(d->http);
	/* unary process calls still waiting for init: end them (their requests
	 * are gone with the connections) */
	hu_envd_process_shutdown(d);
	hu_api_abort_builds(d);
	hu_api_abort_log_scans(d);
	hu_envd_watchers_shutdown(d);
	hu_sbx_abort_creates(d);
	/* creates waiting for their template's readiness check fail and are
	 * undone; restarted sandboxes keep running without the wait */
	hu_tpl_start_cancel_all(d);
	hu_provision_stop(d);
	hu_sbx_finish_kills(d);
	/* pool sandboxes hold no session: destroyed, not left for adoption */
	hu_pool_stop(d);
	/* Sandboxes keep running (paused ones stay paused): the next start
	 * adopts them. Deadlines moved since the last tick are saved first. */
	hu_lifecycle_stop(d);
	hu_cluster_stop(d);
	hu_dns_proxy_free(d->dns);
	if (d->reg)
		hu_registry_free(d->reg);
	hu_http_free(d->http);
	d->http = NULL;
	hu_tls_free(d->tls); /* after the connections that use it */
	d->tls = NULL;
	if (d->store)
		hu_store_close(d->store);
	if (d->rt)
		hu_runtime_close(d->rt);
	if (d->base)
		event_base_free(d->base);
	if (d->datadir_lock >= 0)
		close(d->datadir_lock);
	hu_log_close();
}

int cmd_serve(int argc, char **argv)
{
	struct hu_daemon d = {0};
	struct event *sigs[3] = {NULL, NULL, NULL};
	hu_err err;
	int rc = 0;

	d.datadir_lock = -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			serve_usage(stdout);
			return 0;
		}
	}
	if (hu_config_from_args(&d.cfg, argc, argv, &err) < 0) {
		cli_error("%s (hutch serve --help)", err.msg);
		return EXIT_USAGE;
	}
	/* A client that vanishes mid-write must cost an EPIPE, not the daemon. */
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();

	if (start(&d, sigs, &err) == 0) {
		event_base_dispatch(d.base);
		hu_log(HU_LOG_INFO, NULL, 0, "stopped");
	} else {
		hu_log(HU_LOG_ERROR, NULL, 0, "cannot start: %s", err.msg);
		cli_error("%s", err.msg);
		rc = 1;
	}
	stop(&d, sigs);
	return rc;
}
