/* hu_mount_target_check (sandbox.h): where an extra mount may go. */
#include <string.h>

#include "runtime/sandbox.h"

/* Mount points that would hide or replace what the sandbox's setup builds
 * (its proc, sysfs and /dev) or the read-only system files every sandbox
 * shares (/usr); "/" itself is the sandbox's root. */
static const char *const reserved[] = {"proc", "sys", "dev", "usr"};

int hu_mount_target_check(const char *target, hu_err *err)
{
	size_t n = strlen(target);

	/* negative codes: these messages reach the API as they are */
	if (target[0] != '/')
		return hu_err_set(err, -EINVAL, "mount path '%.64s' is not absolute", target);
	if (n >= HU_MOUNT_TARGET_MAX)
		return hu_err_set(err, -EINVAL, "mount path '%.64s...' is longer than %d bytes", target,
				  HU_MOUNT_TARGET_MAX - 1);
	if (n == 1)
		return hu_err_set(err, -EINVAL, "mount path '/' would replace the sandbox's root");
	for (const char *c = target + 1; *c;) {
		const char *end = strchr(c, '/');
		size_t len = end ? (size_t)(end - c) : strlen(c);
		if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return hu_err_set(err, -EINVAL,
					  "mount path '%.64s' is not normalised (empty, '.' or '..' component)", target);
		if (c == target + 1)
			for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
				if (len == strlen(reserved[i]) && !memcmp(c, reserved[i], len))
					return hu_err_set(err, -EINVAL, "mount path '%.64s' is under /%s, which is reserved",
							  target, reserved[i]);
		c += len;
		if (*c == '/')
			c++;
		if (*c == '\0' && c[-1] == '/')
			return hu_err_set(err, -EINVAL, "mount path '%.64s' ends with '/'", target);
	}
	return 0;
}

int hu_host_path_check(const char *path, hu_err *err)
{
	if (path[0] != '/')
		return hu_err_set(err, -EINVAL, "host path '%.64s' is not absolute", path);
	for (const char *c = path + 1; *c;) {
		const char *end = strchr(c, '/');
		size_t len = end ? (size_t)(end - c) : strlen(c);
		if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return hu_err_set(err, -EINVAL, "host path '%.64s' has an empty, '.' or '..' component", path);
		c += len;
		if (*c == '/')
			c++;
	}
	return 0;
}
