// fuzz-sources: src/daemon/api/metadata_filter.c
/*
 * libFuzzer driver for the metadata list filter: the input is the value of
 * the `metadata` query parameter after HTTP query decoding, i.e. exactly
 * what a client controls. Whatever decodes must match itself as metadata.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/metadata_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *value = malloc(size + 1);
	json_t *filter = NULL;
	hu_err err;

	if (!value)
		return 0;
	memcpy(value, data, size);
	value[size] = '\0';
	if (hu_metadata_filter_parse(value, &filter, &err) == 0) {
		json_t *empty = json_object();
		if (!hu_metadata_filter_match(filter, filter))
			abort(); /* a filter always matches the metadata it names */
		if (json_object_size(filter) > 0 && hu_metadata_filter_match(filter, empty))
			abort();
		json_decref(empty);
		json_decref(filter);
	} else if (filter || (err.code != EINVAL && err.code != ENOMEM)) {
		abort(); /* failures hand out nothing and say EINVAL */
	}
	free(value);
	return 0;
}
