/* Is kernel.core_pattern safe for sandboxes (coredump.h)? */
#include "runtime/coredump.h"

#include <string.h>

#include "util/fileutil.h"

int hu_core_pattern_read(char *buf, size_t cap, hu_err *err)
{
	if (hu_read_file(HU_CORE_PATTERN_FILE, buf, cap, err) < 0) {
		hu_err_prefix(err, "kernel.core_pattern");
		return -1;
	}
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int hu_core_pattern_safe(const char *pattern, hu_err *err)
{
	if (pattern[0] == '@')
		return hu_err_set(err, -EPERM,
				  "kernel.core_pattern is a socket (%.200s): the kernel sends every crash inside a "
				  "sandbox to it whatever RLIMIT_CORE is; set a pipe (|...) or file pattern to run sandboxes",
				  pattern);
	return 0;
}

int hu_core_pattern_check(hu_err *err)
{
	char pat[256];

	if (hu_core_pattern_read(pat, sizeof(pat), err) < 0)
		return -1;
	return hu_core_pattern_safe(pat, err);
}
