/*
 * hutch serve's settings (struct hu_config): embedded defaults,
 * then a config file of `key = value` lines, then command-line flags.
 * docs/operations.md lists every key and flag.
 */
#ifndef HUTCH_DAEMON_CONFIG_H
#define HUTCH_DAEMON_CONFIG_H

#include <limits.h>
#include <stdint.h>

#include "runtime/sandbox.h"
#include "util/err.h"

#define HU_HOST_MOUNT_ROOTS_MAX 8
#define HU_POOL_TEMPLATES_MAX 16
#define HU_CLUSTER_SECRET_MIN 16 /* bytes of cluster.secret */

/* hutch serve settings: flags > config file > embedded defaults. */
struct hu_config {
	char listen_addr[64];    /* default 127.0.0.1 */
	uint16_t port;           /* default 3000 */
	char data_dir[PATH_MAX]; /* default /var/lib/hutch */
	char run_dir[PATH_MAX];  /* default /run/hutch */
	char slots_dir[PATH_MAX]; /* the uid slots, "" = <run_dir>/slots (runtime/sandbox.h) */
	char config_path[PATH_MAX];
	/* store: "" = SQLite in data_dir, or a PostgreSQL connection URI
	 * ("postgresql://...") that several nodes may share */
	char store[1024];
	/* a node of a shared store (cluster/node.h): node.name ("" = <host
	 * name>-<port>), node.address (the URL other nodes reach it at, "" =
	 * http://<listen>:<port>), node.labels (comma-separated) */
	char node_name[64];
	char node_address[256];
	char node_labels[256];
	/* cluster.secret (or the contents of cluster.secret_file): what a
	 * node proves to another it forwards a call to (cluster/forward_auth.h);
	 * empty = calls for other nodes' sandboxes are not forwarded (421) */
	char cluster_secret[256];
	size_t cluster_secret_len;
	/* cluster.ca: CA certificates that an https:// node.address of another
	 * node is checked against ("" = the system's) */
	char cluster_ca[PATH_MAX];
	uint64_t max_body_bytes;       /* default 256 MiB (413 above it) */
	uint32_t idle_timeout_s;       /* idle HTTP connections, default 60 */
	char sandbox_domain[128];      /* sandbox_domain: Host <port>-<id>.<domain> reaches a sandbox's port,
					* and create/connect return it as `domain` (default localhost) */
	uint32_t ingress_max_per_sandbox; /* ingress.max_per_sandbox: open proxied port connections (256) */
	uint32_t ingress_max_per_team;    /* ingress.max_per_team (1024) */
	char tls_cert[PATH_MAX];       /* tls_cert / tls_key: PEM files; both set = the listener is TLS only */
	char tls_key[PATH_MAX];
	uint32_t default_timeout_s;    /* sandbox timeout when create gives none, default 300 */
	uint64_t default_memory_bytes; /* per sandbox, default 512 MiB */
	uint32_t default_cpu_millis;   /* default 1000 */
	uint64_t default_disk_bytes;   /* default 1 GiB */
	uint64_t default_pids;         /* default 512 */
	uint32_t max_sandboxes;        /* default 1000 */
	char log_level[16];            /* debug|info|warn|error, default info */
	uint32_t release_after_s;      /* pause.release_after: paused this long, memory is released (600) */
	uint32_t watcher_idle_s;       /* watcher.idle_timeout: a polling watcher (CreateWatcher) nobody
					* polls this long is removed (600) */
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
	int signed_url_scan; /* signed_url.scan: a signed URL that names no sandbox may be tried against
			      * every token (rate-limited; default false: one token at most) */
	/* per-team quotas, the same for every team (0 = none): quota.sandboxes
	 * (sandboxes running or being created), quota.memory (memory limits of a
	 * team's sandboxes that hold memory), quota.builds (template builds at once) */
	uint32_t quota_sandboxes;
	uint64_t quota_memory_bytes;
	uint32_t quota_builds;
	char volume_root[PATH_MAX];    /* named volumes live here; "" = <data_dir>/volumes */
	uint64_t volume_max_bytes;     /* every volume capped at most this (default for no size); 0 = no limit */
	/* host directories that metadata["host-mount"] may mount (empty: none),
	 * each with its owner: "TEAM:/dir" is TEAM's only, "*:/dir" every team's,
	 * and a bare "/dir" gives each team T the subdirectory /dir/T */
	char host_mount_roots[HU_HOST_MOUNT_ROOTS_MAX][PATH_MAX];
	char host_mount_teams[HU_HOST_MOUNT_ROOTS_MAX][64]; /* TEAM, "*", or "" (per-team subdirectory) */
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
	/* warm pools (pool.h): pool.size for `base`, pool.size.<template>
	 * (the least each keeps), pool.max (the most demand grows one to) */
	uint32_t pool_size;
	uint32_t pool_max;
	struct {
		char template_id[HU_ID_MAX];
		uint32_t size;
	} pool_sizes[HU_POOL_TEMPLATES_MAX];
	unsigned n_pool_sizes;
	/* the code interpreter template (sandboxes/provision.h): interpreter.provision (default true, or
	 * $HUTCH_INTERPRETER_PROVISION), interpreter.recipe (the recipe's folder, "" = found beside the
	 * binary), interpreter.cache_dir ("" = <data_dir>/cache/code-interpreter-v1) */
	int interp_provision;
	char interp_recipe[PATH_MAX];
	char interp_cache_dir[PATH_MAX];
};


/* The embedded defaults; HUTCH_DATA_DIR and HUTCH_RUN_DIR, when set, are the
 * defaults of data_dir and run_dir, and HUTCH_INTERPRETER_PROVISION (0, false,
 * no or off) that of interpreter.provision. */
void hu_config_defaults(struct hu_config *cfg);
/* Where the store is, for hu_store_open: the store URI, or the data dir. */
const char *hu_config_store_location(const struct hu_config *cfg);
/* This daemon's node name in a shared store: node.name, or <host name>-<port>. */
void hu_config_node_name(const struct hu_config *cfg, char *out, size_t n);
/* Set one config-file key from its text value (EINVAL: unknown key or bad value). */
int hu_config_set(struct hu_config *cfg, const char *key, const char *value, hu_err *err);
/* Apply a config file; errors name "file:line". */
int hu_config_load_file(struct hu_config *cfg, const char *path, hu_err *err);
/* The whole configuration of `hutch serve ARGS` (argv[0] is the verb):
 * defaults, then --config FILE or <data_dir>/hutch.conf when it exists, then
 * the flags --listen --port --data-dir --run-dir --volume-root
 * --host-mount-roots (as "--flag value" or
 * "--flag=value"). */
int hu_config_from_args(struct hu_config *cfg, int argc, char **argv, hu_err *err);

#endif
