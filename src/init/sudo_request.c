/*
 * Decoding a sudo request (sudo.h): pure, so the fuzz driver
 * (tests/fuzz/fuzz_sudo_request.c) links only this.
 */
#include <string.h>

#include "init/sudo.h"

int hu_sudo_parse_request(char *buf, size_t len, const char **cwd, char **argv, size_t *argc, hu_err *err)
{
	if (len == 0 || len > HU_SUDO_MAX_REQUEST || buf[len - 1] != '\0')
		return hu_err_set(err, EINVAL, "sudo request: not a list of NUL-terminated strings");
	*cwd = buf;
	size_t off = strlen(buf) + 1, n = 0;
	while (off < len) {
		if (n == HU_SUDO_MAX_ARGS)
			return hu_err_set(err, E2BIG, "sudo request: more than %d arguments", HU_SUDO_MAX_ARGS);
		argv[n++] = buf + off;
		off += strlen(buf + off) + 1;
	}
	argv[n] = NULL;
	if (n == 0 || argv[0][0] == '\0')
		return hu_err_set(err, EINVAL, "sudo request: no command");
	*argc = n;
	return 0;
}
