/*
 * sandbox_bench: how long a hutch sandbox takes, next to the host and to
 * bubblewrap, measured in the same run.
 *
 * Figures (each sample timed with clock_gettime(CLOCK_MONOTONIC)):
 *
 *   group "true"    lifecycle     in-process create + connect + spawn /bin/true
 *                                 + wait for EXIT + destroy
 *                   bwrap_true    fork/exec of bwrap (equivalent namespaces) /bin/true
 *                   crun_true     fork/exec of `crun run` of a prepared OCI bundle
 *                                 (same namespaces, user namespace, /usr read-only,
 *                                 memory and pids limits) whose process is /bin/true
 *                   host_true     fork/exec of /bin/true on the host (the floor)
 *                   cli_true      fork/exec of `hutch run -- true`
 *   group "python"  python_hutch  lifecycle with `python3 -c pass`
 *                   python_host   fork/exec of `python3 -c pass` on the host
 *                   python_bwrap  bwrap ... python3 -c pass
 *                   python_crun   crun run of a bundle whose process is python3 -c pass
 *                   cli_python    `hutch run -- python3 -c pass`
 *   group "split"   create, exec_first (connect + spawn /bin/true + EXIT in the
 *                   fresh sandbox), destroy: one sandbox per sample
 *   group "exec"    exec          spawn /bin/true + EXIT on a kept connection
 *                                 to a sandbox that lives for the whole round
 *   group "net"     create_lo     create (loopback only) + connect + spawn
 *                                 /bin/true + EXIT; destroy untimed
 *                   create_nat    the same with internet access (veth,
 *                                 addresses, route; no nftables work)
 *                   create_rules  internet access with allowOut 198.51.100.0/24
 *                                 and denyOut 0.0.0.0/0 (one nftables batch)
 *                   destroy_lo, destroy_nat, destroy_rules  their destroys
 *                   (only with HUTCH_NET=nat; not in the default groups)
 *
 * The members of a group alternate within each iteration (A B C, then B C A,
 * ...), so slow drift of a noisy host hits every member alike. Every round
 * runs every group; the report gives median, p90, p99, min and max over all
 * samples and each round's median.
 *
 * Not a test: it prints numbers and exits non-zero only when something failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/initproto.h"
#include "runtime/initclient.h"
#include "runtime/sandbox.h"
#include "util/fileutil.h"

extern char **environ;

#define INIT_TIMEOUT_MS 10000
#define MAX_ARGV 48

/* ---- statistics ----------------------------------------------------------- */

struct series {
	double *v;
	size_t n, cap;
	size_t round_start; /* index of the current round's first sample */
	double *round_median;
	size_t nrounds;
};

