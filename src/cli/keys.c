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
#include "daemon/core/config.h"
#include "daemon/store/store.h"

#define EXIT_USAGE 2
#define TEAM_MAX 63

static void keys_usage(FILE *f)
{
	fprintf(f, "usage: hutch keys create --team NAME [--data-dir DIR] [--config FILE] [--store URI]\n\n"
		   "Creates an API key for team NAME ([a-z0-9_-], 1..63 characters) and prints it once.\n\n"
		   "  --data-dir DIR    the daemon's data dir (default /var/lib/hutch, or $HUTCH_DATA_DIR)\n"
		   "  --config FILE     the daemon's config file: its store and data_dir\n"
		   "  --store URI       the store: sqlite (the data dir's) or a postgresql:// URI\n");
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

/* The value of "--name VALUE" or "--name=VALUE" at argv[*i], or NULL. */
static const char *flag_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n))
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
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
		if ((v = flag_value(argc, argv, &i, "--team"))) {
			team = v;
		} else if ((v = flag_value(argc, argv, &i, "--data-dir"))) {
			if (hu_config_set(&cfg, "data_dir", v, &err) < 0) {
				cli_error("--data-dir: %s", err.msg);
				return EXIT_USAGE;
			}
		} else if ((v = flag_value(argc, argv, &i, "--config"))) {
			if (hu_config_load_file(&cfg, v, &err) < 0) {
				cli_error("--config: %s", err.msg);
				return EXIT_USAGE;
			}
		} else if ((v = flag_value(argc, argv, &i, "--store"))) {
			if (hu_config_set(&cfg, "store", v, &err) < 0) {
				cli_error("--store: %s", err.msg);
				return EXIT_USAGE;
			}
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
