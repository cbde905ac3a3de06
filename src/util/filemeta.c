#include "util/filemeta.h"

#include <string.h>

bool hu_meta_key_valid(const char *key, size_t len)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~";
	if (len == 0 || len > HU_META_KEY_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = key[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (c == '\0' || !strchr(tchar, c)))
			return false;
	}
	return true;
}

bool hu_meta_value_valid(const char *value, size_t len)
{
	if (len > HU_META_VALUE_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (value[i] < 0x20 || value[i] > 0x7e)
			return false;
	return true;
}

int hu_meta_split(const char *kv, const char **value, size_t *key_len, hu_err *err)
{
	const char *eq = strchr(kv, '=');
	if (!eq)
		return hu_err_set(err, EINVAL, "metadata entry is not key=value");
	*key_len = (size_t)(eq - kv);
	*value = eq + 1;
	if (!hu_meta_key_valid(kv, *key_len))
		return hu_err_set(err, EINVAL, "metadata key must be a non-empty HTTP token of at most %d bytes",
				  HU_META_KEY_MAX);
	if (!hu_meta_value_valid(*value, strlen(*value)))
		return hu_err_set(err, EINVAL, "metadata value must be printable ASCII of at most %d bytes",
				  HU_META_VALUE_MAX);
	return 0;
}
