/* hutch serve's configuration: defaults, the config file, flags over it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/config.h"
#include "util/fileutil.h"

struct fixture {
	char dir[64];
	char conf[128];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-test-config-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->conf, sizeof(f->conf), "%s/hutch.conf", f->dir);
	setenv("HUTCH_DATA_DIR", f->dir, 1);
	unsetenv("HUTCH_RUN_DIR");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	hu_err err;
	hu_rm_rf(f->dir, &err);
	unsetenv("HUTCH_DATA_DIR");
	free(f);
	return 0;
}

static void write_conf(const char *path, const char *text)
{
	hu_err err;
	assert_int_equal(hu_write_file(path, text, strlen(text), O_CREAT | O_TRUNC, 0600, &err), 0);
}

static int from_args(struct hu_config *cfg, hu_err *err, ...)
{
	char *argv[16] = {"serve"};
	int argc = 1;
	va_list ap;
	va_start(ap, err);
	for (char *a; (a = va_arg(ap, char *));)
		argv[argc++] = a;
	va_end(ap);
	return hu_config_from_args(cfg, argc, argv, err);
}

static void test_defaults(void **state)
{
	struct fixture *f = *state;
	struct hu_config cfg;
	hu_err err;

	assert_int_equal(from_args(&cfg, &err, NULL), 0);
	assert_string_equal(cfg.listen_addr, "127.0.0.1");
	assert_int_equal(cfg.port, 3000);
	assert_string_equal(cfg.data_dir, f->dir); /* from HUTCH_DATA_DIR */
	assert_string_equal(cfg.run_dir, "/run/hutch");
	assert_int_equal(cfg.max_body_bytes, 256ull << 20);
	assert_int_equal(cfg.idle_timeout_s, 60);
	assert_int_equal(cfg.default_timeout_s, 300);
	assert_int_equal(cfg.default_memory_bytes, 512ull << 20);
	assert_int_equal(cfg.default_cpu_millis, 1000);
	assert_int_equal(cfg.default_disk_bytes, 1ull << 30);
	assert_int_equal(cfg.default_pids, 512);
	assert_int_equal(cfg.max_sandboxes, 1000);
	assert_string_equal(cfg.log_level, "info");
	assert_string_equal(cfg.config_path, ""); /* no hutch.conf in the data dir */
	assert_string_equal(cfg.sandbox_domain, "localhost");
	assert_int_equal(cfg.ingress_max_per_sandbox, 256);
	assert_int_equal(cfg.ingress_max_per_team, 1024);
}

static void test_good_file(void **state)
{
	struct fixture *f = *state;
	struct hu_config cfg;
	hu_err err;

	write_conf(f->conf, "# a comment\n"
			    "\n"
			    "listen = ::1\n"
			    "port=3105\n"
			    "  run_dir   =   /tmp/hutch-run  \n"
			    "max_body = 64M\n"
			    "idle_timeout = 2m\n"
			    "default_timeout = 600\n"
			    "default_memory = 1G\n"
			    "default_cpus = 0.5\n"
			    "default_disk = 2G\n"
			    "default_pids = 100\n"
			    "max_sandboxes = 20\n"
			    "network = nat\n"
			    "network_pool = 10.250.0.0/17\n"
			    "network_dns = 198.51.100.53\n"
			    "network_pool6 = fd00:1:2::/64\n"
			    "network_allow = 10.1.2.3/32, 10.9.0.0/16, fd12::/16\n"
			    "network_flows = 4096\n"
			    "io.weight = 50\n"
			    "io.bps = 100M\n"
			    "io.iops = 2000\n"
			    "log_level = debug\r\n");
	/* <data_dir>/hutch.conf is read without --config. */
	assert_int_equal(from_args(&cfg, &err, NULL), 0);
	assert_string_equal(cfg.config_path, f->conf);
	assert_string_equal(cfg.listen_addr, "::1");
	assert_int_equal(cfg.port, 3105);
	assert_string_equal(cfg.run_dir, "/tmp/hutch-run");
	assert_int_equal(cfg.max_body_bytes, 64ull << 20);
	assert_int_equal(cfg.idle_timeout_s, 120);
	assert_int_equal(cfg.default_timeout_s, 600);
	assert_int_equal(cfg.default_memory_bytes, 1ull << 30);
	assert_int_equal(cfg.default_cpu_millis, 500);
	assert_int_equal(cfg.default_disk_bytes, 2ull << 30);
	assert_int_equal(cfg.default_pids, 100);
	assert_int_equal(cfg.max_sandboxes, 20);
	assert_string_equal(cfg.log_level, "debug");
	assert_string_equal(cfg.net_mode, "nat");
	assert_string_equal(cfg.net_pool, "10.250.0.0/17");
	assert_string_equal(cfg.net_dns, "198.51.100.53");
	assert_string_equal(cfg.net_pool6, "fd00:1:2::/64");
	assert_string_equal(cfg.net_allow, "10.1.2.3/32, 10.9.0.0/16, fd12::/16");
	assert_string_equal(cfg.net_flows, "4096");
	assert_string_equal(cfg.io_weight, "50");
	assert_string_equal(cfg.io_bps, "100M");
	assert_string_equal(cfg.io_iops, "2000");
}

