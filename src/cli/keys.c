/*
 * hutch keys create --team NAME [--data-dir DIR] [--config FILE] [--store URI]
 *
 * Creates an API key for a team and prints it (the store keeps only its
 * hash). The store is SQLite in WAL mode or PostgreSQL, so this works
 * while daemons run.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/store_flags.h"
#include "daemon/core/config.h"
#include "daemon/store/store.h"

#define EXIT_USAGE 2
#define TEAM_MAX 63

static void keys_usage(FILE *f)
{
	fprintf(f, "usage: hutch keys create --team NAME [--data-dir DIR] [--config FILE] [--store URI]\n\n"
		   "Creates an API key for team NAME ([a-z0-9_-], 1..63 characters) and prints it once.\n\n"
		   CLI_STORE_FLAGS_HELP);
}

static int team_valid(const char *t)
{
	size_t n = strlen(t);
	if (n < 1 || n > TEAM_MAX)
		return 0;
	for (; *t; t++)
		if (!((*t >= 'a' && *t <= 'z') || (*t >= '0' && *t <= '9') || *t == '_' || *t == '-'))
			return 0;
	return 1;
}

static int keys_create(int argc, char **argv)
{
	struct hu_config cfg;
	struct hu_store *st = NULL;
	const char *team = NULL, *v;
	char key[128];
	hu_err err;

	hu_config_defaults(&cfg);
	for (int i = 1; i < argc; i++) {
		int taken = cli_store_flag(argc, argv, &i, &cfg);
		if (taken < 0)
			return EXIT_USAGE;
		if (taken)
			continue;
		if ((v = cli_flag_value(argc, argv, &i, "--team"))) {
			team = v;
		} else {
			cli_error("unexpected argument '%s'", argv[i]);
			keys_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!team) {
		cli_error("keys create needs --team NAME");
		return EXIT_USAGE;
	}
	if (!team_valid(team)) {
		cli_error("team '%s' is not valid: use 1..%d characters of a-z, 0-9, '_' and '-'", team, TEAM_MAX);
		return EXIT_USAGE;
	}
	if (hu_store_open(hu_config_store_location(&cfg), &st, &err) < 0 ||
	    hu_store_key_create(st, team, key, sizeof(key), &err) < 0) {
		cli_error("%s", err.msg);
		if (st)
			hu_store_close(st);
		return 1;
	}
	hu_store_close(st);
	printf("%s\n", key);
	return 0;
}

int cmd_keys(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		keys_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	if (!strcmp(argv[1], "create"))
		return keys_create(argc - 1, argv + 1);
	cli_error("unknown keys command '%s'", argv[1]);
	keys_usage(stderr);
	return EXIT_USAGE;
}
