/*
 * hutch run [options] -- CMD ARGS...
 *
 * Runs one command in a fresh sandbox: creates it, starts the command through
 * hutch-init, streams stdout and stderr, forwards stdin and SIGINT/SIGTERM,
 * enforces the timeout (exit 124), destroys the sandbox, and exits with the
 * command's exit code (128+N when it died of signal N).
 */
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "cli/cli.h"
#include "daemon/core/datadir_lock.h"
#include "proto/initproto.h"
#include "runtime/initclient.h"
#include "runtime/sandbox.h"
#include "util/fileutil.h"
#include "util/hex.h"
#include "util/parse.h"

#define EXIT_TIMEOUT 124
#define EXIT_USAGE 2
#define EXIT_SANDBOX 125 /* hutch itself failed, as in `docker run` */
#define MAX_ENV 256

struct run_opts {
	struct hu_sandbox_spec spec;
	uint64_t timeout_ms;
	const char *user;
	const char *cwd;
	const char *env[MAX_ENV];
	size_t nenv;
	struct hu_mount_spec mounts[HU_MOUNTS_MAX];
	char **argv;
};

static void run_usage(FILE *f)
{
	fprintf(f, "usage: hutch run [options] -- CMD [ARGS...]\n\n"
		   "Runs CMD in a fresh sandbox, streams its output and exits with its exit code.\n\n"
		   "  --memory SIZE     memory limit, no swap (default 512M)\n"
		   "  --pids N          process limit (default 256)\n"
		   "  --cpus N          CPU limit, fractions allowed (default 1)\n"
		   "  --disk SIZE       size of the writable layer (default 1G)\n"
		   "  --io-weight N     share of a disk's time against other sandboxes, 1..10000\n"
		   "                    (default HUTCH_IO_WEIGHT, else 100)\n"
		   "  --io-bps SIZE     read and write cap each, per disk, a second (50M; default\n"
		   "                    HUTCH_IO_BPS, else none; only tighter than it)\n"
		   "  --io-iops N       read and write operations a second each, per disk (as --io-bps)\n"
		   "  --timeout DUR     kill after DUR, exit 124 (examples: 30s, 5m; default none)\n"
		   "  --user root|user  who runs CMD (default user)\n"
		   "  --env KEY=VALUE   set an environment variable (repeatable)\n"
		   "  --cwd DIR         working directory (default the user's home)\n"
		   "  --template NAME   template to start from (default base)\n"
		   "  --volume HOSTDIR:PATH[:ro]  mount HOSTDIR at PATH, idmapped: sandbox uid N\n"
		   "                    is host uid N there (repeatable)\n"
		   "  --tmpfs PATH[:SIZE]  a fresh tmpfs at PATH (mode 1777, nosuid, nodev), at most\n"
		   "                    SIZE (default half of --memory), its pages charged to --memory;\n"
		   "                    not in the sandbox's disk layer (repeatable; with --volume at\n"
		   "                    most 16, mounted in the order given; example: --tmpfs /tmp)\n"
		   "  --internet        a veth to the host and NAT out (needs HUTCH_NET=nat; default loopback only)\n"
		   "  --allow-out LIST  CIDRs the sandbox may reach even when denied below (comma-separated)\n"
		   "  --deny-out LIST   CIDRs (IPv4 or IPv6) the sandbox may not reach (0.0.0.0/0 + --allow-out =\n"
		   "                    allowlist, for IPv6 too)\n");
}

/* The next free entry of o->mounts, or NULL (too many). */
static struct hu_mount_spec *next_mount(struct run_opts *o, hu_err *err)
{
	if (o->spec.n_mounts >= HU_MOUNTS_MAX) {
		hu_err_set(err, -E2BIG, "more than %d --volume and --tmpfs options", HU_MOUNTS_MAX);
		return NULL;
	}
	o->spec.mounts = o->mounts;
	return &o->mounts[o->spec.n_mounts];
}

/* --volume HOSTDIR:PATH[:ro] (parsed in place: argv is ours). */
static int parse_volume(char *arg, struct run_opts *o, hu_err *err)
{
	struct hu_mount_spec *m = next_mount(o, err);
	size_t n = strlen(arg);
	char *colon;

	if (!m)
		return -1;
	*m = (struct hu_mount_spec){.source_fd = -1, .idmap = 1};
	if (n > 3 && !strcmp(arg + n - 3, ":ro")) {
		m->read_only = 1;
		arg[n - 3] = '\0';
	}
	colon = strrchr(arg, ':');
	if (!colon || colon == arg || arg[0] != '/')
		return hu_err_set(err, EINVAL, "--volume wants /HOSTDIR:PATH[:ro], not '%s'", arg);
	*colon = '\0';
	m->source = arg;
	m->target = colon + 1;
	if (hu_mount_target_check(m->target, err) < 0) {
		hu_err_prefix(err, "--volume");
		return -1;
	}
	o->spec.n_mounts++;
	return 0;
}

