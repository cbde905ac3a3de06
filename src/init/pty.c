#include "init/pty.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "util/cleanup.h"

int hu_pty_resize(int master, uint16_t rows, uint16_t cols, hu_err *err)
{
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	if (ioctl(master, TIOCSWINSZ, &ws) < 0)
		return hu_err_sys(err, "set pty window size");
	return 0;
}

int hu_pty_open(uint16_t rows, uint16_t cols, int *master, int *slave, hu_err *err)
{
	char name[64];

	/* posix_openpt/grantpt/unlockpt/ptsname are all glibc has to offer here
	 * without libutil; O_NOCTTY keeps init itself from acquiring a terminal. */
	_cleanup_close_ int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return hu_err_sys(err, "open /dev/ptmx");
	if (grantpt(m) < 0 || unlockpt(m) < 0)
		return hu_err_sys(err, "unlock pty");
	int r = ptsname_r(m, name, sizeof(name));
	if (r != 0) {
		errno = r;
		return hu_err_sys(err, "ptsname");
	}
	int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0)
		return hu_err_sys(err, "open %s", name);
	if (hu_pty_resize(m, rows, cols, err) < 0) {
		close(s);
		return -1;
	}
	*master = hu_take_fd(&m);
	*slave = s;
	return 0;
}

int hu_pty_make_controlling(int slave, hu_err *err)
{
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		return hu_err_sys(err, "make the pty the controlling terminal");
	for (int fd = 0; fd < 3; fd++)
		if (dup2(slave, fd) < 0)
			return hu_err_sys(err, "dup2 pty to fd %d", fd);
	if (slave > 2)
		close(slave);
	return 0;
}
