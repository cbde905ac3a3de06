/*
 * hutch serve's configuration (config.h). One table lists every config-file
 * key with its parser, so the file, the flags and the docs cannot drift
 * apart: a flag is just another way to set a key.
 */
#include "daemon/core/config.h"
#include "daemon/common/log.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <strings.h>
#include <unistd.h>

#include "runtime/cgroup.h"
#include "runtime/net.h"
#include "util/fileutil.h"
#include "util/parse.h"

#define MAX_TIMEOUT_S (30u * 24 * 3600) /* a month: longer is surely a typo */

void hu_config_defaults(struct hu_config *cfg)
{
	const char *data = getenv("HUTCH_DATA_DIR"), *run = getenv("HUTCH_RUN_DIR");

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->listen_addr, sizeof(cfg->listen_addr), "127.0.0.1");
	cfg->port = 3000;
	snprintf(cfg->data_dir, sizeof(cfg->data_dir), "%s", data && *data ? data : "/var/lib/hutch");
	snprintf(cfg->run_dir, sizeof(cfg->run_dir), "%s", run && *run ? run : "/run/hutch");
	cfg->max_body_bytes = 256ull << 20;
	cfg->idle_timeout_s = 60;
	snprintf(cfg->sandbox_domain, sizeof(cfg->sandbox_domain), "localhost");
	cfg->ingress_max_per_sandbox = 256;
	cfg->ingress_max_per_team = 1024;
	cfg->default_timeout_s = 300;
	cfg->default_memory_bytes = 512ull << 20;
	cfg->default_cpu_millis = 1000;
	cfg->default_disk_bytes = 1ull << 30;
	cfg->default_pids = 512;
	cfg->max_sandboxes = 1000;
	snprintf(cfg->log_level, sizeof(cfg->log_level), "info");
	cfg->release_after_s = 600;
	cfg->watcher_idle_s = 600;
	cfg->reclaim_after_s = 86400;
	cfg->pressure_psi_avg10 = 10;
	cfg->admission_memory_overcommit = 4.0;
	cfg->admission_cpu_overcommit = 0; /* CPU is shared, not exhausted: no CPU budget unless asked */
	cfg->admission_pids_overcommit = 1.0;
	cfg->admission_refuse_under_pressure = 1;
	cfg->pool_size = 2;
	cfg->pool_max = 128; /* a burst of 100 concurrent creates from one client (issue 15) fits */
	const char *prov = getenv("HUTCH_INTERPRETER_PROVISION");
	cfg->interp_provision = !(prov && (!strcmp(prov, "0") || !strcasecmp(prov, "false") || !strcasecmp(prov, "no") ||
					   !strcasecmp(prov, "off")));
}

/* ---- one parser per kind of value ----------------------------------------- */

static int set_listen(struct hu_config *cfg, const char *v, hu_err *err)
{
	unsigned char addr[sizeof(struct in6_addr)];
	if (strlen(v) >= sizeof(cfg->listen_addr) ||
	    (inet_pton(AF_INET, v, addr) != 1 && inet_pton(AF_INET6, v, addr) != 1))
		return hu_err_set(err, -EINVAL, "'%s' is not an IPv4 or IPv6 address (example: 127.0.0.1)", v);
	snprintf(cfg->listen_addr, sizeof(cfg->listen_addr), "%s", v);
	return 0;
}

static int set_port(struct hu_config *cfg, const char *v, hu_err *err)
{
	uint64_t n;
	if (hu_parse_u64(v, &n, err) < 0)
		return -1;
	if (n < 1 || n > 65535)
		return hu_err_set(err, -ERANGE, "%s is out of range (1..65535)", v);
	cfg->port = (uint16_t)n;
	return 0;
}

static int set_dir(char *dst, size_t cap, const char *v, hu_err *err)
{
	if (v[0] != '/')
		return hu_err_set(err, -EINVAL, "'%s' is not an absolute path", v);
	if (strlen(v) >= cap)
		return hu_err_set(err, -ENAMETOOLONG, "path '%.64s...' is too long", v);
	snprintf(dst, cap, "%s", v);
	return 0;
}

static int set_data_dir(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_dir(cfg->data_dir, sizeof(cfg->data_dir), v, err);
}

static int set_run_dir(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_dir(cfg->run_dir, sizeof(cfg->run_dir), v, err);
}

static int set_slots_dir(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_dir(cfg->slots_dir, sizeof(cfg->slots_dir), v, err);
}

