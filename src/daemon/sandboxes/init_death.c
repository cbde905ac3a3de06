/* Why a hutch-init died, and a short memory of it (init_death.h). */
#include "daemon/sandboxes/init_death.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

void hu_init_death_describe(const siginfo_t *si, uint64_t oom_kills, char *out, size_t n)
{
	char how[64] = "for an unknown reason";

	if (si && (si->si_code == CLD_KILLED || si->si_code == CLD_DUMPED)) {
		const char *name = sigabbrev_np(si->si_status);
		snprintf(how, sizeof(how), "killed by SIG%s%s", name ? name : "?", si->si_code == CLD_DUMPED ? " (core)" : "");
	} else if (si && si->si_code == CLD_EXITED) {
		snprintf(how, sizeof(how), "exited with status %d", si->si_status);
	}
	if (oom_kills)
		snprintf(out, n, "hutch-init died: %s (memory limit: %llu OOM kill%s in the sandbox)", how,
			 (unsigned long long)oom_kills, oom_kills == 1 ? "" : "s");
	else
		snprintf(out, n, "hutch-init died: %s", how);
}

void hu_deaths_note(struct hu_deaths *d, const char *id, const char *team, const char *token, const char *reason,
		    int64_t now_ms)
{
	struct hu_death *e = &d->v[d->next];
	d->next = (d->next + 1) % HU_DEATHS_MAX;
	*e = (struct hu_death){.at_ms = now_ms};
	snprintf(e->id, sizeof(e->id), "%s", id);
	snprintf(e->team, sizeof(e->team), "%s", team);
	snprintf(e->token, sizeof(e->token), "%s", token);
	snprintf(e->reason, sizeof(e->reason), "%s", reason);
}

const char *hu_deaths_find(const struct hu_deaths *d, const char *id, const char *team, const char *token,
			   int64_t now_ms)
{
	const char *found = NULL;

	/* the newest record of id wins: scan all (a few hundred compares) */
	for (unsigned k = 0; k < HU_DEATHS_MAX; k++) {
		const struct hu_death *e = &d->v[(d->next + k) % HU_DEATHS_MAX];
		if (!e->id[0] || strcmp(e->id, id) || now_ms - e->at_ms > HU_DEATH_KEEP_MS || now_ms < e->at_ms)
			continue;
		if (team ? strcmp(team, e->team) != 0
			 : !token || strlen(token) != strlen(e->token) || !e->token[0] ||
				   CRYPTO_memcmp(token, e->token, strlen(token)) != 0)
			continue;
		found = e->reason;
	}
	return found;
}
