/*
 * Capability dropping with raw syscalls (no libcap: hutch-init links this and
 * must stay small). See caps.h for the policy.
 *
 * Order matters and is the reason for the two separate steps:
 *  1. the bounding set is reduced first, because PR_CAPBSET_DROP needs
 *     CAP_SETPCAP in the effective set, which step 2 may remove;
 *  2. capset() then sets effective = permitted = inheritable = keep (only ever
 *     a reduction, which needs no privilege), and the ambient set is cleared.
 * For a `user` process, the bounding set must therefore be dropped while still
 * root, i.e. before setresuid(); after setresuid() hu_caps_bound_to() fails
 * with EPERM (it never silently leaves the bounding set in place).
 */
#include "runtime/caps.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"

#define CAPBIT(c) (UINT64_C(1) << (c))

/* Documented in caps.h. */
const uint64_t HU_CAPS_ROOT_DEFAULT =
	CAPBIT(CAP_CHOWN) | CAPBIT(CAP_DAC_OVERRIDE) | CAPBIT(CAP_FOWNER) |
	CAPBIT(CAP_FSETID) | CAPBIT(CAP_KILL) | CAPBIT(CAP_SETGID) |
	CAPBIT(CAP_SETUID) | CAPBIT(CAP_SETPCAP) | CAPBIT(CAP_NET_BIND_SERVICE) |
	CAPBIT(CAP_AUDIT_WRITE) | CAPBIT(CAP_SETFCAP);

/* Used when /proc is unreadable (CAP_CHECKPOINT_RESTORE, Linux 5.9). */
#define HU_CAP_LAST_FALLBACK 40
/* The masks are 64 bits wide; the kernel's capability ABI is too (2 x u32). */
#define HU_CAP_LAST_MAX 63

/* The highest capability number the running kernel knows. */
static int cap_last_cap(void)
{
	char buf[16];
	_cleanup_close_ int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return HU_CAP_LAST_FALLBACK;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return HU_CAP_LAST_FALLBACK;
	buf[n] = '\0';
	char *end;
	long v = strtol(buf, &end, 10);
	if (end == buf || v < 0 || v > HU_CAP_LAST_MAX)
		return HU_CAP_LAST_FALLBACK;
	return (int)v;
}

int hu_caps_bound_to(uint64_t keep, hu_err *err)
{
	int last = cap_last_cap();

	for (int cap = 0; cap <= last; cap++) {
		if (keep & CAPBIT(cap))
			continue;
		/* Skip caps already gone: dropping them again would needlessly
		 * require CAP_SETPCAP. */
		int r = prctl(PR_CAPBSET_READ, (unsigned long)cap, 0UL, 0UL, 0UL);
		if (r == 0)
			continue;
		if (r < 0) {
			if (errno == EINVAL) /* not known to this kernel (fallback count) */
				continue;
			return hu_err_sys(err, "read bounding capability %d", cap);
		}
		if (prctl(PR_CAPBSET_DROP, (unsigned long)cap, 0UL, 0UL, 0UL) < 0) {
			if (errno == EINVAL)
				continue;
			return hu_err_sys(err, "drop capability %d from the bounding set", cap);
		}
	}
	return 0;
}

int hu_caps_set(uint64_t keep, hu_err *err)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
		.pid = 0,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };

	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) {
		uint32_t word = (uint32_t)(keep >> (32 * i));
		data[i].effective = word;
		data[i].permitted = word;
		data[i].inheritable = word;
	}
	/* Clear ambient first: ambient caps must stay a subset of permitted
	 * and inheritable, and we want none of them whatever `keep` is. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0UL, 0UL, 0UL) < 0 && errno != EINVAL)
		return hu_err_sys(err, "clear ambient capabilities");
	if (syscall(SYS_capset, &hdr, data) < 0)
		return hu_err_sys(err, "capset(0x%llx)", (unsigned long long)keep);
	return 0;
}

int hu_caps_drop_to(uint64_t keep, hu_err *err)
{
	if (hu_caps_bound_to(keep, err) < 0)
		return -1;
	return hu_caps_set(keep, err);
}
