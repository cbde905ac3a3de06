/* The routing table of hutch serve (routes.h). */
#include "daemon/routes.h"

#include "daemon/api/handlers.h"
#include "daemon/envd/handlers.h"
#include "util/cleanup.h"

#define GET EVHTTP_REQ_GET
#define POST EVHTTP_REQ_POST
#define PUT EVHTTP_REQ_PUT
#define DELETE EVHTTP_REQ_DELETE
#define KEY HU_AUTH_API_KEY

const struct hu_route hu_control_routes[] = {
	/* sandboxes (docs/api.md "Control plane") */
	{POST, "/v2/sandboxes", KEY, hu_api_create_sandbox},
	{POST, "/sandboxes", KEY, hu_api_create_sandbox},
	{GET, "/v2/sandboxes", KEY, hu_api_list_v2},
	{GET, "/sandboxes", KEY, hu_api_list_v1},
	{GET, "/sandboxes/{id}", KEY, hu_api_get_sandbox},
	{DELETE, "/sandboxes/{id}", KEY, hu_api_kill_sandbox},
	{POST, "/sandboxes/{id}/timeout", KEY, hu_api_set_timeout},
	{POST, "/sandboxes/{id}/refreshes", KEY, hu_api_refresh},
	{POST, "/sandboxes/{id}/pause", KEY, hu_api_pause_sandbox},
	{POST, "/sandboxes/{id}/resume", KEY, hu_api_resume_sandbox},
	{POST, "/v2/sandboxes/{id}/connect", KEY, hu_api_connect_sandbox},
	{POST, "/sandboxes/{id}/connect", KEY, hu_api_connect_sandbox},
	{GET, "/sandboxes/{id}/metrics", KEY, hu_api_get_sandbox_metrics},
	{PUT, "/sandboxes/{id}/network", KEY, hu_api_put_network},
	{GET, "/sandboxes/{id}/logs", KEY, hu_api_get_logs_v1},
	{GET, "/v2/sandboxes/{id}/logs", KEY, hu_api_get_logs_v2},
	/* snapshots and forks of a sandbox's files */
	{POST, "/sandboxes/{id}/snapshots", KEY, hu_api_create_snapshot},
	{GET, "/snapshots", KEY, hu_api_list_snapshots},
	{POST, "/sandboxes/{id}/fork", KEY, hu_api_fork_sandbox},
	/* templates */
	{GET, "/templates", KEY, hu_api_list_templates},
	{GET, "/templates/{id}", KEY, hu_api_get_template},
	{DELETE, "/templates/{id}", KEY, hu_api_delete_template},
	{GET, "/templates/aliases/{id}", KEY, hu_api_get_template_alias},
	{POST, "/templates", KEY, hu_api_build_template},
	/* volumes */
	{POST, "/volumes", KEY, hu_api_create_volume},
	{GET, "/volumes", KEY, hu_api_list_volumes},
	{GET, "/volumes/{id}", KEY, hu_api_get_volume},
	{DELETE, "/volumes/{id}", KEY, hu_api_delete_volume},
	/* aggregates that name no sandbox or team: no key */
	{GET, "/metrics", HU_AUTH_NONE, hu_api_get_metrics},
};
const size_t hu_n_control_routes = HU_ARRAY_LEN(hu_control_routes);

const struct hu_route hu_data_routes[] = {
	{POST, "/process.Process/Start", 0, hu_envd_process_start},
	{POST, "/process.Process/Connect", 0, hu_envd_process_connect},
	{POST, "/process.Process/List", 0, hu_envd_process_list},
	{POST, "/process.Process/SendInput", 0, hu_envd_process_send_input},
	{POST, "/process.Process/SendSignal", 0, hu_envd_process_send_signal},
	{POST, "/process.Process/CloseStdin", 0, hu_envd_process_close_stdin},
	{POST, "/process.Process/Update", 0, hu_envd_process_update},
	{POST, "/filesystem.Filesystem/Stat", 0, hu_envd_fs_stat},
	{POST, "/filesystem.Filesystem/MakeDir", 0, hu_envd_fs_make_dir},
	{POST, "/filesystem.Filesystem/Move", 0, hu_envd_fs_move},
	{POST, "/filesystem.Filesystem/ListDir", 0, hu_envd_fs_list_dir},
	{POST, "/filesystem.Filesystem/Remove", 0, hu_envd_fs_remove},
	{POST, "/filesystem.Filesystem/WatchDir", 0, hu_envd_fs_watch_dir},
	{POST, "/filesystem.Filesystem/CreateWatcher", 0, hu_envd_fs_create_watcher},
	{POST, "/filesystem.Filesystem/GetWatcherEvents", 0, hu_envd_fs_get_watcher_events},
	{POST, "/filesystem.Filesystem/RemoveWatcher", 0, hu_envd_fs_remove_watcher},
	{GET, "/files", 0, hu_envd_files_get},
	{POST, "/files", 0, hu_envd_files_post},
};
const size_t hu_n_data_routes = HU_ARRAY_LEN(hu_data_routes);

int hu_routes_check(hu_err *err)
{
	for (size_t i = 0; i < hu_n_control_routes; i++)
		if (!hu_route_pattern_valid(hu_control_routes[i].pattern))
			return hu_err_set(err, EINVAL, "route pattern '%s' is invalid", hu_control_routes[i].pattern);
	for (size_t i = 0; i < hu_n_data_routes; i++)
		if (!hu_route_pattern_valid(hu_data_routes[i].pattern))
			return hu_err_set(err, EINVAL, "route pattern '%s' is invalid", hu_data_routes[i].pattern);
	return 0;
}
