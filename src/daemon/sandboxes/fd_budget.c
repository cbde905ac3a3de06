/* The daemon's descriptor budget (fd_budget.h). */
#include "daemon/sandboxes/fd_budget.h"

#include <dirent.h>
#include <sys/resource.h>

uint64_t hu_fd_reserve(uint64_t limit)
{
	uint64_t r = limit / 8;
	return r < HU_FD_RESERVE_MIN ? HU_FD_RESERVE_MIN : r;
}

uint64_t hu_fd_needed(uint64_t base, uint64_t limit, uint64_t held, uint64_t creating)
{
	return base + hu_fd_reserve(limit) + held * HU_FD_PER_SANDBOX + creating * HU_FD_PER_CREATE;
}

uint64_t hu_fd_sandboxes_allowed(uint64_t base, uint64_t limit)
{
	/* the last one is admitted while it is being created */
	uint64_t fixed = base + hu_fd_reserve(limit) + HU_FD_PER_CREATE;
	return limit > fixed ? (limit - fixed) / HU_FD_PER_SANDBOX : 0;
}

/* Open descriptors now, or 0 if /proc/self/fd cannot be read. */
static uint64_t count_open(void)
{
	uint64_t n = 0;
	struct dirent *e;
	DIR *dir = opendir("/proc/self/fd");

	if (!dir)
		return 0;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.')
			n++;
	closedir(dir);
	return n ? n - 1 : 0; /* less the directory's own */
}

void hu_fd_budget_read(uint64_t held_now, uint64_t *limit, uint64_t *base)
{
	static uint64_t cached_limit, cached_base;
	static int valid;

	if (!valid) {
		struct rlimit rl;
		cached_limit = getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX
												    : rl.rlim_cur;
		/* sandboxes adopted at start already hold theirs */
		uint64_t open_now = count_open(), theirs = held_now * HU_FD_PER_SANDBOX;
		cached_base = !open_now ? HU_FD_BASE_TYPICAL : open_now > theirs ? open_now - theirs : 0;
		valid = 1;
	}
	*limit = cached_limit;
	*base = cached_base;
}
