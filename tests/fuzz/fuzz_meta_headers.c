// fuzz-sources: src/daemon/envd/meta_headers.c
/*
 * libFuzzer driver for X-Metadata-* upload headers: the input is header
 * lines "name: value" as a client sends them. Every pair that is accepted
 * must be one hutch-init takes too (hu_meta_split), keys must be unique,
 * and a rejected header must say EINVAL.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/envd/meta_headers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	struct hu_meta_set m = {0};
	hu_err err;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		const char *value = colon + 1;
		while (*value == ' ')
			value++;
		if (hu_meta_set_add_header(&m, line, value, &err) < 0 && err.code != EINVAL && err.code != ENOMEM)
			abort();
	}
	for (size_t i = 0; i < m.n; i++) {
		const char *v;
		size_t klen;
		if (hu_meta_split(m.kv[i], &v, &klen, &err) < 0)
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strncmp(m.kv[j], m.kv[i], klen + 1))
				abort();
	}
	hu_meta_set_clear(&m);
	free(buf);
	return 0;
}
