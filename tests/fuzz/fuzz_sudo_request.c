// fuzz-sources: src/init/sudo_request.c
/*
 * libFuzzer driver for the requests hutch-init's sudo socket accepts: any
 * process in the sandbox can send one. Accepted requests must have a cwd, a
 * non-empty command and at most HU_SUDO_MAX_ARGS arguments, all inside the
 * buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "init/sudo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	char *argv[HU_SUDO_MAX_ARGS + 1];
	const char *cwd;
	size_t argc;
	hu_err err;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (hu_sudo_parse_request(buf, size, &cwd, argv, &argc, &err) == 0) {
		if (argc == 0 || argc > HU_SUDO_MAX_ARGS || argv[argc] || !argv[0][0] || cwd != buf)
			abort();
		for (size_t i = 0; i < argc; i++)
			if (argv[i] < buf || argv[i] + strlen(argv[i]) >= buf + size)
				abort();
	} else if (err.code != EINVAL && err.code != E2BIG) {
		abort();
	}
	free(buf);
	return 0;
}
