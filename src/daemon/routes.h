/* Each part of the API registers its routes with hu_route() at start-up. */
#ifndef HUTCH_DAEMON_ROUTES_H
#define HUTCH_DAEMON_ROUTES_H

#include "daemon/core/daemon.h"

void hu_api_sandboxes_register(struct hu_daemon *d); /* control plane (api_sandboxes.c) */
void hu_api_templates_register(struct hu_daemon *d);  /* template aliases (api_templates.c) */
void hu_api_logs_register(struct hu_daemon *d);       /* sandbox logs (api_logs.c) */
void hu_api_metrics_register(struct hu_daemon *d);    /* GET /metrics (api_metrics.c) */
void hu_api_volumes_register(struct hu_daemon *d);    /* named volumes (api_volumes.c) */
void hu_envd_process_register(struct hu_daemon *d);  /* process.Process (envd_process.c) */
/* End the process calls still in flight (answering their requests): call
 * after hu_http_close() and before hu_http_free() and event_base_free(). */
void hu_envd_process_shutdown(struct hu_daemon *d);
void hu_envd_fs_register(struct hu_daemon *d);       /* filesystem.Filesystem + /files (envd_fs.c, files.c) */
void hu_files_register(struct hu_daemon *d);         /* GET/POST /files (files.c); hu_envd_fs_register calls it */

#endif