/* --tmpfs PATH[:SIZE]; a tmpfs without SIZE gets its size in
 * finish_mounts, once --memory is known. */
static int parse_tmpfs(char *arg, struct run_opts *o, hu_err *err)
{
	struct hu_mount_spec *m = next_mount(o, err);

	if (!m || hu_tmpfs_arg_parse(arg, m, err) < 0)
		return -1;
	o->spec.n_mounts++;
	return 0;
}

/* After every option: the default tmpfs size (as /dev/shm's), then the
 * mounts as a whole (no target twice, no tmpfs above --memory). */
static int finish_mounts(struct run_opts *o, hu_err *err)
{
	for (size_t i = 0; i < o->spec.n_mounts; i++)
		if (o->mounts[i].type == HU_MOUNT_TYPE_TMPFS && o->mounts[i].tmpfs_bytes == 0)
			o->mounts[i].tmpfs_bytes = hu_sandbox_shm_bytes(&o->spec.limits);
	return hu_mounts_check(o->mounts, o->spec.n_mounts, o->spec.limits.memory_bytes, err);
}

static int parse_opts(int argc, char **argv, struct run_opts *o)
{
	static const struct option longopts[] = {
		{"memory", required_argument, NULL, 'm'}, {"pids", required_argument, NULL, 'p'},
		{"cpus", required_argument, NULL, 'c'},   {"disk", required_argument, NULL, 'd'},
		{"timeout", required_argument, NULL, 't'}, {"user", required_argument, NULL, 'u'},
		{"env", required_argument, NULL, 'e'},    {"cwd", required_argument, NULL, 'w'},
		{"template", required_argument, NULL, 'T'}, {"help", no_argument, NULL, 'h'},
		{"volume", required_argument, NULL, 'v'}, {"tmpfs", required_argument, NULL, 'F'},
		{"internet", no_argument, NULL, 'I'},     {"allow-out", required_argument, NULL, 'A'},
		{"deny-out", required_argument, NULL, 'D'},
		{"io-weight", required_argument, NULL, 'W'}, {"io-bps", required_argument, NULL, 'B'},
		{"io-iops", required_argument, NULL, 'O'},
		{NULL, 0, NULL, 0},
	};
	hu_err err;
	int c;

	memset(o, 0, sizeof(*o));
	hu_sandbox_spec_defaults(&o->spec);
	o->user = "user";
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		int rc = 0;
		switch (c) {
		case 'm': rc = hu_parse_size(optarg, &o->spec.limits.memory_bytes, &err); break;
		case 'p': rc = hu_parse_u64(optarg, &o->spec.limits.pids, &err); break;
		case 'c': rc = hu_parse_cpus(optarg, &o->spec.limits.cpu_millis, &err); break;
		case 'd': rc = hu_parse_size(optarg, &o->spec.disk_bytes, &err); break;
		case 'W': rc = hu_cgroup_io_parse(optarg, NULL, NULL, &o->spec.limits.io, &err); break;
		case 'B': rc = hu_cgroup_io_parse(NULL, optarg, NULL, &o->spec.limits.io, &err); break;
		case 'O': rc = hu_cgroup_io_parse(NULL, NULL, optarg, &o->spec.limits.io, &err); break;
		case 't': rc = hu_parse_duration_ms(optarg, &o->timeout_ms, &err); break;
		case 'u':
			if (strcmp(optarg, "root") && strcmp(optarg, "user"))
				rc = hu_err_set(&err, EINVAL, "--user must be 'root' or 'user', not '%s'", optarg);
			o->user = optarg;
			break;
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=')
				rc = hu_err_set(&err, EINVAL, "--env wants KEY=VALUE, not '%s'", optarg);
			else if (o->nenv >= MAX_ENV)
				rc = hu_err_set(&err, E2BIG, "more than %d --env options", MAX_ENV);
			else
				o->env[o->nenv++] = optarg;
			break;
		case 'w': o->cwd = optarg; break;
		case 'v': rc = parse_volume(optarg, o, &err); break;
		case 'F': rc = parse_tmpfs(optarg, o, &err); break;
		case 'T': snprintf(o->spec.template_name, sizeof(o->spec.template_name), "%s", optarg); break;
		case 'I': o->spec.net.internet = 1; break;
		case 'A': rc = hu_net_rules_add_list(&o->spec.net.rules, 'a', optarg, &err); break;
		case 'D': rc = hu_net_rules_add_list(&o->spec.net.rules, 'd', optarg, &err); break;
		case 'h': run_usage(stdout); exit(0);
		case ':':
			cli_error("option %s needs a value", argv[optind - 1]);
			return -1;
		default:
			cli_error("unknown option '%s'", argv[optind - 1]);
			run_usage(stderr);
			return -1;
		}
		if (rc < 0) {
			cli_error("%s", err.msg);
			return -1;
		}
	}
	if (optind >= argc) {
		cli_error("no command given (usage: hutch run [options] -- CMD [ARGS...])");
		return -1;
	}
	if (finish_mounts(o, &err) < 0) {
		cli_error("%s", err.msg);
		return -1;
	}
	if (!o->spec.net.internet && hu_net_rules_any(&o->spec.net.rules)) {
		cli_error("--allow-out and --deny-out need --internet");
		return -1;
	}
	o->argv = argv + optind;
	return 0;
}

