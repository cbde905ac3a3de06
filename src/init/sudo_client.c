/*
 * The `sudo` shim (sudo.h): hutch-init started under the name "sudo". It
 * understands the options scripts use with a passwordless sudo and hands
 * the command to init. Options that ask for another user, a password or a
 * policy change are refused with a message rather than ignored.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init/sudo.h"

static int usage(const char *why)
{
	fprintf(stderr, "sudo: %s\nusage: sudo [-EHnSk] [-u root] [-i | -s] [--] command [args...]\n"
			"(hutch sandboxes: commands run as root through hutch-init; no password, no other users)\n",
		why);
	return 1;
}

/* Append s and its NUL to buf; false when it does not fit. */
static bool put(char *buf, size_t *len, const char *s)
{
	size_t n = strlen(s) + 1;
	if (*len + n > HU_SUDO_MAX_REQUEST)
		return false;
	memcpy(buf + *len, s, n);
	*len += n;
	return true;
}

static int run(char *req, size_t len)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path + 1, HU_SUDO_SOCKET, strlen(HU_SUDO_SOCKET));
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(HU_SUDO_SOCKET));
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, alen) < 0) {
		perror("sudo: cannot reach hutch-init");
		return 1;
	}
	int fds[3] = {0, 1, 2};
	char ctl[CMSG_SPACE(sizeof(fds))] = {0};
	struct iovec iov = {req, len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	if (sendmsg(fd, &m, MSG_NOSIGNAL) < 0) {
		perror("sudo: send");
		return 1;
	}
	char reply[1024];
	ssize_t n = recv(fd, reply, sizeof(reply) - 1, 0);
	if (n == (ssize_t)sizeof(int)) {
		int status;
		memcpy(&status, reply, sizeof(status));
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	if (n > 1 && reply[0] == 'E') {
		reply[n] = '\0';
		fprintf(stderr, "%s\n", reply + 1);
		return 1;
	}
	fprintf(stderr, "sudo: no answer from hutch-init\n");
	return 1;
}

int hu_sudo_client_main(int argc, char **argv)
{
	static char req[HU_SUDO_MAX_REQUEST];
	size_t len = 0;
	bool login = false, shell = false;
	int i = 1;

	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "-u") || !strcmp(argv[i], "--user")) {
			if (i + 1 >= argc || (strcmp(argv[i + 1], "root") && strcmp(argv[i + 1], "#0")))
				return usage("only -u root is possible");
			i++;
			continue;
		}
		for (const char *o = argv[i] + 1; *o; o++) {
			if (*o == 'i')
				login = true;
			else if (*o == 's')
				shell = true;
			else if (!strchr("EHnSkAP", *o)) {
				char msg[64];
				snprintf(msg, sizeof(msg), "option -%c is not supported", *o);
				return usage(msg);
			}
		}
	}
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		strcpy(cwd, "/");
	if (!put(req, &len, login ? "/root" : cwd))
		return usage("the command is too long");
	bool ok = true;
	if (login || shell) {
		/* `sudo -i cmd args` runs them through root's login shell */
		ok = put(req, &len, "/bin/bash") && (!login || put(req, &len, "-l"));
		if (i < argc) {
			char joined[HU_SUDO_MAX_REQUEST];
			size_t jl = 0;
			joined[0] = '\0';
			for (int k = i; k < argc && ok; k++) {
				int n = snprintf(joined + jl, sizeof(joined) - jl, "%s%s", k > i ? " " : "", argv[k]);
				ok = n >= 0 && (size_t)n < sizeof(joined) - jl;
				jl += ok ? (size_t)n : 0;
			}
			ok = ok && put(req, &len, "-c") && put(req, &len, joined);
		}
	} else {
		if (i >= argc)
			return usage("no command");
		for (int k = i; k < argc && ok; k++)
			ok = put(req, &len, argv[k]);
	}
	if (!ok)
		return usage("the command is too long");
	return run(req, len);
}
