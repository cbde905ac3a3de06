/* Token bucket (ratelimit.h). */
#include "util/ratelimit.h"

bool hu_ratelimit_take(struct hu_ratelimit *rl, int64_t now_ms)
{
	if (rl->last_ms && now_ms > rl->last_ms) {
		rl->tokens += (double)(now_ms - rl->last_ms) * rl->rate / 1000.0;
		if (rl->tokens > rl->burst)
			rl->tokens = rl->burst;
	}
	if (!rl->last_ms || now_ms > rl->last_ms)
		rl->last_ms = now_ms;
	if (rl->tokens >= 1.0) {
		rl->tokens -= 1.0;
		return true;
	}
	rl->refused++;
	return false;
}
