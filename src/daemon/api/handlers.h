/*
 * The control plane's handlers: the E2B REST API. src/daemon/routes.c maps
 * each to its method and path (docs/api.md describes them); a handler
 * decodes with api_json.c, acts through the sandboxes layer and answers
 * E2B's JSON. r->principal is the caller's team.
 */
#ifndef HUTCH_DAEMON_API_HANDLERS_H
#define HUTCH_DAEMON_API_HANDLERS_H

#include "daemon/http/request.h"

/* sandboxes (api_sandboxes.c, api_list.c, api_network.c) */
void hu_api_create_sandbox(struct hu_req *r);
void hu_api_list_v2(struct hu_req *r);
void hu_api_list_v1(struct hu_req *r);
void hu_api_get_sandbox(struct hu_req *r);
void hu_api_kill_sandbox(struct hu_req *r);
void hu_api_set_timeout(struct hu_req *r);
void hu_api_refresh(struct hu_req *r);
void hu_api_pause_sandbox(struct hu_req *r);
void hu_api_resume_sandbox(struct hu_req *r);
void hu_api_connect_sandbox(struct hu_req *r);
void hu_api_get_sandbox_metrics(struct hu_req *r);
void hu_api_put_network(struct hu_req *r);
/* snapshots and forks (api_snapshots.c); DELETE /templates/{id} removes a snapshot */
void hu_api_create_snapshot(struct hu_req *r);
void hu_api_list_snapshots(struct hu_req *r);
void hu_api_fork_sandbox(struct hu_req *r);
/* logs (api_logs.c) */
void hu_api_get_logs_v1(struct hu_req *r);
void hu_api_get_logs_v2(struct hu_req *r);
/* templates (api_templates.c, api_templates_build.c) */
void hu_api_list_templates(struct hu_req *r);
void hu_api_get_template(struct hu_req *r);
void hu_api_delete_template(struct hu_req *r);
void hu_api_get_template_alias(struct hu_req *r);
void hu_api_build_template(struct hu_req *r);
struct hu_daemon;
/* At shutdown: answer 503 to template builds and log scans still running,
 * and undo them (builder killed, its cgroup and files removed). */
void hu_api_abort_builds(struct hu_daemon *d);
void hu_api_abort_log_scans(struct hu_daemon *d);
/* volumes (api_volumes.c) */
void hu_api_create_volume(struct hu_req *r);
void hu_api_list_volumes(struct hu_req *r);
void hu_api_get_volume(struct hu_req *r);
void hu_api_delete_volume(struct hu_req *r);
/* GET /metrics (api_metrics.c): needs no key */
void hu_api_get_metrics(struct hu_req *r);

#endif
