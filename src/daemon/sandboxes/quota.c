/* Per-team quotas (quota.h). */
#include "daemon/sandboxes/quota.h"

#include <string.h>

#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/sandbox_ops.h"

#define MIB (1024ull * 1024ull)

struct tally {
	const char *team;
	struct hu_team_use *use;
};

static int count_one(struct hu_sbx *s, void *arg)
{
	struct tally *t = arg;

	if (strcmp(s->team, t->team))
		return 0;
	if (s->state == HU_SBX_RUNNING)
		t->use->sandboxes++;
	if (s->state == HU_SBX_RUNNING || (s->state == HU_SBX_PAUSED && !s->released))
		t->use->memory_bytes += s->memory_bytes;
	return 0;
}

static void count_pending(const struct hu_sbx *s, void *arg)
{
	struct tally *t = arg;

	if (strcmp(s->team, t->team))
		return;
	t->use->sandboxes++;
	t->use->memory_bytes += s->memory_bytes;
}

void hu_team_use(struct hu_daemon *d, const char *team, struct hu_team_use *use)
{
	struct tally t = {.team = team, .use = use};

	memset(use, 0, sizeof(*use));
	if (d->reg)
		hu_registry_each(d->reg, count_one, &t);
	hu_sbx_each_pending(d, count_pending, &t);
}

int hu_quota_check_sandbox(struct hu_daemon *d, const char *team, uint64_t memory_bytes, hu_err *err)
{
	const struct hu_config *cfg = &d->cfg;
	struct hu_team_use use;

	if (!cfg->quota_sandboxes && !cfg->quota_memory_bytes)
		return 0;
	hu_team_use(d, team, &use);
	if (cfg->quota_sandboxes && use.sandboxes + 1 > cfg->quota_sandboxes)
		return hu_err_set(err, -EAGAIN,
				  "team '%s' is at its quota of %u running sandboxes (quota.sandboxes); kill or pause one "
				  "first",
				  team, cfg->quota_sandboxes);
	if (cfg->quota_memory_bytes && use.memory_bytes + memory_bytes > cfg->quota_memory_bytes)
		return hu_err_set(err, -EAGAIN,
				  "team '%s' would exceed its memory quota: its sandboxes hold %llu MiB, this one asks "
				  "%llu MiB, the quota is %llu MiB (quota.memory)",
				  team, (unsigned long long)(use.memory_bytes / MIB), (unsigned long long)(memory_bytes / MIB),
				  (unsigned long long)(cfg->quota_memory_bytes / MIB));
	return 0;
}

int hu_quota_check_resume(struct hu_daemon *d, const struct hu_sbx *s, hu_err *err)
{
	/* a paused sandbox that kept its memory is already counted in it */
	return hu_quota_check_sandbox(d, s->team, s->released ? s->memory_bytes : 0, err);
}

int hu_quota_check_build(const struct hu_daemon *d, const char *team, unsigned running, hu_err *err)
{
	if (d->cfg.quota_builds && running + 1 > d->cfg.quota_builds)
		return hu_err_set(err, -EAGAIN, "team '%s' is at its quota of %u template builds at once (quota.builds)",
				  team, d->cfg.quota_builds);
	return 0;
}
