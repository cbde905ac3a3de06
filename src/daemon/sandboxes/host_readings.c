/* The host's memory, CPUs, pid_max and memory pressure, cached (host_readings.h). */
#include "daemon/sandboxes/host_readings.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/fileutil.h"
#include "util/meminfo.h"
#include "util/parse.h"
#include "util/psi.h"

static uint64_t read_pid_max(void)
{
	char buf[32];
	uint64_t v;
	hu_err ignored;

	if (hu_read_file("/proc/sys/kernel/pid_max", buf, sizeof(buf), &ignored) < 0)
		return 32768;
	buf[strcspn(buf, "\n")] = '\0';
	return hu_parse_u64(buf, &v, &ignored) == 0 ? v : 32768;
}

int hu_host_readings(struct hu_host_readings *out, hu_err *err)
{
	/* the daemon asks from its one loop thread only */
	static struct hu_host_readings cached;
	static int64_t read_at;
	static int valid;
	int64_t now = hu_mono_ms();

	if (!valid || now - read_at >= HU_HOST_READINGS_MAX_AGE_MS || now < read_at) {
		struct hu_host_readings r = {0};
		if (hu_meminfo(&r.mem_total, &r.mem_available, err) < 0)
			return -1;
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		r.cpus = ncpu > 0 ? (uint32_t)ncpu : 1;
		r.pid_max = read_pid_max();
		r.psi_some_avg10 = hu_psi_read_some_avg10(AT_FDCWD, "/proc/pressure/memory");
		cached = r;
		read_at = now;
		valid = 1;
	}
	*out = cached;
	return 0;
}