struct stats {
	size_t n;
	double median, p90, p99, min, max, mean;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Linear interpolation between the closest ranks of sorted[0..n) (the
 * "type 7" estimator of R and numpy); p in [0, 1]. */
static double percentile(const double *sorted, size_t n, double p)
{
	if (n == 0)
		return 0;
	double pos = p * (double)(n - 1);
	size_t lo = (size_t)pos;
	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + (pos - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

static int stats_compute(const double *v, size_t n, struct stats *st, hu_err *err)
{
	memset(st, 0, sizeof(*st));
	if (n == 0)
		return 0;
	double *s = malloc(n * sizeof(*s));
	if (!s)
		return hu_err_set(err, ENOMEM, "stats of %zu samples", n);
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += s[i];
	st->n = n;
	st->median = percentile(s, n, 0.50);
	st->p90 = percentile(s, n, 0.90);
	st->p99 = percentile(s, n, 0.99);
	st->min = s[0];
	st->max = s[n - 1];
	st->mean = sum / (double)n;
	free(s);
	return 0;
}

static int series_add(struct series *s, double ms, hu_err *err)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		double *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return hu_err_set(err, ENOMEM, "samples");
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = ms;
	return 0;
}

/* Close the current round: remember the median of its samples. */
static int series_end_round(struct series *s, hu_err *err)
{
	struct stats st;
	double *m = realloc(s->round_median, (s->nrounds + 1) * sizeof(*m));

	if (!m)
		return hu_err_set(err, ENOMEM, "round medians");
	s->round_median = m;
	if (stats_compute(s->v + s->round_start, s->n - s->round_start, &st, err) < 0)
		return -1;
	s->round_median[s->nrounds++] = st.median;
	s->round_start = s->n;
	return 0;
}

static void series_free(struct series *s)
{
	free(s->v);
	free(s->round_median);
}

static double elapsed_ms(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

static void now(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
}

/* ---- figures -------------------------------------------------------------- */

enum fig {
	F_LIFECYCLE, F_BWRAP_TRUE, F_CRUN_TRUE, F_HOST_TRUE, F_CLI_TRUE,
	F_PY_HUTCH, F_PY_HOST, F_PY_BWRAP, F_PY_CRUN, F_CLI_PY,
	F_CREATE, F_EXEC_FIRST, F_DESTROY,
	F_EXEC,
	F_NET_LO, F_NET_NAT, F_NET_RULES, F_NET_DESTROY_LO, F_NET_DESTROY_NAT, F_NET_DESTROY_RULES,
	F_COUNT
};

enum group { G_TRUE, G_PYTHON, G_SPLIT, G_EXEC, G_NET, G_COUNT };

static const char *const group_names[G_COUNT] = {"true", "python", "split", "exec", "net"};

struct bench;
typedef int (*sample_fn)(struct bench *b, enum fig f, double *ms, hu_err *err);

struct figure {
	const char *name;
	enum group group;
	sample_fn fn; /* NULL: filled by its group's own step (split) */
	const char *argv[MAX_ARGV];
	bool enabled;
	struct series s;
};

struct opts {
	unsigned rounds, iterations, warmup, alive;
	const char *json_path;
	const char *hutch, *bwrap, *crun, *python;
	bool groups[G_COUNT];
	bool cli, use_bwrap, use_crun;
};

struct bench {
	struct opts o;
	struct hu_runtime_config cfg;
	struct hu_runtime *rt;
	struct hu_sandbox *live; /* the sandbox of the sample under way, if any */
	struct hu_sandbox *warm; /* the sandbox of the exec group's round */
	struct hu_sandbox **idle; /* --alive: sandboxes kept for the whole run */
	unsigned n_idle;
	int warm_fd;
	uint32_t req;
	unsigned seq;
	unsigned rounds_done;
	char tmpdir[64]; /* a private data/run dir we made (removed at exit) */
	char crundir[64]; /* the OCI bundles and crun's state dir (removed at exit) */
	char crun_cgparent[128]; /* the crun containers' parent cgroup (removed at exit) */
	char crun_root[PATH_MAX], crun_bundle_true[PATH_MAX], crun_bundle_py[PATH_MAX];
	char crun_id_true[64], crun_id_py[64];
	struct figure fig[F_COUNT];
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* ---- running things on the host ------------------------------------------- */

/* "CMD ARGS... failed: exit code N" (code ECHILD, without its strerror text). */
static int command_failed(hu_err *err, const char *const *argv, const char *how, int n)
{
	char cmd[HU_ERR_MSG_MAX / 2] = "";
	size_t len = 0;

	for (size_t i = 0; argv[i] && len < sizeof(cmd); i++)
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, "%s%s", i ? " " : "", argv[i]);
	hu_err_set(err, 0, "`%s` failed: %s %d", cmd, how, n);
	err->code = ECHILD;
	return -1;
}

/* posix_spawn argv (stdin and stdout on /dev/null, stderr kept) and wait. */
static int host_run(const char *const *argv, hu_err *err)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return hu_err_set(err, rc, "spawn %s", argv[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return hu_err_sys(err, "wait for %s", argv[0]);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	return command_failed(err, argv, WIFSIGNALED(status) ? "signal" : "exit code",
			      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

static int sample_host(struct bench *b, enum fig f, double *ms, hu_err *err)
{
	struct timespec t0, t1;

	now(&t0);
	if (host_run(b->fig[f].argv, err) < 0)
		return -1;
	now(&t1);
	*ms = elapsed_ms(&t0, &t1);
	return 0;
}

/* ---- running things in a sandbox ------------------------------------------ */

static size_t argv_len(const char *const *argv)
{
	size_t n = 0;
	while (argv[n])
		n++;
	return n;
}

/* SPAWN argv on fd and read until its EXIT; the command must exit 0. */
static int init_exec(struct bench *b, int fd, const char *const *argv, hu_err *err)
{
	struct hu_spawn_req req = {.argv = argv, .argc = argv_len(argv)};
	struct hu_buf buf = {0};
	uint32_t id = ++b->req;

	int rc = hu_init_build_spawn(&buf, id, &req, err);
	if (rc == 0)
		rc = hu_init_send(fd, &buf, err);
	hu_buf_free(&buf);
	while (rc == 0) {
		struct hu_frame_hdr hdr;
		struct hu_init_event ev;
		uint8_t *payload = NULL;

		if (hu_init_recv(fd, &hdr, &payload, err) < 0)
			return -1;
		if (hdr.type == HU_MSG_ERROR)
			rc = hu_init_parse_error(payload, hdr.len, err);
		else if (hu_init_parse_event(&hdr, payload, &ev, err) < 0)
			rc = -1;
		else if (ev.type == HU_MSG_EXIT && ev.id == id) {
			free(payload);
			if (ev.signum || ev.exit_code)
				return command_failed(err, argv, ev.signum ? "signal" : "exit code",
						      ev.signum ? (int)ev.signum : ev.exit_code);
			return 0;
		}
		free(payload);
	}
	return -1;
}

/* Connect to the sandbox's init (with a receive timeout) and run argv. */
static int sandbox_exec(struct bench *b, struct hu_sandbox *sb, const char *const *argv, hu_err *err)
{
	int fd = -1;
	int rc = hu_init_connect(hu_sandbox_socket(sb), &fd, err);

	if (rc == 0)
		rc = hu_init_set_timeout(fd, INIT_TIMEOUT_MS, err);
	if (rc == 0)
		rc = init_exec(b, fd, argv, err);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* internet: 0 loopback only, 1 internet access, 2 internet access with
 * an allowlist */
static int bench_create_net(struct bench *b, struct hu_sandbox **out, int internet, hu_err *err)
{
	struct hu_sandbox_spec spec;

	hu_sandbox_spec_defaults(&spec);
	snprintf(spec.id, sizeof(spec.id), "bench-%d-%u", (int)getpid(), ++b->seq);
	spec.net.internet = internet > 0;
	if (internet == 2 && (hu_net_rules_add(&spec.net.rules, 'a', "198.51.100.0/24", err) < 0 ||
			      hu_net_rules_add(&spec.net.rules, 'd', "0.0.0.0/0", err) < 0))
		return -1;
	return hu_sandbox_create(b->rt, &spec, out, err);
}

static int bench_create(struct bench *b, struct hu_sandbox **out, hu_err *err)
{
	return bench_create_net(b, out, 0, err);
}

/* Destroy *sb (NULL afterwards: destroy frees it even when it fails). */
static int bench_destroy(struct hu_sandbox **sb, hu_err *err)
{
	struct hu_sandbox *s = *sb;

	*sb = NULL;
	return s ? hu_sandbox_destroy(s, err) : 0;
}

static int bench_destroy(struct hu_sandbox **sb, hu_err *err);

/* create (with or without internet) + connect + spawn + EXIT, timed; the
 * destroy is recorded in the matching destroy figure. */
static int sample_net(struct bench *b, enum fig f, double *ms, hu_err *err)
{
	struct timespec t0, t1, t2;
	int kind = f == F_NET_NAT ? 1 : f == F_NET_RULES ? 2 : 0;
	static const enum fig destroy_of[] = {F_NET_DESTROY_LO, F_NET_DESTROY_NAT, F_NET_DESTROY_RULES};

	now(&t0);
	if (bench_create_net(b, &b->live, kind, err) < 0 || sandbox_exec(b, b->live, b->fig[f].argv, err) < 0)
		return -1;
	now(&t1);
	if (bench_destroy(&b->live, err) < 0)
		return -1;
	now(&t2);
	*ms = elapsed_ms(&t0, &t1);
	return series_add(&b->fig[destroy_of[kind]].s, elapsed_ms(&t1, &t2), err);
}

/* create + connect + spawn + EXIT + destroy, all in this process. */
static int sample_lifecycle(struct bench *b, enum fig f, double *ms, hu_err *err)
{
	struct timespec t0, t1;

	now(&t0);
	if (bench_create(b, &b->live, err) < 0 || sandbox_exec(b, b->live, b->fig[f].argv, err) < 0 ||
	    bench_destroy(&b->live, err) < 0)
		return -1;
	now(&t1);
	*ms = elapsed_ms(&t0, &t1);
	return 0;
}

/* One sandbox, three samples: create, first exec (with connect), destroy. */
static int step_split(struct bench *b, hu_err *err)
{
	struct timespec t[4];

	now(&t[0]);
	if (bench_create(b, &b->live, err) < 0)
		return -1;
	now(&t[1]);
	if (sandbox_exec(b, b->live, b->fig[F_EXEC_FIRST].argv, err) < 0)
		return -1;
	now(&t[2]);
	if (bench_destroy(&b->live, err) < 0)
		return -1;
	now(&t[3]);
	if (series_add(&b->fig[F_CREATE].s, elapsed_ms(&t[0], &t[1]), err) < 0 ||
	    series_add(&b->fig[F_EXEC_FIRST].s, elapsed_ms(&t[1], &t[2]), err) < 0 ||
	    series_add(&b->fig[F_DESTROY].s, elapsed_ms(&t[2], &t[3]), err) < 0)
		return -1;
	return 0;
}

/* SPAWN + EXIT on the connection kept to the round's sandbox. */
static int sample_exec(struct bench *b, enum fig f, double *ms, hu_err *err)
{
	struct timespec t0, t1;

	now(&t0);
	if (init_exec(b, b->warm_fd, b->fig[f].argv, err) < 0)
		return -1;
	now(&t1);
	*ms = elapsed_ms(&t0, &t1);
	return 0;
}

static int warm_open(struct bench *b, hu_err *err)
{
	if (bench_create(b, &b->warm, err) < 0 || hu_init_connect(hu_sandbox_socket(b->warm), &b->warm_fd, err) < 0)
		return -1;
	return hu_init_set_timeout(b->warm_fd, INIT_TIMEOUT_MS, err);
}

static int warm_close(struct bench *b, hu_err *err)
{
	if (b->warm_fd >= 0)
		close(b->warm_fd);
	b->warm_fd = -1;
	return bench_destroy(&b->warm, err);
}

/* ---- the crun baseline: OCI bundles prepared once -------------------------- */

/* crun 1.8 refuses any container on a hybrid cgroup host whose cgroup2 mount
 * offers a controller ("cgroups in hybrid mode not supported", even with
 * --cgroup-manager=disabled); this guest's offers hugetlb, which neither hutch
 * nor the bundles use. So the benchmark enters a mount namespace of its own
 * (a slave of the host's: nothing mounted here leaks back) and covers that
 * file with an empty one there; crun then keeps its limits in the v1
 * hierarchies, as hutch does. The host is untouched. */
static int crun_hide_v2_controllers(const char *dir, hu_err *err)
{
	const char *ctl = "/sys/fs/cgroup/unified/cgroup.controllers";
	char buf[256], empty[PATH_MAX];
	hu_err ignored;

	if (hu_read_file(ctl, buf, sizeof(buf), &ignored) <= 0)
		return 0; /* not hybrid, or no controller there: nothing to hide */
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	if (hu_write_file(empty, "", 0, O_CREAT | O_TRUNC, 0644, err) < 0)
		return -1;
	if (unshare(CLONE_NEWNS) < 0)
		return hu_err_sys(err, "unshare(CLONE_NEWNS) for crun");
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return hu_err_sys(err, "make / a slave for crun");
	if (mount(empty, ctl, NULL, MS_BIND, NULL) < 0)
		return hu_err_sys(err, "cover %s for crun", ctl);
	fprintf(stderr, "crun: %s lists controllers (hybrid host); covered with an empty file in the benchmark's "
			"own mount namespace\n", ctl);
	return 0;
}

/* A bundle doing what hutch's sandbox does as far as an OCI runtime can:
 * user (container root = an unprivileged host range), pid, ipc, uts, mount,
 * network (loopback only) and cgroup namespaces; the host's /usr read-only
 * over an otherwise empty read-only root; /proc, a /dev, tmpfs /tmp and
 * /home; no capabilities, no_new_privs; memory and pids limits (hutch's
 * defaults: 512 MiB, 512 pids) in a cgroup of its own. No seccomp filter
 * (bwrap has none either); hutch's is a ready BPF program, ~0.4 ms to load. */
static int crun_bundle(const char *dir, const char *rootfs, const char *cgpath, const char *const *cmd, hu_err *err)
{
	json_t *args = json_array(), *ns = json_array();
	const char *const types[] = {"user", "pid", "ipc", "uts", "mount", "network", "cgroup"};
	char path[PATH_MAX];

	for (size_t i = 0; cmd[i]; i++)
		json_array_append_new(args, json_string(cmd[i]));
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		json_array_append_new(ns, json_pack("{s:s}", "type", types[i]));
	json_t *cfg = json_pack(
		"{s:s, s:{s:b, s:{s:i, s:i}, s:o, s:[s], s:s, s:{s:[], s:[], s:[]}, s:b}, s:{s:s, s:b}, s:s,"
		" s:[{s:s, s:s, s:s}, {s:s, s:s, s:s, s:[s, s, s]}, {s:s, s:s, s:s, s:[s, s, s, s]},"
		"    {s:s, s:s, s:s, s:[s, s]}, {s:s, s:s, s:s, s:[s, s]}],"
		" s:{s:o, s:[{s:i, s:i, s:i}], s:[{s:i, s:i, s:i}], s:{s:{s:I}, s:{s:I}}, s:s}}",
		"ociVersion", "1.0.0",
		"process", "terminal", 0, "user", "uid", 0, "gid", 0, "args", args, "env",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "cwd", "/", "capabilities",
		"bounding", "effective", "permitted", "noNewPrivileges", 1,
		"root", "path", rootfs, "readonly", 1,
		"hostname", "sandbox",
		"mounts",
		"destination", "/proc", "type", "proc", "source", "proc",
		"destination", "/dev", "type", "tmpfs", "source", "tmpfs", "options", "nosuid", "mode=755", "size=65536k",
		"destination", "/usr", "type", "bind", "source", "/usr", "options", "rbind", "ro", "nosuid", "nodev",
		"destination", "/tmp", "type", "tmpfs", "source", "tmpfs", "options", "nosuid", "nodev",
		"destination", "/home", "type", "tmpfs", "source", "tmpfs", "options", "nosuid", "nodev",
		"linux", "namespaces", ns, "uidMappings", "containerID", 0, "hostID", 1600000, "size", 65536,
		"gidMappings", "containerID", 0, "hostID", 1600000, "size", 65536, "resources", "memory", "limit",
		(json_int_t)512 << 20, "pids", "limit", (json_int_t)512, "cgroupsPath", cgpath);
	if (!cfg)
		return hu_err_set(err, EINVAL, "crun config.json");
	int rc = hu_mkdir_p(dir, 0755, err);
	snprintf(path, sizeof(path), "%s/config.json", dir);
	if (rc == 0 && json_dump_file(cfg, path, JSON_INDENT(1)) < 0)
		rc = hu_err_set(err, EIO, "write %s", path);
	json_decref(cfg);
	return rc;
}

/* Two bundles (/bin/true, python) over one root: mount points and the
 * usrmerge symlinks only; everything runs from the bind-mounted /usr. */
static int setup_crun(struct bench *b, hu_err *err)
{
	const char *const bin_true[] = {"/bin/true", NULL};
	const char *const py[] = {b->o.python, "-c", "pass", NULL};
	const char *const dirs[] = {"usr", "proc", "dev", "tmp", "home"};
	const char *const links[][2] = {{"usr/bin", "bin"}, {"usr/lib", "lib"}, {"usr/lib64", "lib64"}, {"usr/sbin", "sbin"}};
	char rootfs[PATH_MAX], p[PATH_MAX], cg[PATH_MAX];

	snprintf(b->crundir, sizeof(b->crundir), "/tmp/hutch-bench-crun.XXXXXX");
	if (!mkdtemp(b->crundir)) {
		b->crundir[0] = '\0';
		return hu_err_sys(err, "mkdtemp");
	}
	chmod(b->crundir, 0755); /* the container's root (an unprivileged host uid) walks through it */
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", b->crundir);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", rootfs, dirs[i]);
		if (hu_mkdir_p(p, 0755, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", rootfs, links[i][1]);
		if (symlink(links[i][0], p) < 0)
			return hu_err_sys(err, "symlink %s", p);
	}
	snprintf(b->crun_cgparent, sizeof(b->crun_cgparent), "%s-crun", b->cfg.cgroup_parent);
	snprintf(b->crun_root, sizeof(b->crun_root), "%s/state", b->crundir);
	snprintf(b->crun_bundle_true, sizeof(b->crun_bundle_true), "%s/true", b->crundir);
	snprintf(b->crun_bundle_py, sizeof(b->crun_bundle_py), "%s/python", b->crundir);
	/* `crun run` deletes its container when the process exits: the ids
	 * (and cgroups) are reused by the next sample */
	snprintf(b->crun_id_true, sizeof(b->crun_id_true), "bench-true-%d", (int)getpid());
	snprintf(b->crun_id_py, sizeof(b->crun_id_py), "bench-python-%d", (int)getpid());
	snprintf(cg, sizeof(cg), "/%s/%s", b->crun_cgparent, b->crun_id_true);
	if (crun_bundle(b->crun_bundle_true, rootfs, cg, bin_true, err) < 0)
		return -1;
	snprintf(cg, sizeof(cg), "/%s/%s", b->crun_cgparent, b->crun_id_py);
	if (crun_bundle(b->crun_bundle_py, rootfs, cg, py, err) < 0)
		return -1;
	return crun_hide_v2_controllers(b->crundir, err);
}

/* The crun containers' parent cgroup in every hierarchy (crun removes the
 * containers' own groups, not the parent it was given). */
static void remove_crun_cgroups(const struct bench *b)
{
	DIR *d = opendir("/sys/fs/cgroup");
	struct dirent *e;
	char p[PATH_MAX];

	if (!b->crun_cgparent[0] || !d)
		goto out;
	snprintf(p, sizeof(p), "/sys/fs/cgroup/%s", b->crun_cgparent);
	rmdir(p); /* a unified (v2-only) host */
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && snprintf(p, sizeof(p), "/sys/fs/cgroup/%s/%s", e->d_name, b->crun_cgparent) <
						   (int)sizeof(p))
			rmdir(p);
out:
	if (d)
		closedir(d);
}

/* ---- figure table --------------------------------------------------------- */

static const char *const bwrap_opts[] = {
	"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup",
	"--die-with-parent", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib",
	"/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin", "--proc", "/proc", "--dev",
	"/dev", "--tmpfs", "/tmp", "--tmpfs", "/home", NULL,
};

/* argv = prefix... cmd... (both NULL-terminated). */
static void argv_join(const char **argv, const char *const *prefix, const char *const *cmd)
{
	size_t n = 0;
	for (size_t i = 0; prefix && prefix[i] && n < MAX_ARGV - 1; i++)
		argv[n++] = prefix[i];
	for (size_t i = 0; cmd[i] && n < MAX_ARGV - 1; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
}

static void define(struct bench *b, enum fig f, const char *name, enum group g, sample_fn fn,
		   const char *const *prefix, const char *const *cmd)
{
	struct figure *x = &b->fig[f];
	x->name = name;
	x->group = g;
	x->fn = fn;
	argv_join(x->argv, prefix, cmd);
	x->enabled = b->o.groups[g];
}

static void define_figures(struct bench *b)
{
	const struct opts *o = &b->o;
	const char *const bin_true[] = {"/bin/true", NULL};
	const char *const cli_true[] = {"true", NULL};
	const char *const py[] = {o->python, "-c", "pass", NULL};
	const char *const bwrap[] = {o->bwrap, NULL};
	const char *const cli[] = {o->hutch, "run", "--", NULL};
	const char *const crun_true[] = {o->crun, "--root", b->crun_root, "run", "--bundle", b->crun_bundle_true,
					 b->crun_id_true, NULL};
	const char *const crun_py[] = {o->crun, "--root", b->crun_root, "run", "--bundle", b->crun_bundle_py,
				       b->crun_id_py, NULL};
	const char *bwrap_prefix[MAX_ARGV];

	argv_join(bwrap_prefix, bwrap, bwrap_opts);
	define(b, F_LIFECYCLE, "lifecycle", G_TRUE, sample_lifecycle, NULL, bin_true);
	define(b, F_BWRAP_TRUE, "bwrap_true", G_TRUE, sample_host, bwrap_prefix, bin_true);
	define(b, F_CRUN_TRUE, "crun_true", G_TRUE, sample_host, NULL, crun_true);
	define(b, F_HOST_TRUE, "host_true", G_TRUE, sample_host, NULL, bin_true);
	define(b, F_CLI_TRUE, "cli_true", G_TRUE, sample_host, cli, cli_true);
	define(b, F_PY_HUTCH, "python_hutch", G_PYTHON, sample_lifecycle, NULL, py);
	define(b, F_PY_HOST, "python_host", G_PYTHON, sample_host, NULL, py);
	define(b, F_PY_BWRAP, "python_bwrap", G_PYTHON, sample_host, bwrap_prefix, py);
	define(b, F_PY_CRUN, "python_crun", G_PYTHON, sample_host, NULL, crun_py);
	define(b, F_CLI_PY, "cli_python", G_PYTHON, sample_host, cli, py);
	define(b, F_CREATE, "create", G_SPLIT, NULL, NULL, bin_true);
	define(b, F_EXEC_FIRST, "exec_first", G_SPLIT, NULL, NULL, bin_true);
	define(b, F_DESTROY, "destroy", G_SPLIT, NULL, NULL, bin_true);
	define(b, F_EXEC, "exec", G_EXEC, sample_exec, NULL, bin_true);
	define(b, F_NET_LO, "create_lo", G_NET, sample_net, NULL, bin_true);
	define(b, F_NET_NAT, "create_nat", G_NET, sample_net, NULL, bin_true);
	define(b, F_NET_RULES, "create_rules", G_NET, sample_net, NULL, bin_true);
	/* filled by sample_net: not rotating members of their own */
	define(b, F_NET_DESTROY_LO, "destroy_lo", G_NET, NULL, NULL, bin_true);
	define(b, F_NET_DESTROY_NAT, "destroy_nat", G_NET, NULL, NULL, bin_true);
	define(b, F_NET_DESTROY_RULES, "destroy_rules", G_NET, NULL, NULL, bin_true);
	if (!o->cli)
		b->fig[F_CLI_TRUE].enabled = b->fig[F_CLI_PY].enabled = false;
	if (!o->use_bwrap)
		b->fig[F_BWRAP_TRUE].enabled = b->fig[F_PY_BWRAP].enabled = false;
	if (!o->use_crun)
		b->fig[F_CRUN_TRUE].enabled = b->fig[F_PY_CRUN].enabled = false;
}

/* ---- the rounds ----------------------------------------------------------- */

static int check_interrupt(hu_err *err)
{
	return interrupted ? hu_err_set(err, EINTR, "interrupted") : 0;
}

/* One iteration of a rotating group: every enabled member once, starting at
 * member (iter mod n). `record` false = warm-up. */
static int step_rotating(struct bench *b, enum group g, unsigned iter, bool record, hu_err *err)
{
	enum fig members[F_COUNT];
	size_t n = 0;

	for (int f = 0; f < F_COUNT; f++)
		if (b->fig[f].group == g && b->fig[f].enabled && b->fig[f].fn)
			members[n++] = (enum fig)f;
	for (size_t k = 0; k < n; k++) {
		enum fig f = members[(iter + k) % n];
		double ms;
		if (check_interrupt(err) < 0 || b->fig[f].fn(b, f, &ms, err) < 0) {
			hu_err_prefix(err, "%s", b->fig[f].name);
			return -1;
		}
		if (record && series_add(&b->fig[f].s, ms, err) < 0)
			return -1;
	}
	return 0;
}

static int run_group(struct bench *b, enum group g, unsigned iterations, bool record, hu_err *err)
{
	int rc = 0;

	if (g == G_EXEC && warm_open(b, err) < 0)
		return -1;
	for (unsigned i = 0; i < iterations && rc == 0; i++) {
		if (g == G_SPLIT) {
			rc = check_interrupt(err);
			if (rc == 0 && (rc = step_split(b, err)) < 0)
				hu_err_prefix(err, "split");
			if (rc == 0 && !record) /* the warm-up leaves no samples */
				for (int f = F_CREATE; f <= F_DESTROY; f++)
					b->fig[f].s.n = b->fig[f].s.round_start;
		} else {
			rc = step_rotating(b, g, i, record, err);
			if (rc == 0 && g == G_NET && !record) /* sample_net records destroys itself */
				for (int f = F_NET_DESTROY_LO; f <= F_NET_DESTROY_RULES; f++)
					b->fig[f].s.n = b->fig[f].s.round_start;
		}
	}
	if (g == G_EXEC) {
		hu_err e2 = {0};
		if (warm_close(b, rc < 0 ? &e2 : err) < 0)
			rc = -1;
	}
	return rc;
}

static int run_rounds(struct bench *b, hu_err *err)
{
	for (int g = 0; g < G_COUNT; g++)
		if (b->o.groups[g] && b->o.warmup && run_group(b, (enum group)g, b->o.warmup, false, err) < 0)
			return -1;
	for (unsigned r = 0; r < b->o.rounds; r++) {
		struct timespec t0, t1;
		now(&t0);
		for (int g = 0; g < G_COUNT; g++)
			if (b->o.groups[g] && run_group(b, (enum group)g, b->o.iterations, true, err) < 0)
				return -1;
		for (int f = 0; f < F_COUNT; f++)
			if (b->fig[f].enabled && series_end_round(&b->fig[f].s, err) < 0)
				return -1;
		b->rounds_done++;
		now(&t1);
		fprintf(stderr, "round %u/%u done in %.1f s\n", r + 1, b->o.rounds, elapsed_ms(&t0, &t1) / 1e3);
	}
	return 0;
}

/* ---- reporting ------------------------------------------------------------ */

struct ratio {
	const char *name;
	enum fig num, den;
};

static const struct ratio ratios[] = {
	{"lifecycle / bwrap_true", F_LIFECYCLE, F_BWRAP_TRUE},
	{"lifecycle / crun_true", F_LIFECYCLE, F_CRUN_TRUE},
	{"crun_true / bwrap_true", F_CRUN_TRUE, F_BWRAP_TRUE},
	{"cli_true / bwrap_true", F_CLI_TRUE, F_BWRAP_TRUE},
	{"cli_true / crun_true", F_CLI_TRUE, F_CRUN_TRUE},
	{"python_hutch / python_host", F_PY_HUTCH, F_PY_HOST},
	{"python_hutch / python_bwrap", F_PY_HUTCH, F_PY_BWRAP},
	{"python_hutch / python_crun", F_PY_HUTCH, F_PY_CRUN},
	{"python_crun / python_host", F_PY_CRUN, F_PY_HOST},
	{"cli_python / python_bwrap", F_CLI_PY, F_PY_BWRAP},
	{"cli_python / python_crun", F_CLI_PY, F_PY_CRUN},
	{"cli_python / python_host", F_CLI_PY, F_PY_HOST},
	{"python_bwrap / python_host", F_PY_BWRAP, F_PY_HOST},
	{"create_nat / create_lo", F_NET_NAT, F_NET_LO},
	{"create_rules / create_lo", F_NET_RULES, F_NET_LO},
	{"destroy_nat / destroy_lo", F_NET_DESTROY_NAT, F_NET_DESTROY_LO},
	{"destroy_rules / destroy_lo", F_NET_DESTROY_RULES, F_NET_DESTROY_LO},
};

static bool ratio_usable(const struct bench *b, const struct ratio *r)
{
	return b->fig[r->num].enabled && b->fig[r->den].enabled && b->fig[r->num].s.n && b->fig[r->den].s.n;
}

static void print_command(const struct figure *x)
{
	if (x->fn == sample_host) {
		printf("  %-13s", x->name);
		for (size_t i = 0; x->argv[i]; i++)
			printf(" %s", x->argv[i]);
		printf("\n");
	}
}

static int print_report(const struct bench *b, hu_err *err)
{
	printf("\n%-13s %6s %8s %8s %8s %8s %8s   %s\n", "figure (ms)", "n", "median", "p90", "p99", "min", "max",
	       "round medians");
	for (int f = 0; f < F_COUNT; f++) {
		const struct figure *x = &b->fig[f];
		struct stats st;
		if (!x->enabled || stats_compute(x->s.v, x->s.n, &st, err) < 0)
			continue;
		printf("%-13s %6zu %8.2f %8.2f %8.2f %8.2f %8.2f  ", x->name, st.n, st.median, st.p90, st.p99, st.min,
		       st.max);
		for (size_t r = 0; r < x->s.nrounds; r++)
			printf(" %.2f", x->s.round_median[r]);
		printf("\n");
	}
	if (err->code)
		return -1;
	bool header = false;
	for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]); i++) {
		const struct ratio *r = &ratios[i];
		struct stats a, c;
		if (ratio_usable(b, r) && !header) {
			printf("\n%-28s %8s %8s   %s\n", "ratio", "median", "p99", "per-round median ratios");
			header = true;
		}
		if (!ratio_usable(b, r) || stats_compute(b->fig[r->num].s.v, b->fig[r->num].s.n, &a, err) < 0 ||
		    stats_compute(b->fig[r->den].s.v, b->fig[r->den].s.n, &c, err) < 0)
			continue;
		printf("%-28s %7.2fx %7.2fx  ", r->name, a.median / c.median, a.p99 / c.p99);
		for (size_t k = 0; k < b->fig[r->num].s.nrounds; k++)
			printf(" %.2f", b->fig[r->num].s.round_median[k] / b->fig[r->den].s.round_median[k]);
		printf("\n");
	}
	header = false;
	for (int f = 0; f < F_COUNT; f++) {
		if (b->fig[f].enabled && b->fig[f].fn == sample_host && !header) {
			printf("\nhost commands (fork/exec + waitpid):\n");
			header = true;
		}
		if (b->fig[f].enabled)
			print_command(&b->fig[f]);
	}
	return err->code ? -1 : 0;
}

static json_t *json_doubles(const double *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_real(v[i]));
	return a;
}

static json_t *json_meta(const struct bench *b)
{
	struct utsname u;
	char date[64];
	time_t t = time(NULL);
	struct tm tm;

	uname(&u);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	json_t *m = json_pack("{s:s, s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:I, s:s, s:s, s:s}", "date", date, "kernel",
			 u.release, "machine", u.machine, "cpus", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN), "cgroup_mode",
			 hu_cgroup_mode_name(hu_runtime_cgroup_env(b->rt)->mode), "rounds", (json_int_t)b->o.rounds,
			 "rounds_done", (json_int_t)b->rounds_done, "iterations", (json_int_t)b->o.iterations, "warmup", (json_int_t)b->o.warmup, "python",
			 b->o.python, "bwrap", b->o.bwrap, "hutch", b->o.hutch);
	json_object_set_new(m, "crun", json_string(b->o.use_crun ? b->o.crun : "(skipped)"));
	return m;
}

static json_t *json_figure(const struct figure *x, const struct stats *st)
{
	json_t *argv = json_array();
	for (size_t i = 0; x->argv[i]; i++)
		json_array_append_new(argv, json_string(x->argv[i]));
	return json_pack("{s:s, s:s, s:o, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:o, s:o}", "group", group_names[x->group],
			 "mode", x->fn == sample_host ? "fork/exec" : "in-process", "argv", argv, "n",
			 (json_int_t)st->n, "median_ms", st->median, "p90_ms", st->p90, "p99_ms", st->p99, "min_ms",
			 st->min, "max_ms", st->max, "mean_ms", st->mean, "round_medians_ms",
			 json_doubles(x->s.round_median, x->s.nrounds), "samples_ms", json_doubles(x->s.v, x->s.n));
}

static int write_json(const struct bench *b, const char *path, hu_err *err)
{
	json_t *root = json_object(), *figs = json_object(), *rats = json_object();
	int rc = 0;

	json_object_set_new(root, "meta", json_meta(b));
	for (int f = 0; f < F_COUNT && rc == 0; f++) {
		struct stats st;
		if (!b->fig[f].enabled)
			continue;
		if ((rc = stats_compute(b->fig[f].s.v, b->fig[f].s.n, &st, err)) == 0)
			json_object_set_new(figs, b->fig[f].name, json_figure(&b->fig[f], &st));
	}
	for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]) && rc == 0; i++) {
		const struct ratio *r = &ratios[i];
		struct stats a, c;
		if (!ratio_usable(b, r))
			continue;
		if ((rc = stats_compute(b->fig[r->num].s.v, b->fig[r->num].s.n, &a, err)) < 0 ||
		    (rc = stats_compute(b->fig[r->den].s.v, b->fig[r->den].s.n, &c, err)) < 0)
			break;
		json_object_set_new(rats, r->name, json_pack("{s:f, s:f}", "median", a.median / c.median, "p99",
								 a.p99 / c.p99));
	}
	json_object_set_new(root, "figures", figs);
	json_object_set_new(root, "ratios", rats);
	if (rc == 0 && json_dump_file(root, path, JSON_INDENT(2) | JSON_SORT_KEYS) < 0)
		rc = hu_err_set(err, EIO, "write %s", path);
	json_decref(root);
	return rc;
}

