#include "util/sockpeek.h"

#include <errno.h>
#include <sys/socket.h>

bool hu_sock_quiet(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}
