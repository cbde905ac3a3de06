/* Archive entry paths and OCI whiteout names (template.h). Pure. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "template/template.h"

int hu_tpl_norm_path(const char *raw, char *out, size_t n, hu_err *err)
{
	size_t len = 0;
	const char *p = raw;

	if (n == 0)
		return hu_err_set(err, -ENAMETOOLONG, "path buffer");
	if (*p == '/')
		return hu_err_set(err, -EINVAL, "entry '%.200s': absolute path", raw);
	out[0] = '\0';
	while (*p) {
		const char *end = strchr(p, '/');
		size_t clen = end ? (size_t)(end - p) : strlen(p);
		if (clen == 2 && p[0] == '.' && p[1] == '.')
			return hu_err_set(err, -EINVAL, "entry '%.200s': '..' component", raw);
		if (clen > NAME_MAX)
			return hu_err_set(err, -ENAMETOOLONG, "entry '%.200s': component too long", raw);
		if (clen && !(clen == 1 && p[0] == '.')) {
			if (len + (len ? 1 : 0) + clen + 1 > n)
				return hu_err_set(err, -ENAMETOOLONG, "entry '%.200s': path too long", raw);
			if (len)
				out[len++] = '/';
			memcpy(out + len, p, clen);
			len += clen;
			out[len] = '\0';
		}
		p += clen;
		while (*p == '/')
			p++;
	}
	return 0;
}

enum hu_tpl_wh hu_tpl_whiteout(const char *norm, char *target, size_t n)
{
	const char *slash = strrchr(norm, '/');
	const char *base = slash ? slash + 1 : norm;
	size_t dirlen = slash ? (size_t)(slash - norm) : 0;

	if (strncmp(base, ".wh.", 4))
		return HU_TPL_WH_NONE;
	if (!strcmp(base, ".wh..wh..opq")) {
		if (dirlen + 1 > n)
			return HU_TPL_WH_META;
		memcpy(target, norm, dirlen);
		target[dirlen] = '\0';
		return HU_TPL_WH_OPAQUE;
	}
	if (!strncmp(base, ".wh..wh.", 8) || !base[4] || !strcmp(base + 4, ".") || !strcmp(base + 4, ".."))
		return HU_TPL_WH_META;
	if ((size_t)snprintf(target, n, "%.*s%s%s", (int)dirlen, norm, dirlen ? "/" : "", base + 4) >= n)
		return HU_TPL_WH_META;
	return HU_TPL_WH_FILE;
}