/* "sqlite" (the default: the data dir's hutch.db) or a PostgreSQL URI. */
static int set_store(struct hu_config *cfg, const char *v, hu_err *err)
{
	if (!strcmp(v, "sqlite")) {
		cfg->store[0] = '\0';
		return 0;
	}
	if (strncmp(v, "postgresql://", 13) && strncmp(v, "postgres://", 11))
		return hu_err_set(err, -EINVAL, "'%.64s' is neither sqlite nor a postgresql:// URI", v);
	if (strlen(v) >= sizeof(cfg->store))
		return hu_err_set(err, -ENAMETOOLONG, "the store URI is longer than %zu bytes", sizeof(cfg->store) - 1);
	snprintf(cfg->store, sizeof(cfg->store), "%s", v);
	return 0;
}

/* node.name: 1..63 of [A-Za-z0-9._-], as the other nodes and the logs see it */
static int set_node_name(struct hu_config *cfg, const char *v, hu_err *err)
{
	size_t n = strlen(v);
	if (n < 1 || n >= sizeof(cfg->node_name) || strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
							      "0123456789._-") != n)
		return hu_err_set(err, -EINVAL, "'%.64s' is not a node name (1..63 of A-Z a-z 0-9 . _ -)", v);
	snprintf(cfg->node_name, sizeof(cfg->node_name), "%s", v);
	return 0;
}

static int set_node_address(struct hu_config *cfg, const char *v, hu_err *err)
{
	if ((strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) || strlen(v) >= sizeof(cfg->node_address) ||
	    strpbrk(v, " \t\r\n"))
		return hu_err_set(err, -EINVAL, "'%.64s' is not an http:// or https:// URL", v);
	snprintf(cfg->node_address, sizeof(cfg->node_address), "%s", v);
	return 0;
}

