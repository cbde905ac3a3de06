/*
 * The flags every verb that reaches the store shares (keys, node): where the
 * store is, as `hutch serve` would find it.
 */
#include <string.h>

#include "cli/cli.h"
#include "cli/store_flags.h"

const char *cli_flag_value(int argc, char **argv, int *i, const char *name)
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

int cli_store_flag(int argc, char **argv, int *i, struct hu_config *cfg)
{
	const char *v;
	hu_err err;

	if ((v = cli_flag_value(argc, argv, i, "--data-dir"))) {
		if (hu_config_set(cfg, "data_dir", v, &err) < 0)
			return cli_error("--data-dir: %s", err.msg), -1;
	} else if ((v = cli_flag_value(argc, argv, i, "--config"))) {
		if (hu_config_load_file(cfg, v, &err) < 0)
			return cli_error("--config: %s", err.msg), -1;
	} else if ((v = cli_flag_value(argc, argv, i, "--store"))) {
		if (hu_config_set(cfg, "store", v, &err) < 0)
			return cli_error("--store: %s", err.msg), -1;
	} else {
		return 0;
	}
	return 1;
}