static void assert_file_error(struct fixture *f, const char *text, const char *where, const char *what)
{
	struct hu_config cfg;
	hu_err err;
	char path[160];

	write_conf(f->conf, text);
	assert_int_equal(from_args(&cfg, &err, NULL), -1);
	snprintf(path, sizeof(path), "%s:%s", f->conf, where);
	if (!strstr(err.msg, path) || !strstr(err.msg, what))
		fail_msg("error '%s' does not say '%s' and '%s'", err.msg, path, what);
}

static void test_bad_key(void **state)
{
	assert_file_error(*state, "port = 3000\n# fine\ncolour = blue\n", "3", "unknown key 'colour'");
}

static void test_bad_values(void **state)
{
	struct fixture *f = *state;
	assert_file_error(f, "port = 70000\n", "1", "port");
	assert_file_error(f, "port = 0\n", "1", "port");
	assert_file_error(f, "port = 30x\n", "1", "30x");
	assert_file_error(f, "listen = localhost\n", "1", "localhost");
	assert_file_error(f, "\ndata_dir = relative/dir\n", "2", "absolute");
	assert_file_error(f, "max_body = lots\n", "1", "lots");
	assert_file_error(f, "idle_timeout = 500ms\n", "1", "500ms");
	assert_file_error(f, "default_cpus = 0\n", "1", "default_cpus");
	assert_file_error(f, "max_sandboxes = 0\n", "1", "max_sandboxes");
	assert_file_error(f, "log_level = loud\n", "1", "loud");
	assert_file_error(f, "port\n", "1", "key = value");
	assert_file_error(f, "port =\n", "1", "missing value");
	assert_file_error(f, "= 3\n", "1", "missing key");
	assert_file_error(f, "admission.memory_overcommit = 0\n", "1", "out of range");
	assert_file_error(f, "admission.memory_overcommit = -1\n", "1", "not a ratio");
	assert_file_error(f, "admission.cpu_overcommit = 1e9\n", "1", "not a ratio");
	assert_file_error(f, "admission.refuse_under_pressure = maybe\n", "1", "true or false");
	assert_file_error(f, "pressure.psi_avg10 = 101\n", "1", "pressure.psi_avg10");
	assert_file_error(f, "reclaim.after = 0s\n", "1", "reclaim.after");
	assert_file_error(f, "pause.release_after = soon\n", "1", "soon");
	assert_file_error(f, "watcher.idle_timeout = 0s\n", "1", "at least 1s");
	assert_file_error(f, "sandbox_domain = a..b\n", "1", "a..b");
	assert_file_error(f, "sandbox_domain = .example.com\n", "1", "not a domain");
	assert_file_error(f, "sandbox_domain = ex ample.com\n", "1", "not a domain");
	assert_file_error(f, "ingress.max_per_sandbox = 0\n", "1", "ingress.max_per_sandbox");
	assert_file_error(f, "ingress.max_per_team = many\n", "1", "many");
	assert_file_error(f, "tls_cert = cert.pem\n", "1", "absolute");
}

