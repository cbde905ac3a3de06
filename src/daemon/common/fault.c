/* Test-only fault injection (fault.h). */
#include "daemon/common/fault.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/common/log.h"

static const char *fault_point;

void hu_fault_init(void)
{
	const char *v = getenv("HUTCH_FAULT");
	fault_point = v && *v ? v : NULL;
	if (fault_point)
		hu_log(HU_LOG_WARN, NULL, 0, "fault injection armed at '%s' (HUTCH_FAULT; tests only)", fault_point);
}

void hu_fault_point(const char *point)
{
	if (!fault_point || strcmp(point, fault_point))
		return;
	hu_log(HU_LOG_WARN, NULL, 0, "fault injection: dying at '%s'", point);
	raise(SIGKILL);
}