/* ---- setup and teardown --------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: sandbox_bench [options]\n\n"
		   "  --rounds N       rounds (default 5)\n"
		   "  --iterations N   samples per figure per round (default 200)\n"
		   "  --warmup N       unrecorded iterations per group first (default 5)\n"
		   "  --only LIST      groups to run, comma separated: true,python,split,exec,net\n"
		   "                   (default all but net, which needs HUTCH_NET=nat)\n"
		   "  --no-cli         skip the `hutch run` fork/exec figures\n"
		   "  --no-bwrap       skip the bubblewrap figures (skipped anyway when bwrap is missing)\n"
		   "  --no-crun        skip the crun figures (skipped anyway when crun is missing)\n"
		   "  --hutch PATH     the hutch binary for the cli figures (default build/hutch)\n"
		   "  --bwrap PATH     bubblewrap (default /usr/bin/bwrap)\n"
		   "  --crun PATH      crun (default /usr/bin/crun)\n"
		   "  --python PATH    python (default /usr/bin/python3)\n"
		   "  --json FILE      also write every figure and sample as JSON\n"
		   "  --alive N        keep N idle sandboxes alive during the run (what create costs\n"
		   "                   with N others alive)\n\n"
		   "HUTCH_DATA_DIR, HUTCH_RUN_DIR, HUTCH_CGROUP_PARENT and HUTCH_INIT choose the runtime's\n"
		   "directories, cgroup parent and init; without the two dirs a private temporary dir is\n"
		   "used and removed; the cgroup parent defaults to hutch-bench.\n");
}

static int parse_uint(const char *s, unsigned *out, hu_err *err)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > 1000000)
		return hu_err_set(err, EINVAL, "not a count: '%s'", s);
	*out = (unsigned)v;
	return 0;
}

static int parse_groups(char *list, bool groups[G_COUNT], hu_err *err)
{
	char *save = NULL;

	memset(groups, 0, G_COUNT * sizeof(groups[0]));
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int g = 0;
		while (g < G_COUNT && strcmp(group_names[g], t))
			g++;
		if (g == G_COUNT)
			return hu_err_set(err, EINVAL, "unknown group '%s' (true, python, split, exec, net)", t);
		groups[g] = true;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o, hu_err *err)
{
	static const struct option longopts[] = {
		{"rounds", required_argument, NULL, 'r'}, {"iterations", required_argument, NULL, 'i'},
		{"warmup", required_argument, NULL, 'w'}, {"only", required_argument, NULL, 'o'},
		{"no-cli", no_argument, NULL, 'C'},       {"no-bwrap", no_argument, NULL, 'B'},
		{"no-crun", no_argument, NULL, 'N'},      {"crun", required_argument, NULL, 'c'},
		{"hutch", required_argument, NULL, 'H'},  {"bwrap", required_argument, NULL, 'b'},
		{"python", required_argument, NULL, 'p'}, {"json", required_argument, NULL, 'j'},
		{"alive", required_argument, NULL, 'a'},  {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, rc = 0;

	*o = (struct opts){.rounds = 5, .iterations = 200, .warmup = 5, .hutch = "build/hutch",
			   .bwrap = "/usr/bin/bwrap", .crun = "/usr/bin/crun", .python = "/usr/bin/python3", .cli = true,
			   .use_bwrap = true, .use_crun = true};
	for (int g = 0; g < G_COUNT; g++)
		o->groups[g] = g != G_NET;
	opterr = 0;
	while (rc == 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': rc = parse_uint(optarg, &o->rounds, err); break;
		case 'i': rc = parse_uint(optarg, &o->iterations, err); break;
		case 'w': rc = parse_uint(optarg, &o->warmup, err); break;
		case 'o': rc = parse_groups(optarg, o->groups, err); break;
		case 'C': o->cli = false; break;
		case 'B': o->use_bwrap = false; break;
		case 'N': o->use_crun = false; break;
		case 'c': o->crun = optarg; break;
		case 'H': o->hutch = optarg; break;
		case 'b': o->bwrap = optarg; break;
		case 'p': o->python = optarg; break;
		case 'j': o->json_path = optarg; break;
		case 'a': rc = parse_uint(optarg, &o->alive, err); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return hu_err_set(err, EINVAL, "bad option '%s'", argv[optind - 1]);
		}
	}
	if (rc == 0 && optind < argc)
		rc = hu_err_set(err, EINVAL, "unexpected argument '%s'", argv[optind]);
	if (rc == 0 && (o->rounds == 0 || o->iterations == 0))
		rc = hu_err_set(err, EINVAL, "--rounds and --iterations must be at least 1");
	return rc;
}

/* The runtime configuration: the environment, else a private temp dir and
 * the cgroup parent "hutch-bench" (never the production /run/hutch). */