static int set_node_labels(struct hu_config *cfg, const char *v, hu_err *err)
{
	size_t n = strlen(v);
	if (n >= sizeof(cfg->node_labels) ||
	    strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-=,") != n)
		return hu_err_set(err, -EINVAL, "node.labels: comma-separated key=value of A-Z a-z 0-9 . _ - (%zu at most)",
				  sizeof(cfg->node_labels) - 1);
	snprintf(cfg->node_labels, sizeof(cfg->node_labels), "%s", v);
	return 0;
}

/* cluster.secret: HU_CLUSTER_SECRET_MIN bytes at least, printable, no
 * spaces (the same in every node's config) */
static int set_cluster_secret(struct hu_config *cfg, const char *v, hu_err *err)
{
	size_t n = strlen(v);
	if (n < HU_CLUSTER_SECRET_MIN || n >= sizeof(cfg->cluster_secret))
		return hu_err_set(err, -EINVAL, "the cluster secret must be %d to %zu bytes long", HU_CLUSTER_SECRET_MIN,
				  sizeof(cfg->cluster_secret) - 1);
	for (size_t i = 0; i < n; i++)
		if (v[i] <= ' ' || v[i] == 0x7f)
			return hu_err_set(err, -EINVAL, "the cluster secret holds a space or a control character");
	memcpy(cfg->cluster_secret, v, n + 1);
	cfg->cluster_secret_len = n;
	return 0;
}

/* cluster.secret_file: the secret in a file of its own (a trailing newline
 * is not part of it), read at start, so that the config can be world
 * readable and the secret not */
static int set_cluster_secret_file(struct hu_config *cfg, const char *v, hu_err *err)
{
	char buf[sizeof(cfg->cluster_secret) + 2];
	ssize_t n = hu_read_file(v, buf, sizeof(buf), err);

	if (n < 0) {
		hu_err_prefix(err, "cluster secret file %.200s", v);
		return -1;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n] = '\0';
	int rc = set_cluster_secret(cfg, buf, err);
	OPENSSL_cleanse(buf, sizeof(buf));
	if (rc < 0)
		hu_err_prefix(err, "cluster secret file %.200s", v);
	return rc;
}

static int set_cluster_ca(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_dir(cfg->cluster_ca, sizeof(cfg->cluster_ca), v, err);
}

const char *hu_config_store_location(const struct hu_config *cfg)
{
	return cfg->store[0] ? cfg->store : cfg->data_dir;
}

void hu_config_node_name(const struct hu_config *cfg, char *out, size_t n)
{
	char host[64] = "hutch";

	if (cfg->node_name[0]) {
		snprintf(out, n, "%s", cfg->node_name);
		return;
	}
	gethostname(host, sizeof(host) - 1);
	host[strspn(host, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_")] = '\0';
	snprintf(out, n, "%.50s-%u", host[0] ? host : "hutch", cfg->port);
}

static int parse_positive_size(const char *v, uint64_t *out, hu_err *err)
{
	if (hu_parse_size(v, out, err) < 0)
		return -1;
	if (*out == 0)
		return hu_err_set(err, -EINVAL, "size must be above 0");
	return 0;
}

/* A DNS name the sandbox host names end in: letters, digits, '-' and '.',
 * no empty label (it is matched against Host headers, and returned to SDKs
 * that build URLs from it). */
static int set_sandbox_domain(struct hu_config *cfg, const char *v, hu_err *err)
{
	size_t n = strlen(v);
	if (n == 0 || n >= sizeof(cfg->sandbox_domain) ||
	    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != n || v[0] == '.' ||
	    v[n - 1] == '.' || strstr(v, ".."))
		return hu_err_set(err, -EINVAL, "'%s' is not a domain name (example: sandbox.example.com)", v);
	snprintf(cfg->sandbox_domain, sizeof(cfg->sandbox_domain), "%s", v);
	return 0;
}

static int set_count(uint32_t *dst, const char *v, hu_err *err)
{
	uint64_t n;
	if (hu_parse_u64(v, &n, err) < 0)
		return -1;
	if (n < 1 || n > 1000000)
		return hu_err_set(err, -ERANGE, "%s is out of range (1..1000000)", v);
	*dst = (uint32_t)n;
	return 0;
}

static int set_ingress_per_sandbox(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_count(&cfg->ingress_max_per_sandbox, v, err);
}

static int set_ingress_per_team(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_count(&cfg->ingress_max_per_team, v, err);
}

static int set_tls_cert(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_dir(cfg->tls_cert, sizeof(cfg->tls_cert), v, err);
}

static int set_tls_key(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_dir(cfg->tls_key, sizeof(cfg->tls_key), v, err);
}

static int set_max_body(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_positive_size(v, &cfg->max_body_bytes, err);
}

static int set_default_memory(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_positive_size(v, &cfg->default_memory_bytes, err);
}

static int set_default_disk(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_positive_size(v, &cfg->default_disk_bytes, err);
}

/* A duration in whole seconds, 1 s .. MAX_TIMEOUT_S. */
static int parse_seconds(const char *v, uint32_t *out, hu_err *err)
{
	uint64_t ms;
	if (hu_parse_duration_ms(v, &ms, err) < 0)
		return -1;
	if (ms < 1000 || ms % 1000)
		return hu_err_set(err, -EINVAL, "'%s' must be a whole number of seconds, at least 1s", v);
	if (ms / 1000 > MAX_TIMEOUT_S)
		return hu_err_set(err, -ERANGE, "'%s' is longer than %u days", v, MAX_TIMEOUT_S / 86400);
	*out = (uint32_t)(ms / 1000);
	return 0;
}

static int set_idle_timeout(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_seconds(v, &cfg->idle_timeout_s, err);
}

static int set_default_timeout(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_seconds(v, &cfg->default_timeout_s, err);
}

static int set_default_cpus(struct hu_config *cfg, const char *v, hu_err *err)
{
	return hu_parse_cpus(v, &cfg->default_cpu_millis, err);
}

static int parse_count(const char *v, uint64_t max, uint64_t *out, hu_err *err)
{
	if (hu_parse_u64(v, out, err) < 0)
		return -1;
	if (*out < 1 || *out > max)
		return hu_err_set(err, -ERANGE, "%s is out of range (1..%llu)", v, (unsigned long long)max);
	return 0;
}

static int set_default_pids(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_count(v, 1u << 22, &cfg->default_pids, err); /* the kernel's pid_max ceiling */
}

static int set_max_sandboxes(struct hu_config *cfg, const char *v, hu_err *err)
{
	uint64_t n;
	if (parse_count(v, UINT32_MAX, &n, err) < 0)
		return -1;
	cfg->max_sandboxes = (uint32_t)n;
	return 0;
}

static int set_log_level(struct hu_config *cfg, const char *v, hu_err *err)
{
	enum hu_log_level lvl;
	if (hu_log_level_parse(v, &lvl) < 0)
		return hu_err_set(err, -EINVAL, "'%s' is not a log level (debug, info, warn, error)", v);
	snprintf(cfg->log_level, sizeof(cfg->log_level), "%s", v);
	return 0;
}

static int set_watcher_idle(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_seconds(v, &cfg->watcher_idle_s, err);
}

static int set_release_after(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_seconds(v, &cfg->release_after_s, err);
}

static int set_reclaim_after(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_seconds(v, &cfg->reclaim_after_s, err);
}

static int set_min_available(struct hu_config *cfg, const char *v, hu_err *err)
{
	return hu_parse_size(v, &cfg->pressure_min_available, err);
}

static int set_psi_avg10(struct hu_config *cfg, const char *v, hu_err *err)
{
	uint64_t n;
	if (parse_count(v, 100, &n, err) < 0)
		return -1;
	cfg->pressure_psi_avg10 = (uint32_t)n;
	return 0;
}

static int set_admission_reserve(struct hu_config *cfg, const char *v, hu_err *err)
{
	return hu_parse_size(v, &cfg->admission_reserve, err);
}

/* A ratio like 1.5: a plain decimal, 0.01 .. 1000. */
static int parse_ratio(const char *v, double *out, hu_err *err)
{
	char *end;
	double r;

	if (!*v || strspn(v, "0123456789.") != strlen(v))
		return hu_err_set(err, -EINVAL, "'%s' is not a ratio (examples: 1, 1.5, 4)", v);
	errno = 0;
	r = strtod(v, &end);
	if (errno || *end || r < 0.01 || r > 1000)
		return hu_err_set(err, -ERANGE, "'%s' is out of range (0.01..1000)", v);
	*out = r;
	return 0;
}

static int set_memory_overcommit(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_ratio(v, &cfg->admission_memory_overcommit, err);
}

static int set_cpu_overcommit(struct hu_config *cfg, const char *v, hu_err *err)
{
	if (!strcmp(v, "0")) {
		cfg->admission_cpu_overcommit = 0; /* no CPU budget */
		return 0;
	}
	return parse_ratio(v, &cfg->admission_cpu_overcommit, err);
}

static int set_pids_overcommit(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_ratio(v, &cfg->admission_pids_overcommit, err);
}

static int set_bool(int *out, const char *v, hu_err *err)
{
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1") || !strcmp(v, "on"))
		*out = 1;
	else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0") || !strcmp(v, "off"))
		*out = 0;
	else
		return hu_err_set(err, -EINVAL, "'%s' is not true or false", v);
	return 0;
}

static int set_refuse_under_pressure(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_bool(&cfg->admission_refuse_under_pressure, v, err);
}

static int set_signed_url_scan(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_bool(&cfg->signed_url_scan, v, err);
}

static int set_interp_provision(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_bool(&cfg->interp_provision, v, err);
}

static int set_interp_recipe(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_dir(cfg->interp_recipe, sizeof(cfg->interp_recipe), v, err);
}

static int set_interp_cache_dir(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_dir(cfg->interp_cache_dir, sizeof(cfg->interp_cache_dir), v, err);
}

/* "0" turns the limit off; otherwise a volume cap, 4 MiB .. 16 TiB. */
static int set_volume_max_size(struct hu_config *cfg, const char *v, hu_err *err)
{
	uint64_t n;
	if (hu_parse_size(v, &n, err) < 0)
		return -1;
	if (n && (n < (4ull << 20) || n > (16ull << 40)))
		return hu_err_set(err, -ERANGE, "%s is out of range (0 for none, or 4M..16T)", v);
	cfg->volume_max_bytes = n;
	return 0;
}

static int set_volume_root(struct hu_config *cfg, const char *v, hu_err *err)
{
	return set_dir(cfg->volume_root, sizeof(cfg->volume_root), v, err);
}

static int has_dotdot(const char *path)
{
	for (const char *c = path; (c = strstr(c, "..")); c += 2)
		if ((c == path || c[-1] == '/') && (c[2] == '/' || c[2] == '\0'))
			return 1;
	return 0;
}

/* A comma-separated list of absolute directories; a later setting replaces
 * an earlier one (the flag replaces the file's list). The directories are
 * opened when a host mount asks for them, not here. */
static int set_host_mount_roots(struct hu_config *cfg, const char *v, hu_err *err)
{
	char dirs[HU_HOST_MOUNT_ROOTS_MAX][PATH_MAX], teams[HU_HOST_MOUNT_ROOTS_MAX][64];
	unsigned n = 0;

	for (const char *p = v; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		while (len && p[0] == ' ')
			p++, len--;
		while (len && p[len - 1] == ' ')
			len--;
		if (len == 0)
			return hu_err_set(err, -EINVAL, "empty directory in the list");
		if (n == HU_HOST_MOUNT_ROOTS_MAX)
			return hu_err_set(err, -E2BIG, "more than %d directories", HU_HOST_MOUNT_ROOTS_MAX);
		/* TEAM:/dir or *:/dir; a bare /dir is per-team */
		teams[n][0] = '\0';
		const char *colon = p[0] != '/' ? memchr(p, ':', len) : NULL;
		if (p[0] != '/' && !colon)
			return hu_err_set(err, -EINVAL, "'%.*s' is neither /dir, TEAM:/dir nor *:/dir", (int)(len < 64 ? len : 64), p);
		if (colon) {
			size_t tlen = (size_t)(colon - p);
			if (tlen == 0 || tlen >= sizeof(teams[n]) || memchr(p, '/', tlen))
				return hu_err_set(err, -EINVAL, "'%.*s': a team is 1 to 63 characters without '/'",
						  (int)(len < 64 ? len : 64), p);
			memcpy(teams[n], p, tlen);
			teams[n][tlen] = '\0';
			len -= tlen + 1;
			p = colon + 1;
		}
		if (len >= PATH_MAX)
			return hu_err_set(err, -ENAMETOOLONG, "a directory is too long");
		memcpy(dirs[n], p, len);
		dirs[n][len] = '\0';
		if (dirs[n][0] != '/' || has_dotdot(dirs[n]))
			return hu_err_set(err, -EINVAL, "'%s' is not an absolute path without '..'", dirs[n]);
		n++;
		p = end ? end + 1 : p + len;
	}
	memcpy(cfg->host_mount_roots, dirs, sizeof(dirs[0]) * n);
	memcpy(cfg->host_mount_teams, teams, sizeof(teams[0]) * n);
	cfg->n_host_mount_roots = n;
	return 0;
}

static int set_str(char *dst, size_t cap, const char *v, hu_err *err)
{
	if (strlen(v) >= cap)
		return hu_err_set(err, -ENAMETOOLONG, "'%.64s' is too long (at most %zu characters)", v, cap - 1);
	snprintf(dst, cap, "%s", v);
	return 0;
}

/* The network keys are checked here, as the runtime will read them, so a
 * bad value names its line; NET_SETTER(fn, field, check) stores a value
 * that check() accepts. */
static int check_uplinks(const char *v, hu_err *err)
{
	struct hu_net_config c;
	return hu_net_config_parse(&c, "none", "hutch", "10.200.0.0/17", "192.0.2.1", v, "", "", err);
}

/* mode and name: parsed with valid stand-ins for the other settings */
static int check_mode(const char *v, hu_err *err)
{
	struct hu_net_config c;
	return hu_net_config_parse(&c, v, "hutch", "10.200.0.0/17", "192.0.2.1", "", "", "", err);
}

static int check_name(const char *v, hu_err *err)
{
	struct hu_net_config c;
	return hu_net_config_parse(&c, "none", v, "10.200.0.0/17", "192.0.2.1", "", "", "", err);
}

static int check_pool(const char *v, hu_err *err)
{
	struct hu_net_config c;
	return hu_net_config_parse(&c, "none", "hutch", v, "192.0.2.1", "", "", "", err);
}

static int check_pool6(const char *v, hu_err *err)
{
	struct hu_net_config c;
	return hu_net_pool6_parse(&c, v, err);
}

static int check_dns(const char *v, hu_err *err)
{
	struct hu_net_config c;
	return hu_net_config_parse(&c, "none", "hutch", "10.200.0.0/17", v, "", "", "", err);
}

static int check_flows(const char *v, hu_err *err)
{
	unsigned n;
	return hu_net_flows_parse(v, &n, err);
}

/* CIDRs (IPv4 or IPv6) separated by commas and/or spaces */
static int check_list(const char *v, hu_err *err)
{
	struct hu_cidr4 c;
	struct hu_cidr6 c6;
	char one[64];

	for (const char *p = v; *p;) {
		size_t len = strcspn(p, ", ");
		if (len >= sizeof(one))
			return hu_err_set(err, -EINVAL, "'%.64s': entry too long", p);
		memcpy(one, p, len);
		one[len] = '\0';
		if (len && (strchr(one, ':') ? hu_cidr6_parse(one, &c6, err) : hu_cidr4_parse(one, &c, err)) < 0)
			return -1;
		p += len;
		p += strspn(p, ", ");
	}
	return 0;
}

#define NET_SETTER(fn, field, check)                                                                           \
	static int fn(struct hu_config *cfg, const char *v, hu_err *err)                                       \
	{                                                                                                      \
		if (check(v, err) < 0)                                                                         \
			return -1;                                                                             \
		return set_str(cfg->field, sizeof(cfg->field), v, err);                                        \
	}
NET_SETTER(set_net_mode, net_mode, check_mode)
NET_SETTER(set_net_name, net_name, check_name)
NET_SETTER(set_net_pool, net_pool, check_pool)
NET_SETTER(set_net_pool6, net_pool6, check_pool6)
NET_SETTER(set_net_dns, net_dns, check_dns)
NET_SETTER(set_net_uplinks, net_uplinks, check_uplinks)
NET_SETTER(set_net_allow, net_allow, check_list)
NET_SETTER(set_net_deny, net_deny, check_list)
NET_SETTER(set_net_flows, net_flows, check_flows)

/* io.*: checked as the runtime will parse them */
static int check_io_weight(const char *v, hu_err *err)
{
	struct hu_cgroup_io io;
	return hu_cgroup_io_parse(v, NULL, NULL, &io, err);
}

static int check_io_bps(const char *v, hu_err *err)
{
	struct hu_cgroup_io io;
	return hu_cgroup_io_parse(NULL, v, NULL, &io, err);
}

static int check_io_iops(const char *v, hu_err *err)
{
	struct hu_cgroup_io io;
	return hu_cgroup_io_parse(NULL, NULL, v, &io, err);
}
NET_SETTER(set_io_weight, io_weight, check_io_weight)
NET_SETTER(set_io_bps, io_bps, check_io_bps)
NET_SETTER(set_io_iops, io_iops, check_io_iops)

/* Warm pool sizes: a pool is a few idle sandboxes, so a typo of thousands
 * is refused rather than built. */
#define POOL_SIZE_MAX 256

static int parse_pool_size(const char *v, uint32_t *out, hu_err *err)
{
	uint64_t n;
	if (hu_parse_u64(v, &n, err) < 0)
		return -1;
	if (n > POOL_SIZE_MAX)
		return hu_err_set(err, -EINVAL, "%llu is more than %d warm sandboxes", (unsigned long long)n,
				  POOL_SIZE_MAX);
	*out = (uint32_t)n;
	return 0;
}

static int set_pool_size(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_pool_size(v, &cfg->pool_size, err);
}

static int set_pool_max(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_pool_size(v, &cfg->pool_max, err);
}

/* A template id as the pools key it: 1 to 63 of [a-z0-9_-], so it can be
 * a metrics label as it is. */
static int pool_template_valid(const char *tpl)
{
	size_t n = strlen(tpl);
	if (n == 0 || n >= HU_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)tpl[i]) && !isdigit((unsigned char)tpl[i]) && tpl[i] != '-' && tpl[i] != '_')
			return 0;
	return 1;
}

/* pool.size.<template> */
static int set_pool_size_for(struct hu_config *cfg, const char *tpl, const char *v, hu_err *err)
{
	uint32_t n = 0;
	unsigned i;

	if (!pool_template_valid(tpl))
		return hu_err_set(err, -EINVAL, "'%.64s' is not a template id ([a-z0-9_-], 1 to 63 characters)", tpl);
	if (parse_pool_size(v, &n, err) < 0)
		return -1;
	for (i = 0; i < cfg->n_pool_sizes; i++)
		if (!strcmp(cfg->pool_sizes[i].template_id, tpl))
			break;
	if (i == HU_POOL_TEMPLATES_MAX)
		return hu_err_set(err, -E2BIG, "warm pools for at most %d templates", HU_POOL_TEMPLATES_MAX);
	snprintf(cfg->pool_sizes[i].template_id, sizeof(cfg->pool_sizes[i].template_id), "%s", tpl);
	cfg->pool_sizes[i].size = n;
	if (i == cfg->n_pool_sizes)
		cfg->n_pool_sizes++;
	return 0;
}

/* Quotas: 0 is "no quota". */
static int parse_quota_count(const char *v, uint32_t *out, hu_err *err)
{
	uint64_t n;
	if (hu_parse_u64(v, &n, err) < 0)
		return -1;
	if (n > UINT32_MAX)
		return hu_err_set(err, -ERANGE, "%s is out of range (0 for none)", v);
	*out = (uint32_t)n;
	return 0;
}

static int set_quota_sandboxes(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_quota_count(v, &cfg->quota_sandboxes, err);
}

static int set_quota_builds(struct hu_config *cfg, const char *v, hu_err *err)
{
	return parse_quota_count(v, &cfg->quota_builds, err);
}

static int set_quota_memory(struct hu_config *cfg, const char *v, hu_err *err)
{
	return hu_parse_size(v, &cfg->quota_memory_bytes, err);
}

static const struct {
	const char *key;
	const char *flag; /* the command-line flag that sets it, or NULL */
	int (*set)(struct hu_config *cfg, const char *value, hu_err *err);
} keys[] = {
	{"listen", "--listen", set_listen},
	{"port", "--port", set_port},
	{"data_dir", "--data-dir", set_data_dir},
	{"run_dir", "--run-dir", set_run_dir},
	{"slots_dir", "--slots-dir", set_slots_dir},
	{"store", "--store", set_store},
	{"node.name", "--node-name", set_node_name},
	{"node.address", NULL, set_node_address},
	{"node.labels", NULL, set_node_labels},
	{"cluster.secret", NULL, set_cluster_secret},
	{"cluster.secret_file", "--cluster-secret-file", set_cluster_secret_file},
	{"cluster.ca", "--cluster-ca", set_cluster_ca},
	{"max_body", NULL, set_max_body},
	{"sandbox_domain", "--sandbox-domain", set_sandbox_domain},
	{"ingress.max_per_sandbox", NULL, set_ingress_per_sandbox},
	{"ingress.max_per_team", NULL, set_ingress_per_team},
	{"tls_cert", "--tls-cert", set_tls_cert},
	{"tls_key", "--tls-key", set_tls_key},
	{"idle_timeout", NULL, set_idle_timeout},
	{"default_timeout", NULL, set_default_timeout},
	{"default_memory", NULL, set_default_memory},
	{"default_cpus", NULL, set_default_cpus},
	{"default_disk", NULL, set_default_disk},
	{"default_pids", NULL, set_default_pids},
	{"max_sandboxes", NULL, set_max_sandboxes},
	{"log_level", NULL, set_log_level},
	{"pause.release_after", "--pause-release-after", set_release_after},
	{"watcher.idle_timeout", NULL, set_watcher_idle},
	{"reclaim.after", "--reclaim-after", set_reclaim_after},
	{"pressure.min_available", NULL, set_min_available},
	{"pressure.psi_avg10", NULL, set_psi_avg10},
	{"admission.reserve", NULL, set_admission_reserve},
	{"admission.memory_overcommit", NULL, set_memory_overcommit},
	{"admission.cpu_overcommit", NULL, set_cpu_overcommit},
	{"admission.pids_overcommit", NULL, set_pids_overcommit},
	{"admission.refuse_under_pressure", NULL, set_refuse_under_pressure},
	{"signed_url.scan", "--signed-url-scan", set_signed_url_scan},
	{"quota.sandboxes", NULL, set_quota_sandboxes},
	{"quota.memory", NULL, set_quota_memory},
	{"quota.builds", NULL, set_quota_builds},
	{"volume_root", "--volume-root", set_volume_root},
	{"volume_max_size", "--volume-max-size", set_volume_max_size},
	{"host_mount_roots", "--host-mount-roots", set_host_mount_roots},
	{"network", NULL, set_net_mode},
	{"network_name", NULL, set_net_name},
	{"network_pool", NULL, set_net_pool},
	{"network_pool6", NULL, set_net_pool6},
	{"network_dns", NULL, set_net_dns},
	{"network_uplink", NULL, set_net_uplinks},
	{"network_allow", NULL, set_net_allow},
	{"network_deny", NULL, set_net_deny},
	{"network_flows", NULL, set_net_flows},
	{"io.weight", NULL, set_io_weight},
	{"io.bps", NULL, set_io_bps},
	{"io.iops", NULL, set_io_iops},
	{"pool.size", "--pool-size", set_pool_size},
	{"pool.max", "--pool-max", set_pool_max},
	{"interpreter.provision", "--interpreter-provision", set_interp_provision},
	{"interpreter.recipe", "--interpreter-recipe", set_interp_recipe},
	{"interpreter.cache_dir", "--interpreter-cache-dir", set_interp_cache_dir},
};

/* Set key to value; a bad value's error is prefixed with `name` (the key
 * in a file, the flag on the command line). */
static int set_named(struct hu_config *cfg, const char *key, const char *value, const char *name, hu_err *err)
{
	if (!strncmp(key, "pool.size.", strlen("pool.size."))) {
		if (set_pool_size_for(cfg, key + strlen("pool.size."), value, err) < 0) {
			hu_err_prefix(err, "%s", name);
			return -1;
		}
		return 0;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strcmp(key, keys[i].key))
			continue;
		if (keys[i].set(cfg, value, err) < 0) {
			hu_err_prefix(err, "%s", name);
			return -1;
		}
		return 0;
	}
	return hu_err_set(err, -EINVAL, "unknown key '%s'", key);
}

