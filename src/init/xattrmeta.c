#include "init/xattrmeta.h"

#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

#include "util/filemeta.h"

#define PREFIX_LEN (sizeof(HU_META_XATTR_PREFIX) - 1)
#define NAMES_MAX 65536 /* the kernel's limit for one listxattr */

static bool is_meta_name(const char *name)
{
	return !strncmp(name, HU_META_XATTR_PREFIX, PREFIX_LEN) && name[PREFIX_LEN];
}

int hu_xmeta_replace(int fd, char *const *metav, size_t metac, hu_err *err)
{
	static char names[NAMES_MAX];
	ssize_t n = flistxattr(fd, names, sizeof(names));

	if (n < 0 && errno != ENOTSUP)
		return hu_err_sys(err, "list extended attributes");
	for (ssize_t off = 0; n > 0 && off < n; off += (ssize_t)strlen(names + off) + 1)
		if (is_meta_name(names + off) && fremovexattr(fd, names + off) < 0 && errno != ENODATA)
			return hu_err_sys(err, "remove attribute %s", names + off);
	for (size_t i = 0; i < metac; i++) {
		char name[PREFIX_LEN + HU_META_KEY_MAX + 1];
		const char *eq = strchr(metav[i], '='); /* the decoder checked the form */
		snprintf(name, sizeof(name), "%s%.*s", HU_META_XATTR_PREFIX, (int)(eq - metav[i]), metav[i]);
		if (fsetxattr(fd, name, eq + 1, strlen(eq + 1), 0) < 0)
			return hu_err_sys(err, "set metadata %s", name + PREFIX_LEN);
	}
	return 0;
}

void hu_xmeta_put(struct hu_buf *b, const char *path)
{
	static char names[NAMES_MAX];
	char value[HU_META_VALUE_MAX + 1];
	char kv[HU_META_KEY_MAX + HU_META_VALUE_MAX + 2];
	ssize_t n = llistxattr(path, names, sizeof(names));

	for (ssize_t off = 0; n > 0 && off < n; off += (ssize_t)strlen(names + off) + 1) {
		const char *name = names + off;
		if (!is_meta_name(name))
			continue;
		const char *key = name + PREFIX_LEN;
		ssize_t vlen = lgetxattr(path, name, value, sizeof(value) - 1);
		if (vlen < 0 || !hu_meta_key_valid(key, strlen(key)) || !hu_meta_value_valid(value, (size_t)vlen))
			continue;
		value[vlen] = '\0';
		snprintf(kv, sizeof(kv), "%s=%s", key, value);
		hu_put_str(b, HU_F_META, kv);
	}
}