static int setup_config(struct bench *b, hu_err *err)
{
	hu_runtime_config_defaults(&b->cfg);
	if (!getenv("HUTCH_CGROUP_PARENT"))
		snprintf(b->cfg.cgroup_parent, sizeof(b->cfg.cgroup_parent), "hutch-bench");
	if (getenv("HUTCH_DATA_DIR") && getenv("HUTCH_RUN_DIR"))
		return 0;
	snprintf(b->tmpdir, sizeof(b->tmpdir), "/tmp/hutch-bench.XXXXXX");
	if (!mkdtemp(b->tmpdir)) {
		b->tmpdir[0] = '\0';
		return hu_err_sys(err, "mkdtemp");
	}
	snprintf(b->cfg.data_dir, sizeof(b->cfg.data_dir), "%s/data", b->tmpdir);
	snprintf(b->cfg.run_dir, sizeof(b->cfg.run_dir), "%s/run", b->tmpdir);
	return 0;
}

/* The baselines are skipped, with a message, when their tool is missing;
 * python and the cli's hutch are needed. */
static int check_tools(struct bench *b, hu_err *err)
{
	if (b->o.use_bwrap && access(b->o.bwrap, X_OK) < 0) {
		fprintf(stderr, "sandbox_bench: %s: %s: skipping the bubblewrap figures (apt install bubblewrap)\n",
			b->o.bwrap, strerror(errno));
		b->o.use_bwrap = false;
	}
	if (b->o.use_crun && access(b->o.crun, X_OK) < 0) {
		fprintf(stderr, "sandbox_bench: %s: %s: skipping the crun figures (apt install crun)\n", b->o.crun,
			strerror(errno));
		b->o.use_crun = false;
	}
	const char *tools[] = {b->o.python, b->o.cli ? b->o.hutch : NULL};
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (tools[i] && access(tools[i], X_OK) < 0)
			return hu_err_sys(err, "%s (see --no-cli, --no-bwrap, --hutch, --bwrap, --python)", tools[i]);
	return 0;
}

