/* hutch-full: every verb of the `hutch` command (front.c starts this binary
 * for all but `hutch run`). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

struct verb {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct verb verbs[] = {
	{"run", cmd_run, "run one command in a fresh sandbox, then destroy it"},
	{"doctor", cmd_doctor, "check what this host provides for sandboxes"},
	{"serve", cmd_serve, "run the E2B-compatible sandbox service"},
	{"keys", cmd_keys, "create API keys (keys create --team NAME)"},
	{"node", cmd_node, "the nodes of a shared store (node list | drain | undrain | remove NAME)"},
	{"template", cmd_template, "build, list and remove templates (template build NAME --from DIR)"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: hutch <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(f, "  %-8s %s\n", verbs[i].name, verbs[i].help);
	fprintf(f, "\n'hutch <command> --help' describes a command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(argv[1], verbs[i].name))
			return verbs[i].fn(argc - 1, argv + 1);
	cli_error("unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