static void random_id(char *buf, size_t n)
{
	char hex[13];
	hu_err ignore;
	if (hu_random_hex(hex, 6, &ignore) < 0)
		snprintf(hex, sizeof(hex), "000000000000"); /* the slot and O_EXCL dir still keep runs apart */
	snprintf(buf, n, "run-%s", hex);
}

/* The live state of one run: the init connection and where output goes. */
struct session {
	int fd;
	struct hu_buf spawn_pending; /* a SPAWN request too large to send before the sandbox exists */
	uint32_t req;
	uint32_t pid;
	int stdin_open;
	int exited;
	int exit_code;
};

/* Send one request built by `build` into a fresh buffer. */
static int send_buf(struct session *s, struct hu_buf *b, int built, hu_err *err)
{
	int rc = built < 0 ? -1 : hu_init_send(s->fd, b, err);
	hu_buf_free(b);
	return rc;
}

/* One frame from init: output goes to our stdout/stderr, EXIT ends the run.
 * OK replies to STDIN/SIGNAL need no action. */
static int handle_frame(struct session *s, hu_err *err)
{
	struct hu_frame_hdr hdr;
	struct hu_init_event ev;
	uint8_t *payload = NULL;
	int rc = 0;

	if (hu_init_recv(s->fd, &hdr, &payload, err) < 0)
		return -1;
	if (hdr.type == HU_MSG_ERROR) {
		hu_init_parse_error(payload, hdr.len, err);
		/* a late error about stdin (the process already closed it) is harmless */
		rc = (err->code == EPIPE || err->code == ESRCH) ? 0 : -1;
		if (rc == 0)
			hu_err_clear(err);
	} else if (hu_init_parse_event(&hdr, payload, &ev, err) < 0) {
		rc = -1;
	} else if (ev.type == HU_MSG_OUTPUT && ev.data) {
		/* a closed stdout is not our failure: keep draining */
		hu_write_all(ev.stream == HU_STREAM_STDERR ? 2 : 1, ev.data, ev.data_len);
	} else if (ev.type == HU_MSG_EXIT) {
		s->exited = 1;
		s->exit_code = ev.signum ? 128 + (int)ev.signum : ev.exit_code;
	}
	free(payload);
	return rc;
}

/* A request this small always fits in an empty socket's buffer, so it can
 * be written before anyone reads (the stream socket's default is ~200 KiB). */
#define PREWRITE_MAX (64u * 1024u)

/* The command's SPAWN request, into *b. */
static int build_spawn(struct session *s, const struct run_opts *o, struct hu_buf *b, hu_err *err)
{
	struct hu_spawn_req req = {
		.argv = (const char *const *)o->argv,
		.envv = o->env,
		.envc = o->nenv,
		.cwd = o->cwd,
		.user = o->user,
		.stdin_open = true,
	};

	while (o->argv[req.argc])
		req.argc++;
	return hu_init_build_spawn(b, ++s->req, &req, err);
}

/* A connection to the sandbox's init that exists before the sandbox does
 * (hu_sandbox_spec.first_conn_fd): the command's request is written into it
 * now, so init starts the command as soon as its setup is done, not after
 * this process has woken up, connected and asked. *init_end goes to the
 * create; a request too large to wait in the socket is sent afterwards
 * (s->spawn_pending). */
