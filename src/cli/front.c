/*
 * The `hutch` binary: `hutch run` in this process, every other verb in
 * hutch-full (main.c), which this executes with the same arguments.
 *
 * Why two binaries: the dynamic loader maps and binds (-z now) every library
 * a binary links before main runs. The daemon's verbs need libevent, OpenSSL,
 * SQLite and more (13 objects); `hutch run` needs libseccomp, jansson and
 * zlib. Loading the rest cost ~20% of the CPU of a whole `hutch run -- true`
 * (docs/benchmarks.md). The other verbs pay one more exec (~1 ms), once per
 * command; `hutch serve` runs as hutch-full from then on.
 *
 * hutch-full is found beside this binary (build/) or in
 * <prefix>/libexec/hutch/ (make install), like hutch-init; never on $PATH.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "runtime/helper.h"

int main(int argc, char **argv)
{
	char full[PATH_MAX];
	hu_err err = {0};

	if (argc >= 2 && !strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (hu_helper_find("hutch-full", NULL, full, sizeof(full), &err) < 0) {
		cli_error("%s", err.msg);
		return 1;
	}
	execv(full, argv);
	cli_error("execute %s: %s", full, strerror(errno));
	return 1;
}