static int setup(struct bench *b, int argc, char **argv, hu_err *err)
{
	struct sigaction sa = {.sa_handler = on_signal};

	b->warm_fd = -1;
	if (parse_args(argc, argv, &b->o, err) < 0 || check_tools(b, err) < 0 || setup_config(b, err) < 0)
		return -1;
	bool crun_wanted = b->o.groups[G_TRUE] || b->o.groups[G_PYTHON];
	if (b->o.use_crun && crun_wanted && setup_crun(b, err) < 0)
		return -1;
	define_figures(b);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* the cli figures run `hutch run`, which reads these */
	setenv("HUTCH_DATA_DIR", b->cfg.data_dir, 1);
	setenv("HUTCH_RUN_DIR", b->cfg.run_dir, 1);
	setenv("HUTCH_CGROUP_PARENT", b->cfg.cgroup_parent, 1);
	if (b->cfg.init_path[0])
		setenv("HUTCH_INIT", b->cfg.init_path, 1);
	if (hu_runtime_open(&b->cfg, &b->rt, err) < 0 || hu_template_ensure_base(b->rt, err) < 0)
		return -1;
	fprintf(stderr, "runtime: data %s, run %s, cgroup parent %s (%s)\n", b->cfg.data_dir, b->cfg.run_dir,
		b->cfg.cgroup_parent, hu_cgroup_mode_name(hu_runtime_cgroup_env(b->rt)->mode));
	if (b->o.alive && !(b->idle = calloc(b->o.alive, sizeof(*b->idle))))
		return hu_err_set(err, ENOMEM, "idle sandboxes");
	for (; b->n_idle < b->o.alive; b->n_idle++)
		if (check_interrupt(err) < 0 || bench_create(b, &b->idle[b->n_idle], err) < 0) {
			hu_err_prefix(err, "idle sandbox %u of %u", b->n_idle + 1, b->o.alive);
			return -1;
		}
	if (b->o.alive)
		fprintf(stderr, "%u idle sandboxes alive\n", b->n_idle);
	return 0;
}

