#include "daemon/envd/meta_headers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HEADER_PREFIX "X-Metadata-"
#define HEADER_PREFIX_LEN (sizeof(HEADER_PREFIX) - 1)

int hu_meta_set_add_header(struct hu_meta_set *m, const char *name, const char *value, hu_err *err)
{
	if (strncasecmp(name, HEADER_PREFIX, HEADER_PREFIX_LEN))
		return 0;
	const char *key = name + HEADER_PREFIX_LEN;
	size_t klen = strlen(key), vlen = strlen(value);
	if (!hu_meta_key_valid(key, klen))
		return hu_err_set(err, EINVAL, "header %.64s: the metadata key must be a non-empty HTTP token of at most %d bytes",
				  name, HU_META_KEY_MAX);
	if (!hu_meta_value_valid(value, vlen))
		return hu_err_set(err, EINVAL, "header %.64s: the metadata value must be printable ASCII of at most %d bytes",
				  name, HU_META_VALUE_MAX);
	char *kv = malloc(klen + vlen + 2);
	if (!kv)
		return hu_err_set(err, ENOMEM, "metadata");
	snprintf(kv, klen + vlen + 2, "%s=%s", key, value);
	for (size_t i = 0; i < m->n; i++) {
		if (!strncmp(m->kv[i], kv, klen + 1)) {
			free(m->kv[i]);
			m->kv[i] = kv;
			return 0;
		}
	}
	if (m->n >= HU_META_MAX_PAIRS) {
		free(kv);
		return hu_err_set(err, EINVAL, "more than %d X-Metadata-* headers", HU_META_MAX_PAIRS);
	}
	m->kv[m->n++] = kv;
	return 0;
}

int hu_meta_set_from_headers(struct hu_meta_set *m, const struct evkeyvalq *h, hu_err *err)
{
	const struct evkeyval *kv;
	TAILQ_FOREACH(kv, h, next)
		if (hu_meta_set_add_header(m, kv->key, kv->value, err) < 0)
			return -1;
	return 0;
}

void hu_meta_set_clear(struct hu_meta_set *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->kv[i]);
	m->n = 0;
}
