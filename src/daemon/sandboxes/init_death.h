/*
 * When a sandbox's hutch-init dies on its own (killed by the OOM killer at
 * the sandbox's memory limit, a crash, root inside killing it), the daemon
 * logs why and remembers it for a while, so that requests for the gone
 * sandbox answer "hutch-init died: killed by SIGKILL (memory limit)"
 * instead of a bare not-found. The record is bounded (HU_DEATHS_MAX,
 * HU_DEATH_KEEP_MS) and answers only the sandbox's team (control plane) or
 * a holder of its access token (data plane).
 */
#ifndef HUTCH_DAEMON_INIT_DEATH_H
#define HUTCH_DAEMON_INIT_DEATH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define HU_DEATHS_MAX 256
#define HU_DEATH_KEEP_MS (15 * 60 * 1000)
#define HU_DEATH_REASON_MAX 160

/* Pure: "hutch-init died: killed by SIGKILL (memory limit: 1 OOM kill)",
 * "... exited with status 3", from the waitid() siginfo (NULL: unknown)
 * and the cgroup's oom_kill count. */
void hu_init_death_describe(const siginfo_t *si, uint64_t oom_kills, char *out, size_t n);

struct hu_death {
	char id[64];
	char team[64];
	char token[65];
	char reason[HU_DEATH_REASON_MAX];
	int64_t at_ms; /* monotonic */
};

struct hu_deaths {
	struct hu_death v[HU_DEATHS_MAX];
	unsigned next;
};

void hu_deaths_note(struct hu_deaths *d, const char *id, const char *team, const char *token, const char *reason,
		    int64_t now_ms);
/* The reason recorded for id, if it is recent and team (or token, when
 * team is NULL) matches; else NULL. */
const char *hu_deaths_find(const struct hu_deaths *d, const char *id, const char *team, const char *token,
			   int64_t now_ms);

#endif