/* Remove the (empty) parent groups we made, unless it is the production one. */
static void remove_cgroup_parents(const struct bench *b)
{
	const struct hu_cgroup_env *e = hu_runtime_cgroup_env(b->rt);
	const char *roots[] = {e->v2_root, e->v1_memory, e->v1_pids, e->v1_cpu, e->v1_cpuacct, e->v1_freezer};
	char p[PATH_MAX];

	if (!strcmp(b->cfg.cgroup_parent, "hutch"))
		return;
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (roots[i][0] && snprintf(p, sizeof(p), "%s/%s", roots[i], b->cfg.cgroup_parent) < (int)sizeof(p))
			rmdir(p); /* fails harmlessly if busy, shared or already gone */
}

/* Every sandbox still alive is destroyed, also after a failure. */
static int teardown(struct bench *b)
{
	hu_err err = {0};
	int rc = 0;

	/* both, even when the first fails */
	if (bench_destroy(&b->live, &err) < 0) {
		fprintf(stderr, "sandbox_bench: cleanup: %s\n", err.msg);
		rc = -1;
	}
	if (warm_close(b, &err) < 0) {
		fprintf(stderr, "sandbox_bench: cleanup: %s\n", err.msg);
		rc = -1;
	}
	for (unsigned i = 0; i < b->n_idle; i++)
		if (bench_destroy(&b->idle[i], &err) < 0) {
			fprintf(stderr, "sandbox_bench: cleanup: %s\n", err.msg);
			rc = -1;
		}
	free(b->idle);
	if (b->rt) {
		remove_cgroup_parents(b);
		hu_runtime_close(b->rt);
	}
	remove_crun_cgroups(b);
	if (b->crundir[0] && hu_rm_rf(b->crundir, &err) < 0) {
		fprintf(stderr, "sandbox_bench: remove %s: %s\n", b->crundir, err.msg);
		rc = -1;
	}
	if (b->tmpdir[0] && hu_rm_rf(b->tmpdir, &err) < 0) {
		fprintf(stderr, "sandbox_bench: remove %s: %s\n", b->tmpdir, err.msg);
		rc = -1;
	}
	for (int f = 0; f < F_COUNT; f++)
		series_free(&b->fig[f].s);
	return rc;
}

