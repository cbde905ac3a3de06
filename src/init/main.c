/*
 * hutch-init: PID 1 of every sandbox. It starts the processes the daemon asks
 * for, streams their output, reaps every child (zombies included) and serves
 * file requests, over a unix socket the runtime hands it on fd 3.
 *
 *   hutch-init [--listen-fd N] [--allow-local-peers]
 *
 * --allow-local-peers (or HUTCH_INIT_ALLOW_LOCAL_PEERS=1) lets peers inside
 * init's own PID namespace connect; only tests run init that way.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "init/conn.h"
#include "init/loop.h"
#include "init/proc.h"
#include "init/sudo.h"
#include "init/users.h"
#include "runtime/caps.h"
#include "runtime/sandbox.h"
#include "util/err.h"

#define DEFAULT_LISTEN_FD 3

struct options {
	int listen_fd;
	bool allow_local_peers;
	bool setup; /* first build the sandbox (runtime/sandbox_child.c) */
};

static int parse_args(int argc, char **argv, struct options *o, hu_err *err)
{
	const char *env = getenv("HUTCH_INIT_ALLOW_LOCAL_PEERS");

	o->listen_fd = DEFAULT_LISTEN_FD;
	o->allow_local_peers = env && !strcmp(env, "1");
	o->setup = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--allow-local-peers")) {
			o->allow_local_peers = true;
		} else if (!strcmp(argv[i], "--setup")) {
			o->setup = true;
		} else if (!strcmp(argv[i], "--listen-fd") && i + 1 < argc) {
			char *end;
			long fd = strtol(argv[++i], &end, 10);
			if (*end || fd < 0 || fd > 65535)
				return hu_err_set(err, EINVAL, "bad --listen-fd %s", argv[i]);
			o->listen_fd = (int)fd;
		} else {
			return hu_err_set(err, EINVAL, "unknown argument %s (usage: hutch-init [--setup] [--listen-fd N] [--allow-local-peers])", argv[i]);
		}
	}
	return 0;
}

/* Everything init sets up about itself before it serves anyone. */
static int harden_self(int listen_fd, hu_err *err)
{
	/* Not dumpable: sandbox processes (even root ones) cannot ptrace init or
	 * open /proc/1/fd and steal the daemon's socket. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return hu_err_sys(err, "PR_SET_DUMPABLE");
	/* init itself keeps no more than a root command gets: enough to switch
	 * users, drop capabilities for children and work on files as root, so a
	 * bug in its request handling cannot reach CAP_SYS_ADMIN & co. */
	if (hu_caps_drop_to(HU_CAPS_ROOT_DEFAULT, err) < 0)
		return -1;
	/* Outside a PID namespace orphans would go to the real init; as a
	 * subreaper they come to us and get reaped like under PID 1. */
	if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return hu_err_sys(err, "PR_SET_CHILD_SUBREAPER");
	/* A client that hangs up must cost us an EPIPE, not our life. No other
	 * handlers are installed: as a PID namespace's init the kernel drops
	 * every signal from inside that has no handler, so none can stop us. */
	signal(SIGPIPE, SIG_IGN);
	umask(022);
	/* Keep 0-2 occupied (by /dev/null if the runtime left them closed) so a
	 * pipe created later never lands there and gets clobbered by the dup2s
	 * of a spawned child. */
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		int n = open("/dev/null", O_RDWR);
		if (n >= 0 && n != fd) {
			dup2(n, fd);
			close(n);
		}
	}
	/* Nothing of init's may leak into what it spawns. */
	if (fcntl(listen_fd, F_SETFD, FD_CLOEXEC) < 0)
		return hu_err_sys(err, "listen fd %d", listen_fd);
	return 0;
}

/* Test mode only: SIGTERM ends the loop so init exits through its cleanup
 * and leak checkers see a clean shutdown. A real init (PID 1) installs no
 * such thing: nothing inside the sandbox may be able to stop it. */
static struct hu_watch term_watch;

static void term_event(struct hu_watch *w, uint32_t events)
{
	hu_loop_stop();
}

static int watch_sigterm(hu_err *err)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return hu_err_sys(err, "block SIGTERM");
	int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return hu_err_sys(err, "signalfd");
	if (hu_loop_add(&term_watch, fd, EPOLLIN, term_event, err) < 0) {
		close(fd);
		return -1;
	}
	return 0;
}

/* The connection the runtime handed over with "go" (hutch run's, its
 * command's request already in it): a failure costs that client its
 * connection (it reads EOF), never init its life. */
static void serve_first_conn(int fd)
{
	hu_err err;

	if (fd >= 0 && hu_conn_adopt(fd, &err) < 0)
		fprintf(stderr, "hutch-init: %s\n", err.msg);
}

int main(int argc, char **argv)
{
	struct options opt;
	hu_err err;
	int rc = 1;

	/* The template's /opt/hutch/bin/sudo is this binary (sudo.h). */
	const char *base = strrchr(argv[0], '/');
	/* _exit: the shim holds nothing to clean up, and a sanitizer build's
	 * leak check at exit cannot run inside a sandbox (no ptrace). */
	if (!strcmp(base ? base + 1 : argv[0], "sudo"))
		_exit(hu_sudo_client_main(argc, argv));

	if (parse_args(argc, argv, &opt, &err) < 0) {
		fprintf(stderr, "hutch-init: %s\n", err.msg);
		return 1;
	}
	/* In a new sandbox: build its root and lock down before serving anyone
	 * (on failure this reports to the runtime and exits). */
	int first_conn = opt.setup ? hu_sandbox_setup() : -1;
	if (harden_self(opt.listen_fd, &err) < 0 || hu_loop_init(&err) < 0) {
		fprintf(stderr, "hutch-init: %s\n", err.msg);
		return 1;
	}
	/* sudo is served in real sandboxes only: its abstract socket name is
	 * per network namespace, which a test init does not have of its own. */
	if ((opt.allow_local_peers && watch_sigterm(&err) < 0) || hu_proc_init(&err) < 0 ||
	    (opt.setup && hu_sudo_listen(&err) < 0) || hu_conn_listen(opt.listen_fd, opt.allow_local_peers, &err) < 0) {
		fprintf(stderr, "hutch-init: %s\n", err.msg);
		goto out;
	}
	serve_first_conn(first_conn);
	if (hu_loop_run(&err) < 0)
		fprintf(stderr, "hutch-init: %s\n", err.msg);
	else
		rc = 0;
out:
	hu_conn_shutdown();
	hu_sudo_shutdown();
	hu_proc_fini();
	hu_users_free();
	if (term_watch.registered) {
		hu_loop_del(&term_watch);
		close(term_watch.fd);
	}
	hu_loop_fini();
	return rc;
}
