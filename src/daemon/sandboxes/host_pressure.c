/* The host's own memory pressure (host_pressure.h). */
#include "daemon/sandboxes/host_pressure.h"

double hu_host_own_psi(double root, double sandboxes, const struct hu_sbx_psi *v, size_t n)
{
	double self = 0;
	int all_self = 1;

	if (root < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i].some_avg10 <= HU_PSI_STALL_MIN)
			continue;
		if (v[i].at_own_limit) {
			if (v[i].some_avg10 > self)
				self = v[i].some_avg10;
		} else {
			all_self = 0;
		}
	}
	if (self == 0)
		return root; /* nothing self-inflicted: every stall is the host's */
	/* the union of the self-limited ones' stalls, when they are all that
	 * stalls among the sandboxes; otherwise the largest (a lower bound,
	 * which errs towards seeing pressure) */
	if (all_self && sandboxes > self)
		self = sandboxes;
	if (self > root)
		self = root;
	if (self >= 99.9)
		return 0; /* nothing else can be seen: MemAvailable still counts */
	double own = (root - self) * 100.0 / (100.0 - self);
	return own < 0 ? 0 : own > 100 ? 100 : own;
}