static int open_first_conn(struct session *s, const struct run_opts *o, int *init_end, hu_err *err)
{
	struct hu_buf b = {0};
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return hu_err_sys(err, "socketpair");
	s->fd = sv[0];
	*init_end = sv[1];
	if (build_spawn(s, o, &b, err) < 0) {
		hu_buf_free(&b);
		return -1;
	}
	if (b.len > PREWRITE_MAX) {
		s->spawn_pending = b;
		return 0;
	}
	return send_buf(s, &b, 0, err);
}

/* The reply to the SPAWN request: the command's pid. */
static int start_command(struct session *s, hu_err *err)
{
	struct hu_frame_hdr hdr;
	struct hu_init_event ev;
	uint8_t *payload = NULL;

	if (s->spawn_pending.len && send_buf(s, &s->spawn_pending, 0, err) < 0)
		return -1;
	if (hu_init_recv(s->fd, &hdr, &payload, err) < 0)
		return -1;
	int rc = 0;
	if (hdr.type == HU_MSG_ERROR)
		rc = hu_init_parse_error(payload, hdr.len, err);
	else if (hu_init_parse_event(&hdr, payload, &ev, err) < 0)
		rc = -1;
	else if (ev.type != HU_MSG_SPAWNED || ev.pid == 0)
		rc = hu_err_set(err, EPROTO, "unexpected reply %u to spawn", hdr.type);
	else
		s->pid = ev.pid;
	free(payload);
	return rc;
}

static int pump(struct session *s, const struct run_opts *o, hu_err *err)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	int interrupts = 0, timed_out = 0, rc = 0;

	if (sfd < 0 || tfd < 0) {
		rc = hu_err_sys(err, "signalfd/timerfd");
		goto out;
	}
	if (o->timeout_ms) {
		struct itimerspec its = {.it_value = {(time_t)(o->timeout_ms / 1000), (long)(o->timeout_ms % 1000) * 1000000L}};
		timerfd_settime(tfd, 0, &its, NULL);
	}
	while (!s->exited) {
		struct pollfd p[4] = {
			{.fd = s->fd, .events = POLLIN},
			{.fd = sfd, .events = POLLIN},
			{.fd = tfd, .events = POLLIN},
			{.fd = s->stdin_open ? 0 : -1, .events = POLLIN},
		};
		if (poll(p, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = hu_err_sys(err, "poll");
			break;
		}
		if (p[0].revents && handle_frame(s, err) < 0) {
			rc = -1;
			break;
		}
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (++interrupts > 1) {
					rc = hu_err_set(err, EINTR, "interrupted twice; destroying the sandbox");
					break;
				}
				struct hu_buf b = {0};
				send_buf(s, &b, hu_init_build_signal(&b, ++s->req, s->pid, (int)si.ssi_signo, err), err);
			}
		}
		if (p[2].revents & POLLIN) {
			timed_out = 1;
			break;
		}
		if (p[3].revents) {
			char buf[65536];
			ssize_t n = read(0, buf, sizeof(buf));
			struct hu_buf b = {0};
			if (n > 0) {
				send_buf(s, &b, hu_init_build_stdin(&b, ++s->req, s->pid, buf, (size_t)n, err), err);
			} else if (n == 0 || errno != EINTR) {
				s->stdin_open = 0;
				send_buf(s, &b, hu_init_build_close_stdin(&b, ++s->req, s->pid, err), err);
			}
		}
	}
	if (timed_out) {
		cli_error("command timed out after %llu ms; the sandbox was killed", (unsigned long long)o->timeout_ms);
		s->exit_code = EXIT_TIMEOUT;
		s->exited = 1;
	}
out:
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	return rc;
}

/* Sandboxes of earlier runs that were SIGKILLed died with them (their
 * PID 1 has a parent-death signal); their mounts, cgroups and uid slots are
 * removed here. HUTCH_SWEEP_MIN_AGE (seconds, default 60) sets how old a
 * leftover must be: younger ones may still be starting. */
static void sweep_leftovers(struct hu_runtime *rt)
{
	const char *env = getenv("HUTCH_SWEEP_MIN_AGE");
	unsigned cleaned = 0;
	uint64_t age = 60;
	hu_err err;

	if (env && hu_parse_u64(env, &age, &err) < 0)
		age = 60;
	if (hu_runtime_sweep(rt, (unsigned)age, NULL, NULL, &cleaned, &err) < 0)
		cli_error("cleaning up after earlier runs: %s", err.msg);
}

static int env_is_zero(const char *name)
{
	const char *v = getenv(name);
	return v && !strcmp(v, "0");
}

