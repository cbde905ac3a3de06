/*
 * The data plane's handlers: envd's process and filesystem services and
 * its /files transfers, for the sandbox in r->target (hu_req_sbx), already
 * authenticated by the dispatcher (src/daemon/dispatch.c). src/daemon/routes.c
 * maps each to its path. r->user is the user the call acts as, or NULL for
 * the sandbox's default.
 */
#ifndef HUTCH_DAEMON_ENVD_HANDLERS_H
#define HUTCH_DAEMON_ENVD_HANDLERS_H

#include "daemon/http/request.h"

struct hu_daemon;

/* process.Process (envd_process.c, envd_process_stream.c) */
void hu_envd_process_start(struct hu_req *r);
void hu_envd_process_connect(struct hu_req *r);
void hu_envd_process_list(struct hu_req *r);
void hu_envd_process_send_input(struct hu_req *r);
void hu_envd_process_send_signal(struct hu_req *r);
void hu_envd_process_close_stdin(struct hu_req *r);
void hu_envd_process_update(struct hu_req *r);
/* End the process calls still in flight (answering their requests): call
 * after hu_http_close() and before hu_http_free() and event_base_free(). */
void hu_envd_process_shutdown(struct hu_daemon *d);
/* filesystem.Filesystem (envd_fs.c) */
void hu_envd_fs_stat(struct hu_req *r);
void hu_envd_fs_make_dir(struct hu_req *r);
void hu_envd_fs_move(struct hu_req *r);
void hu_envd_fs_list_dir(struct hu_req *r);
void hu_envd_fs_remove(struct hu_req *r);
void hu_envd_fs_watch_dir(struct hu_req *r);
/* filesystem.Filesystem's polling watcher (envd_watcher.c) */
void hu_envd_fs_create_watcher(struct hu_req *r);
void hu_envd_fs_get_watcher_events(struct hu_req *r);
void hu_envd_fs_remove_watcher(struct hu_req *r);
/* Remove every watcher (answering creates in flight): call where
 * hu_envd_process_shutdown() is called. */
void hu_envd_watchers_shutdown(struct hu_daemon *d);
/* GET and POST /files (files.c) */
void hu_envd_files_get(struct hu_req *r);
void hu_envd_files_post(struct hu_req *r);

#endif