/* Port ingress: the sandbox domain and the connection limits. */
static void test_ingress_settings(void **state)
{
	struct fixture *f = *state;
	struct hu_config cfg;
	hu_err err;
	hu_config_defaults(&cfg);
	assert_int_equal(hu_config_set(&cfg, "sandbox_domain", "sbx.example.com", &err), 0);
	assert_int_equal(hu_config_set(&cfg, "ingress.max_per_sandbox", "3", &err), 0);
	assert_int_equal(hu_config_set(&cfg, "ingress.max_per_team", "7", &err), 0);
	assert_string_equal(cfg.sandbox_domain, "sbx.example.com");
	assert_int_equal(cfg.ingress_max_per_sandbox, 3);
	assert_int_equal(cfg.ingress_max_per_team, 7);
	assert_int_equal(hu_config_set(&cfg, "tls_cert", "/etc/hutch/cert.pem", &err), 0);
	assert_int_equal(hu_config_set(&cfg, "tls_key", "/etc/hutch/key.pem", &err), 0);
	assert_string_equal(cfg.tls_cert, "/etc/hutch/cert.pem");
	assert_string_equal(cfg.tls_key, "/etc/hutch/key.pem");
	(void)f;
}

/* The lifecycle and admission settings (docs/operations.md). */
static void test_lifecycle_settings(void **state)
{
	struct fixture *f = *state;
	struct hu_config cfg;
	hu_err err;

	hu_config_defaults(&cfg);
	assert_int_equal(cfg.release_after_s, 600);
	assert_int_equal(cfg.reclaim_after_s, 86400);
	assert_int_equal(cfg.watcher_idle_s, 600);
	assert_true(cfg.admission_memory_overcommit == 4.0);
	assert_true(cfg.admission_cpu_overcommit == 0);
	assert_true(cfg.admission_refuse_under_pressure);
	write_conf(f->conf, "pause.release_after = 5m\nreclaim.after = 2h\npressure.min_available = 2G\n"
			    "pressure.psi_avg10 = 25\nadmission.reserve = 1G\nadmission.memory_overcommit = 1.5\n"
			    "admission.cpu_overcommit = 2\nadmission.refuse_under_pressure = false\n"
			    "watcher.idle_timeout = 3s\n");
	hu_config_defaults(&cfg);
	assert_int_equal(hu_config_load_file(&cfg, f->conf, &err), 0);
	assert_int_equal(cfg.watcher_idle_s, 3);
	assert_int_equal(cfg.release_after_s, 300);
	assert_int_equal(cfg.reclaim_after_s, 7200);
	assert_int_equal(cfg.pressure_min_available, 2ull << 30);
	assert_int_equal(cfg.pressure_psi_avg10, 25);
	assert_int_equal(cfg.admission_reserve, 1ull << 30);
	assert_true(cfg.admission_memory_overcommit == 1.5);
	assert_true(cfg.admission_cpu_overcommit == 2.0);
	assert_false(cfg.admission_refuse_under_pressure);
	assert_file_error(f, "network = bridge\n", "1", "expected none or nat");
	assert_file_error(f, "network_name = Hutch\n", "1", "network name");
	assert_file_error(f, "network_pool = 10.0.0.0/33\n", "1", "prefix length");
	assert_file_error(f, "network_dns = dns.example\n", "1", "network resolver");
	assert_file_error(f, "network_pool6 = fd00::/127\n", "1", "too small");
	assert_file_error(f, "network_pool6 = 10.0.0.0/8\n", "1", "not an IPv6 address");
	assert_file_error(f, "network_deny = fd00::/129\n", "1", "prefix length");
	assert_file_error(f, "network_deny = 192.0.2.0/24, lan\n", "1", "'lan' is not an IPv4 address");
	assert_file_error(f, "network_flows = 8\n", "1", "0 (no limit) or 16");
	assert_file_error(f, "network_flows = 2000000\n", "1", "0 (no limit) or 16");
	assert_file_error(f, "network_flows = many\n", "1", "many");
	assert_file_error(f, "io.weight = 0\n", "1", "1 .. 10000");
	assert_file_error(f, "io.weight = 10001\n", "1", "1 .. 10000");
	assert_file_error(f, "io.bps = 512K\n", "1", "at least 1M");
	assert_file_error(f, "io.iops = 99\n", "1", "at least 100");
}

