/* The store's values (rows.h). */
#include "daemon/store/rows.h"

#include <string.h>

const char *hu_store_state_name(enum hu_sbx_state state)
{
	switch (state) {
	case HU_SBX_PAUSED: return "paused";
	case HU_SBX_CREATING: return "creating";
	case HU_SBX_KILLING: return "killing";
	case HU_SBX_RUNNING: break;
	}
	return "running";
}

enum hu_sbx_state hu_store_state_parse(const char *name)
{
	if (!strcmp(name, "paused"))
		return HU_SBX_PAUSED;
	if (!strcmp(name, "creating"))
		return HU_SBX_CREATING;
	if (!strcmp(name, "killing"))
		return HU_SBX_KILLING;
	return HU_SBX_RUNNING;
}

void hu_sandbox_row_clear(struct hu_sandbox_row *row)
{
	json_decref(row->metadata);
	json_decref(row->env_vars);
	json_decref(row->mounts);
	json_decref(row->network);
	row->metadata = row->env_vars = row->mounts = row->network = NULL;
}

