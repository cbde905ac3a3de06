/* The store flags of the verbs that reach the store (store_flags.c). */
#ifndef HUTCH_CLI_STORE_FLAGS_H
#define HUTCH_CLI_STORE_FLAGS_H

#include "daemon/core/config.h"

#define CLI_STORE_FLAGS_HELP                                                                               \
	"  --data-dir DIR    the daemon's data dir (default /var/lib/hutch, or $HUTCH_DATA_DIR)\n"            \
	"  --config FILE     the daemon's config file: its store and data_dir\n"                              \
	"  --store URI       the store: sqlite (the data dir's) or a postgresql:// URI\n"

/* The value of "--name VALUE" or "--name=VALUE" at argv[*i] (moving *i past
 * it), or NULL. */
const char *cli_flag_value(int argc, char **argv, int *i, const char *name);
/* --data-dir, --config or --store at argv[*i], applied to cfg: 1 when taken,
 * 0 when argv[*i] is none of them, -1 on a bad value (reported). */
int cli_store_flag(int argc, char **argv, int *i, struct hu_config *cfg);

#endif
