/* Each part of the API registers its routes with hu_route() at start-up. */
#ifndef HUTCH_DAEMON_ROUTES_H
#define HUTCH_DAEMON_ROUTES_H

#include "daemon/daemon.h"

void hu_api_sandboxes_register(struct hu_daemon *d); /* control plane (api_sandboxes.c) */
void hu_envd_process_register(struct hu_daemon *d);  /* process.Process (envd_process.c) */
void hu_envd_fs_register(struct hu_daemon *d);       /* filesystem.Filesystem + /files (envd_fs.c, files.c) */

#endif
