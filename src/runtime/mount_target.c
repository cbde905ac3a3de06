/* hu_mount_target_check, hu_mounts_check, hu_tmpfs_arg_parse (sandbox.h):
 * where an extra mount may go, and what a list of them may hold. */
#include <string.h>

#include "runtime/sandbox.h"
#include "util/parse.h"

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

uint64_t hu_sandbox_shm_bytes(const struct hu_cgroup_limits *limits)
{
	return limits->memory_bytes ? limits->memory_bytes / 2 : 64ull << 20;
}

/* A tmpfs's size: never 0, which tmpfs reads as "no limit", and never more
 * than the memory its pages are charged to. */
static int tmpfs_size_check(const struct hu_mount_spec *m, uint64_t memory_bytes, hu_err *err)
{
	if (m->tmpfs_bytes == 0)
		return hu_err_set(err, -EINVAL, "tmpfs %.64s: size 0 (tmpfs would read it as unlimited)", m->target);
	if (memory_bytes && m->tmpfs_bytes > memory_bytes)
		return hu_err_set(err, -EINVAL,
				  "tmpfs %.64s: size %llu is larger than the memory limit (%llu), which its pages count against",
				  m->target, (unsigned long long)m->tmpfs_bytes, (unsigned long long)memory_bytes);
	return 0;
}

int hu_mounts_check(const struct hu_mount_spec *mounts, size_t n, uint64_t memory_bytes, hu_err *err)
{
	if (n > HU_MOUNTS_MAX)
		return hu_err_set(err, -EINVAL, "%zu mounts; at most %d are allowed", n, HU_MOUNTS_MAX);
	for (size_t i = 0; i < n; i++) {
		const struct hu_mount_spec *m = &mounts[i];
		if (hu_mount_target_check(m->target, err) < 0)
			return -1;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(mounts[j].target, m->target))
				return hu_err_set(err, -EINVAL, "mount path '%.64s' is mounted twice", m->target);
		if (m->type != HU_MOUNT_TYPE_DIR && m->type != HU_MOUNT_TYPE_TMPFS)
			return hu_err_set(err, -EINVAL, "mount %.64s: unknown type %d", m->target, (int)m->type);
		if (m->type == HU_MOUNT_TYPE_TMPFS && tmpfs_size_check(m, memory_bytes, err) < 0)
			return -1;
	}
	return 0;
}

int hu_tmpfs_arg_parse(char *arg, struct hu_mount_spec *m, hu_err *err)
{
	char *colon = strchr(arg, ':');

	*m = (struct hu_mount_spec){.type = HU_MOUNT_TYPE_TMPFS, .source_fd = -1, .target = arg};
	if (colon) {
		*colon = '\0';
		if (hu_parse_size(colon + 1, &m->tmpfs_bytes, err) < 0) {
			hu_err_prefix(err, "--tmpfs %.64s", arg);
			return -1;
		}
		if (m->tmpfs_bytes == 0)
			return hu_err_set(err, -EINVAL,
					  "--tmpfs %.64s: size 0 (a tmpfs needs a cap; leave SIZE out for the default)", arg);
	}
	if (hu_mount_target_check(arg, err) < 0) {
		hu_err_prefix(err, "--tmpfs");
		return -1;
	}
	return 0;
}
