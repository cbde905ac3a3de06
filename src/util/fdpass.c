#include "util/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HU_FDPASS_MAX 32 /* the sandbox setup message: 3 fds + up to 16 mounts */

int hu_send_fds(int sock, const void *data, size_t len, const int *fds, size_t nfds)
{
	char ctl[CMSG_SPACE(sizeof(int) * HU_FDPASS_MAX)];
	struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds > HU_FDPASS_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (nfds > 0) {
		memset(ctl, 0, sizeof(ctl));
		msg.msg_control = ctl;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	for (;;) {
		ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
		if (n >= 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

long hu_recv_fds(int sock, void *data, size_t len, int *fds, size_t max_fds, size_t *nfds)
{
	char ctl[CMSG_SPACE(sizeof(int) * HU_FDPASS_MAX)];
	struct iovec iov = {.iov_base = data, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	ssize_t n;

	*nfds = 0;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int tmp[HU_FDPASS_MAX];
		memcpy(tmp, CMSG_DATA(c), sizeof(int) * (count > HU_FDPASS_MAX ? HU_FDPASS_MAX : count));
		for (size_t i = 0; i < count && i < HU_FDPASS_MAX; i++) {
			if (*nfds < max_fds)
				fds[(*nfds)++] = tmp[i];
			else
				close(tmp[i]); /* more than asked for: never leak them */
		}
	}
	return (long)n;
}