static void test_flags_override(void **state)
{
	struct fixture *f = *state;
	struct hu_config cfg;
	hu_err err;
	char other[160], conf2[200];

	write_conf(f->conf, "port = 3105\nlisten = 127.0.0.2\nlog_level = warn\n");
	assert_int_equal(from_args(&cfg, &err, "--port", "3107", "--listen=0.0.0.0", "--run-dir", "/tmp/r", NULL), 0);
	assert_int_equal(cfg.port, 3107);
	assert_string_equal(cfg.listen_addr, "0.0.0.0");
	assert_string_equal(cfg.run_dir, "/tmp/r");
	assert_string_equal(cfg.log_level, "warn"); /* from the file: no flag for it */

	/* --data-dir says where the default config file is. */
	snprintf(other, sizeof(other), "%s/other", f->dir);
	assert_int_equal(hu_mkdir_p(other, 0700, &err), 0);
	snprintf(conf2, sizeof(conf2), "%s/hutch.conf", other);
	write_conf(conf2, "port = 3110\n");
	assert_int_equal(from_args(&cfg, &err, "--data-dir", other, NULL), 0);
	assert_int_equal(cfg.port, 3110);
	assert_string_equal(cfg.data_dir, other);

	/* --config names the file; the flags still win over it. */
	assert_int_equal(from_args(&cfg, &err, "--config", conf2, "--port", "3111", NULL), 0);
	assert_int_equal(cfg.port, 3111);
	assert_string_equal(cfg.config_path, conf2);
}

static void test_volume_settings(void **state)
{
	struct fixture *f = *state;
	struct hu_config cfg;
	hu_err err;

	assert_int_equal(from_args(&cfg, &err, NULL), 0);
	assert_string_equal(cfg.volume_root, "");
	assert_int_equal(cfg.n_host_mount_roots, 0); /* host mounts off by default */
	write_conf(f->conf, "volume_root = /srv/vol\nhost_mount_roots = /srv/a, /srv/b/\n");
	assert_int_equal(from_args(&cfg, &err, NULL), 0);
	assert_string_equal(cfg.volume_root, "/srv/vol");
	assert_int_equal(cfg.n_host_mount_roots, 2);
	assert_string_equal(cfg.host_mount_roots[0], "/srv/a");
	assert_string_equal(cfg.host_mount_roots[1], "/srv/b/");
	/* the flag replaces the file's list */
	assert_int_equal(from_args(&cfg, &err, "--host-mount-roots", "/x", "--volume-root=/v2", NULL), 0);
	assert_int_equal(cfg.n_host_mount_roots, 1);
	assert_string_equal(cfg.host_mount_roots[0], "/x");
	assert_string_equal(cfg.volume_root, "/v2");
	static const char *const bad[] = {"rel", "/a,,/b", "/a/../b", "/..", "/a,rel", "/1,/2,/3,/4,/5,/6,/7,/8,/9"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(hu_config_set(&cfg, "host_mount_roots", bad[i], &err), -1);
		assert_non_null(strstr(err.msg, "host_mount_roots"));
	}
	assert_int_equal(hu_config_set(&cfg, "volume_root", "relative", &err), -1);
	assert_int_equal(cfg.volume_max_bytes, 0);
	assert_int_equal(hu_config_set(&cfg, "volume_max_size", "2G", &err), 0);
	assert_int_equal(cfg.volume_max_bytes, 2ull << 30);
	assert_int_equal(hu_config_set(&cfg, "volume_max_size", "0", &err), 0);
	assert_int_equal(cfg.volume_max_bytes, 0);
	assert_int_equal(hu_config_set(&cfg, "volume_max_size", "1M", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "volume_max_size", "lots", &err), -1);
}

static void test_bad_flags(void **state)
{
	struct hu_config cfg;
	hu_err err;

	assert_int_equal(from_args(&cfg, &err, "--colour", "blue", NULL), -1);
	assert_non_null(strstr(err.msg, "--colour"));
	assert_int_equal(from_args(&cfg, &err, "--port", NULL), -1);
	assert_non_null(strstr(err.msg, "needs a value"));
	assert_int_equal(from_args(&cfg, &err, "--port", "99999", NULL), -1);
	assert_non_null(strstr(err.msg, "--port"));
	assert_int_equal(from_args(&cfg, &err, "stray", NULL), -1);
	assert_int_equal(from_args(&cfg, &err, "--config", "/nonexistent/hutch.conf", NULL), -1);
	assert_non_null(strstr(err.msg, "/nonexistent/hutch.conf"));
	/* The default max_body does not depend on the failed attempts. */
	assert_int_equal(from_args(&cfg, &err, NULL), 0);
	assert_int_equal(cfg.port, 3000);
}

