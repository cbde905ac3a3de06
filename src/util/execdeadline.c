#include "util/execdeadline.h"

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int hu_exec_deadline_arm(unsigned ms, hu_err *err)
{
	/* glibc's struct sigevent has the kernel's layout for SIGEV_SIGNAL;
	 * the kernel's timer id is an int. SIGKILL: no handler, no mask. */
	struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGKILL};
	struct itimerspec when = {.it_value = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L}};
	int id;

	if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &id) < 0)
		return hu_err_sys(err, "timer_create");
	if (syscall(SYS_timer_settime, id, 0, &when, NULL) < 0)
		return hu_err_sys(err, "timer_settime");
	return 0;
}
