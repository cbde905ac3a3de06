/* /proc/meminfo (meminfo.h). */
#include "util/meminfo.h"

#include <stdio.h>

int hu_meminfo(uint64_t *total, uint64_t *available, hu_err *err)
{
	char line[256];
	int found = 0;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return hu_err_sys(err, "open /proc/meminfo");
	while (found < 2 && fgets(line, sizeof(line), f)) {
		unsigned long long kb;
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
			*total = kb * 1024;
			found++;
		} else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
			*available = kb * 1024;
			found++;
		}
	}
	fclose(f);
	return found == 2 ? 0 : hu_err_set(err, EIO, "/proc/meminfo lacks MemTotal or MemAvailable");
}