/* How long the layers image stays mounted after this run (layers.h,
 * hu_layers_linger): HUTCH_LAYERS_LINGER seconds, default 10; 0 unmounts
 * at the end of the run, as a daemon does when it stops. */
static unsigned layers_linger_ms(void)
{
	const char *env = getenv("HUTCH_LAYERS_LINGER");
	uint64_t s = 10;
	hu_err err;

	if (env && *env && (hu_parse_u64(env, &s, &err) < 0 || s > 3600)) {
		cli_error("HUTCH_LAYERS_LINGER=%s: expected seconds, 0 to 3600; using 10", env);
		s = 10;
	}
	return (unsigned)s * 1000u;
}

/* A SIGKILL the user did not send is usually the OOM killer: say so. */
static void explain_kill(struct hu_sandbox *sb, const struct run_opts *o, int code)
{
	struct hu_cgroup_stats st;
	uint64_t disk;
	hu_err ignore;

	if (code != 128 + SIGKILL || hu_sandbox_stats(sb, &st, &disk, &ignore) < 0 || st.oom_kills == 0)
		return;
	cli_error("the command was killed by the OOM killer (memory limit %llu MiB)",
		  (unsigned long long)(o->spec.limits.memory_bytes >> 20));
}

/* A command that failed on a full writable layer: say so (the command's own
 * message is a bare "Disk quota exceeded"). */
static void explain_disk(struct hu_sandbox *sb, const struct run_opts *o, int code)
{
	struct hu_cgroup_stats st;
	uint64_t used, cap = o->spec.disk_bytes, slack;
	hu_err ignore;

	if (code == 0 || hu_sandbox_disk_settle(sb, &ignore) < 0 || hu_sandbox_stats(sb, &st, &used, &ignore) < 0)
		return;
	slack = cap / 100 > (4u << 20) ? cap / 100 : (4u << 20);
	if (used + slack < cap)
		return;
	cli_error("the sandbox's disk is full: its writable layer holds %llu of %llu MiB (--disk raises the cap)",
		  (unsigned long long)(used >> 20), (unsigned long long)(cap >> 20));
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o;
	struct hu_runtime_config cfg;
	struct hu_runtime *rt = NULL;
	struct hu_sandbox *sb = NULL;
	struct session s = {.fd = -1, .stdin_open = 1};
	hu_err err = {0};
	int code = EXIT_SANDBOX, lock = -1, rc;
	sigset_t mask, old;

	if (parse_opts(argc, argv, &o) < 0)
		return EXIT_USAGE;
	random_id(o.spec.id, sizeof(o.spec.id));
	o.spec.die_with_parent = 1;
	/* the layer goes at the end of the run: nothing in it needs syncing
	 * (HUTCH_RUN_VOLATILE=0 keeps the syncs, for measuring them) */
	o.spec.volatile_layer = !env_is_zero("HUTCH_RUN_VOLATILE");
	/* signals are handled through a signalfd in pump(); blocked from here so
	 * an early Ctrl-C still destroys the sandbox */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &old);
	signal(SIGPIPE, SIG_IGN);

	hu_runtime_config_defaults(&cfg);
	cfg.layers_linger_ms = layers_linger_ms();
	if (hu_runtime_open(&cfg, &rt, &err) < 0)
		goto out;
	/* like a daemon: no `hutch template rm` while this sandbox stands on a template */
	if ((lock = hu_datadir_lock_shared(cfg.data_dir, &err)) < 0)
		goto out;
	sweep_leftovers(rt);
	if (hu_template_ensure_base(rt, &err) < 0 || open_first_conn(&s, &o, &o.spec.first_conn_fd, &err) < 0)
		goto out;
	rc = hu_sandbox_create(rt, &o.spec, &sb, &err);
	close(o.spec.first_conn_fd); /* init has its own copy, or no sandbox needs it */
	o.spec.first_conn_fd = -1;
	if (rc < 0 || start_command(&s, &err) < 0)
		goto out;
	if (pump(&s, &o, &err) < 0)
		goto out;
	code = s.exit_code;
	explain_kill(sb, &o, code);
	explain_disk(sb, &o, code);
out:
	if (err.code)
		cli_error("%s", err.msg);
	if (s.fd >= 0)
		close(s.fd);
	hu_buf_free(&s.spawn_pending);
	if (o.spec.first_conn_fd >= 0)
		close(o.spec.first_conn_fd);
	if (sb && hu_sandbox_destroy(sb, &err) < 0) {
		cli_error("%s", err.msg);
		code = EXIT_SANDBOX;
	}
	hu_runtime_close(rt);
	if (lock >= 0)
		close(lock);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return code;
}
