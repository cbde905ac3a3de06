/*
 * The init side of sudo (sudo.h): accept a request, start the command as
 * root with the caller's stdio, answer with its wait status when it ends.
 */
#include "init/sudo.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "init/loop.h"
#include "init/spawn.h"
#include "init/users.h"

#define ROOT_PATH "/opt/hutch/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct sudo_cmd {
	struct hu_watch watch; /* the caller's connection: a hangup ends the command */
	pid_t pid;             /* its own process group */
	struct sudo_cmd *next;
};

static struct hu_watch listen_watch;
static struct sudo_cmd *running;
static size_t nrunning;

static void reply_error(int fd, const hu_err *err)
{
	char msg[HU_ERR_MSG_MAX + 2];
	int n = snprintf(msg, sizeof(msg), "E%s", err->msg);
	if (send(fd, msg, (size_t)(n < (int)sizeof(msg) ? n : (int)sizeof(msg) - 1), MSG_NOSIGNAL) < 0) {
		/* the caller is gone: nothing to tell */
	}
}

static void cmd_free(struct sudo_cmd *c)
{
	for (struct sudo_cmd **p = &running; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	nrunning--;
	hu_loop_del(&c->watch);
	close(c->watch.fd);
	free(c);
}

bool hu_sudo_reaped(pid_t pid, int status)
{
	for (struct sudo_cmd *c = running; c; c = c->next) {
		if (c->pid != pid)
			continue;
		if (send(c->watch.fd, &status, sizeof(status), MSG_NOSIGNAL) < 0) {
			/* the caller left before the end */
		}
		cmd_free(c);
		return true;
	}
	return false;
}

static _Noreturn void child(const int fds[3], const char *cwd, char **argv)
{
	static const struct hu_user root_fallback = {.name = "root", .home = "/root", .shell = "/bin/bash"};
	struct hu_user root;
	hu_err err;

	hu_spawn_reset_signals();
	setsid();
	if (dup2(fds[0], 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0)
		_exit(126);
	if (hu_user_resolve("root", &root, &err) < 0)
		root = root_fallback;
	if (hu_spawn_become(&root, &err) < 0) {
		dprintf(2, "sudo: %s\n", err.msg);
		_exit(126);
	}
	umask(022);
	if (chdir(cwd) < 0 && chdir(root.home) < 0 && chdir("/") < 0)
		_exit(126);
	close_range(3, ~0U, 0);
	char home[sizeof(root.home) + 8], shell[sizeof(root.shell) + 8];
	snprintf(home, sizeof(home), "HOME=%s", root.home);
	snprintf(shell, sizeof(shell), "SHELL=%s", root.shell);
	char *envp[] = {"PATH=" ROOT_PATH, home, shell, "USER=root", "LOGNAME=root", "SUDO_USER=user", NULL};
	environ = envp;
	execvp(argv[0], argv);
	dprintf(2, "sudo: %s: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

static int receive(int fd, char *buf, size_t cap, size_t *len, int fds[3], hu_err *err)
{
	char ctl[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {buf, cap};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	int got = 0;

	if (n < 0)
		return hu_err_sys(err, "sudo: receive");
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int *in = (int *)(void *)CMSG_DATA(c);
		for (int i = 0; i < k; i++) {
			if (got < 3)
				fds[got++] = in[i];
			else
				close(in[i]);
		}
	}
	if (got != 3 || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (int i = 0; i < got; i++)
			close(fds[i]);
		return hu_err_set(err, EINVAL, "sudo: a request carries its text and exactly three descriptors");
	}
	*len = (size_t)n;
	return 0;
}

/* The request is there: start the command. false when c was answered
 * with an error and freed. */
static bool start(struct sudo_cmd *c)
{
	static char buf[HU_SUDO_MAX_REQUEST];
	char *argv[HU_SUDO_MAX_ARGS + 1];
	const char *cwd;
	size_t len = 0, argc;
	int fds[3];
	hu_err err;

	if (receive(c->watch.fd, buf, sizeof(buf), &len, fds, &err) < 0)
		goto fail;
	if (hu_sudo_parse_request(buf, len, &cwd, argv, &argc, &err) < 0) {
		for (int i = 0; i < 3; i++)
			close(fds[i]);
		goto fail;
	}
	pid_t pid = fork();
	if (pid == 0)
		child(fds, cwd, argv);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	if (pid < 0) {
		hu_err_sys(&err, "sudo: fork");
		goto fail;
	}
	c->pid = pid;
	hu_loop_mod(&c->watch, EPOLLRDHUP); /* from now on: only a hangup */
	return true;
fail:
	reply_error(c->watch.fd, &err);
	cmd_free(c);
	return false;
}

/* Before the command: its request arrived. While it runs: the caller hung
 * up (killed, or interrupted), which ends the command the way a terminal
 * hangup would. */
static void conn_event(struct hu_watch *w, uint32_t events)
{
	struct sudo_cmd *c = (struct sudo_cmd *)w;
	if (c->pid == 0) {
		start(c);
		return;
	}
	kill(-c->pid, SIGHUP);
	hu_loop_mod(&c->watch, 0); /* once; the reaper frees c */
}

static void accept_event(struct hu_watch *w, uint32_t events)
{
	int fd;
	hu_err err;

	while ((fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		struct sudo_cmd *c = nrunning < HU_SUDO_MAX_WAITING ? calloc(1, sizeof(*c)) : NULL;
		if (!c) {
			hu_err_set(&err, EAGAIN, "sudo: more than %d commands at once", HU_SUDO_MAX_WAITING);
			reply_error(fd, &err);
			close(fd);
			continue;
		}
		/* the request is read when it is there: a silent caller costs a slot, never init's time */
		if (hu_loop_add(&c->watch, fd, EPOLLIN, conn_event, &err) < 0) {
			close(fd);
			free(c);
			continue;
		}
		c->next = running;
		running = c;
		nrunning++;
	}
}

int hu_sudo_listen(hu_err *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path + 1, HU_SUDO_SOCKET, strlen(HU_SUDO_SOCKET));
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(HU_SUDO_SOCKET));
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return hu_err_sys(err, "sudo socket");
	if (bind(fd, (struct sockaddr *)&a, alen) < 0 || listen(fd, 64) < 0) {
		close(fd);
		return hu_err_sys(err, "sudo socket: bind");
	}
	if (hu_loop_add(&listen_watch, fd, EPOLLIN, accept_event, err) < 0) {
		close(fd);
		return -1;
	}
	return 0;
}

void hu_sudo_shutdown(void)
{
	while (running)
		cmd_free(running);
	if (listen_watch.registered) {
		hu_loop_del(&listen_watch);
		close(listen_watch.fd);
	}
}