/* After a failed round: drop its samples so that what is left are whole
 * rounds (still worth a report on a noisy host; the exit status stays 1). */
static void keep_complete_rounds(struct bench *b)
{
	for (int f = 0; f < F_COUNT; f++)
		b->fig[f].s.n = b->fig[f].s.round_start;
	printf("\nPARTIAL RESULTS: the run failed during round %u; %u complete round(s) follow\n",
	       b->rounds_done + 1, b->rounds_done);
}

static int report(const struct bench *b, hu_err *err)
{
	if (print_report(b, err) < 0 || (b->o.json_path && write_json(b, b->o.json_path, err) < 0))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static struct bench b;
	hu_err err = {0}, rerr = {0};
	int rc = setup(&b, argc, argv, &err);

	if (rc == 0 && (rc = run_rounds(&b, &err)) < 0 && b.rounds_done > 0)
		keep_complete_rounds(&b);
	if ((rc == 0 || b.rounds_done > 0) && report(&b, &rerr) < 0) {
		fprintf(stderr, "sandbox_bench: report: %s\n", rerr.msg);
		rc = -1;
	}
	if (err.code)
		fprintf(stderr, "sandbox_bench: %s\n", err.msg);
	if (teardown(&b) < 0)
		rc = -1;
	return rc < 0 ? 1 : 0;
}