/* The store and node keys: a store is sqlite or a postgresql:// URI (the
 * flag over the file), node names and addresses are checked. */
static void test_store_and_node(void **state)
{
	struct fixture *f = *state;
	struct hu_config cfg;
	hu_err err;

	write_conf(f->conf, "store = postgresql:///hutch?host=/tmp/pg\nnode.name = n-1.a_b\n"
			    "node.address = http://10.0.0.5:3000\nnode.labels = zone=a,gpu=no\nslots_dir = /run/hutch-slots\n");
	assert_int_equal(from_args(&cfg, &err, NULL), 0);
	assert_string_equal(cfg.store, "postgresql:///hutch?host=/tmp/pg");
	assert_string_equal(hu_config_store_location(&cfg), "postgresql:///hutch?host=/tmp/pg");
	assert_string_equal(cfg.node_name, "n-1.a_b");
	assert_string_equal(cfg.node_address, "http://10.0.0.5:3000");
	assert_string_equal(cfg.node_labels, "zone=a,gpu=no");
	assert_string_equal(cfg.slots_dir, "/run/hutch-slots");
	assert_int_equal(from_args(&cfg, &err, "--store", "sqlite", NULL), 0);
	assert_string_equal(cfg.store, "");
	assert_string_equal(hu_config_store_location(&cfg), f->dir); /* the data dir's hutch.db */
	assert_int_equal(from_args(&cfg, &err, "--store", "postgres://db/x", "--node-name", "n2", NULL), 0);
	assert_string_equal(cfg.store, "postgres://db/x");
	assert_string_equal(cfg.node_name, "n2");

	hu_config_defaults(&cfg);
	assert_int_equal(hu_config_set(&cfg, "store", "mysql://x", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "store", "/var/lib/other", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "node.name", "", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "node.name", "a b", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "node.name", "../x/y", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "node.address", "10.0.0.5:3000", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "node.address", "http://a b", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "node.labels", "a;b", &err), -1);
	assert_int_equal(hu_config_set(&cfg, "slots_dir", "relative", &err), -1);
	assert_string_equal(cfg.store, "");
	assert_string_equal(cfg.node_name, "");
}

/* The code interpreter's provisioning (sandboxes/provision.h): on by
 * default, off by the environment, the file or the flag; the recipe and
 * cache are absolute folders. */
static void test_interpreter(void **state)
{
	struct fixture *f = *state;
	struct hu_config cfg;
	hu_err err;

	unsetenv("HUTCH_INTERPRETER_PROVISION");
	hu_config_defaults(&cfg);
	assert_true(cfg.interp_provision);
	assert_string_equal(cfg.interp_recipe, "");
	setenv("HUTCH_INTERPRETER_PROVISION", "off", 1);
	hu_config_defaults(&cfg);
	assert_false(cfg.interp_provision);
	setenv("HUTCH_INTERPRETER_PROVISION", "1", 1);
	hu_config_defaults(&cfg);
	assert_true(cfg.interp_provision);
	unsetenv("HUTCH_INTERPRETER_PROVISION");
	write_conf(f->conf, "interpreter.provision = no\ninterpreter.recipe = /opt/recipe\n"
			    "interpreter.cache_dir = /var/cache/ci\n");
	hu_config_defaults(&cfg);
	assert_int_equal(hu_config_load_file(&cfg, f->conf, &err), 0);
	assert_false(cfg.interp_provision);
	assert_string_equal(cfg.interp_recipe, "/opt/recipe");
	assert_string_equal(cfg.interp_cache_dir, "/var/cache/ci");
	char *argv[] = {"serve", "--interpreter-provision=true", "--interpreter-recipe", "/r", NULL};
	assert_int_equal(hu_config_from_args(&cfg, 4, argv, &err), 0);
	assert_true(cfg.interp_provision);
	assert_string_equal(cfg.interp_recipe, "/r");
	assert_file_error(f, "interpreter.provision = sometimes\n", "1", "true or false");
	assert_file_error(f, "interpreter.recipe = relative/dir\n", "1", "absolute path");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_good_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ingress_settings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lifecycle_settings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flags_override, setup, teardown),
		cmocka_unit_test_setup_teardown(test_volume_settings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_and_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interpreter, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
