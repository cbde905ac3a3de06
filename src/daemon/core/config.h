/*
 * hutch serve's settings (struct hu_config in daemon.h): embedded defaults,
 * then a config file of `key = value` lines, then command-line flags.
 * docs/operations.md lists every key and flag.
 */
#ifndef HUTCH_DAEMON_CONFIG_H
#define HUTCH_DAEMON_CONFIG_H

#include "daemon/core/daemon.h"

/* The embedded defaults; HUTCH_DATA_DIR and HUTCH_RUN_DIR, when set, are the
 * defaults of data_dir and run_dir. */
void hu_config_defaults(struct hu_config *cfg);
/* Set one config-file key from its text value (EINVAL: unknown key or bad value). */
int hu_config_set(struct hu_config *cfg, const char *key, const char *value, hu_err *err);
/* Apply a config file; errors name "file:line". */
int hu_config_load_file(struct hu_config *cfg, const char *path, hu_err *err);
/* The whole configuration of `hutch serve ARGS` (argv[0] is the verb):
 * defaults, then --config FILE or <data_dir>/hutch.conf when it exists, then
 * the flags --listen --port --data-dir --run-dir --volume-root
 * --host-mount-roots (as "--flag value" or
 * "--flag=value"). */
int hu_config_from_args(struct hu_config *cfg, int argc, char **argv, hu_err *err);

#endif