int hu_config_set(struct hu_config *cfg, const char *key, const char *value, hu_err *err)
{
	return set_named(cfg, key, value, key, err);
}

/* ---- the config file ---------------------------------------------------------- */

static char *trim(char *s)
{
	char *end;
	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* One line: blank, "# comment", or "key = value". */
static int apply_line(struct hu_config *cfg, char *line, hu_err *err)
{
	char *s = trim(line), *eq, *key, *value;

	if (!*s || *s == '#')
		return 0;
	eq = strchr(s, '=');
	if (!eq)
		return hu_err_set(err, -EINVAL, "expected 'key = value', got '%.64s'", s);
	*eq = '\0';
	key = trim(s);
	value = trim(eq + 1);
	if (!*key)
		return hu_err_set(err, -EINVAL, "missing key before '='");
	if (!*value)
		return hu_err_set(err, -EINVAL, "%s: missing value after '='", key);
	return hu_config_set(cfg, key, value, err);
}

int hu_config_load_file(struct hu_config *cfg, const char *path, hu_err *err)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, rc = 0;

	if (!f)
		return hu_err_sys(err, "config file %s", path);
	ssize_t got;

	while ((got = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if ((size_t)got != strlen(line)) {
			rc = hu_err_set(err, -EINVAL, "%s:%d: NUL byte in the line", path, lineno);
			break;
		}
		if (apply_line(cfg, line, err) < 0) {
			hu_err_prefix(err, "%s:%d", path, lineno);
			rc = -1;
			break;
		}
	}
	if (rc == 0 && ferror(f))
		rc = hu_err_sys(err, "read config file %s", path);
	free(line);
	fclose(f);
	return rc;
}

/* ---- command line ------------------------------------------------------------- */

struct flag_value {
	const char *key;
	const char *flag;
	const char *value;
};

/* The key a flag sets ("config" for --config), or NULL. */
static const char *flag_key(const char *name, size_t len, const char **flag)
{
	if (len == strlen("--config") && !strncmp(name, "--config", len)) {
		*flag = "--config";
		return "config";
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (keys[i].flag && strlen(keys[i].flag) == len && !strncmp(name, keys[i].flag, len)) {
			*flag = keys[i].flag;
			return keys[i].key;
		}
	}
	return NULL;
}

static int apply_flags(struct hu_config *cfg, const struct flag_value *fv, size_t n, const char *only,
		       hu_err *err)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(fv[i].key, "config") || (only && strcmp(fv[i].key, only)))
			continue;
		if (set_named(cfg, fv[i].key, fv[i].value, fv[i].flag, err) < 0)
			return -1;
	}
	return 0;
}

