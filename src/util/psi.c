/* PSI files (psi.h). */
#include "util/psi.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* "nan" and "inf" parse as doubles: only a share in 0..100 passes */
double hu_psi_some_avg10(const char *text)
{
	double v;

	if (strncmp(text, "some ", 5) || sscanf(text, "some avg10=%lf", &v) != 1 || !(v >= 0 && v <= 100))
		return -1;
	return v;
}

double hu_psi_read_some_avg10(int dirfd, const char *path)
{
	char buf[256];
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return hu_psi_some_avg10(buf);
}