int hu_config_from_args(struct hu_config *cfg, int argc, char **argv, hu_err *err)
{
	struct flag_value fv[16] = {{0}};
	size_t n = 0;
	const char *config_path = NULL;
	char default_path[PATH_MAX + 16];

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq = strchr(arg, '='), *flag = NULL, *key;
		size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);

		if (strncmp(arg, "--", 2))
			return hu_err_set(err, -EINVAL, "unexpected argument '%s'", arg);
		key = flag_key(arg, name_len, &flag);
		if (!key)
			return hu_err_set(err, -EINVAL, "unknown option '%.*s'", (int)name_len, arg);
		if (n == sizeof(fv) / sizeof(fv[0]))
			return hu_err_set(err, -E2BIG, "too many options");
		if (!eq && i + 1 >= argc)
			return hu_err_set(err, -EINVAL, "%s needs a value", flag);
		fv[n].key = key;
		fv[n].flag = flag;
		fv[n].value = eq ? eq + 1 : argv[++i];
		if (!strcmp(key, "config"))
			config_path = fv[n].value;
		n++;
	}

	hu_config_defaults(cfg);
	/* --data-dir first: it says where the default config file is. */
	if (apply_flags(cfg, fv, n, "data_dir", err) < 0)
		return -1;
	if (!config_path) {
		snprintf(default_path, sizeof(default_path), "%s/hutch.conf", cfg->data_dir);
		if (access(default_path, F_OK) == 0)
			config_path = default_path;
	}
	if (config_path) {
		if (strlen(config_path) >= sizeof(cfg->config_path))
			return hu_err_set(err, -ENAMETOOLONG, "--config: path is too long");
		if (hu_config_load_file(cfg, config_path, err) < 0)
			return -1;
		snprintf(cfg->config_path, sizeof(cfg->config_path), "%s", config_path);
	}
	/* Flags win over the file. */
	return apply_flags(cfg, fv, n, NULL, err);
}
