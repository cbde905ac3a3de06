// fuzz-sources: src/daemon/api/mounts_json.c src/runtime/mount_target.c
/*
 * libFuzzer driver for a new sandbox's mount requests and the new-volume
 * body (mounts_json.h). The first byte picks the decoder: 'h' the value of
 * metadata["host-mount"] (the rest, as text), 'v' a volumeMounts array, 'n'
 * a POST /volumes body (both parsed as JSON first). Whatever is accepted
 * must be safe to mount: every mount point passes hu_mount_target_check,
 * every host path is absolute and normalised, no two mounts share a point,
 * and there are at most HU_MOUNTS_MAX. A refusal is EINVAL (or ENOMEM).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/mounts_json.h"

static void check_accepted(const struct hu_mount_reqs *r)
{
	hu_err err;

	if (r->n > HU_MOUNTS_MAX)
		abort();
	for (size_t i = 0; i < r->n; i++) {
		const struct hu_mount_req *m = &r->m[i];
		if (hu_mount_target_check(m->path, &err) < 0)
			abort();
		if (m->kind == HU_MOUNT_HOST && hu_host_path_check(m->host_path, &err) < 0)
			abort();
		if (m->kind == HU_MOUNT_VOLUME && !hu_volume_name_valid(m->volume))
			abort();
		if (m->kind != HU_MOUNT_HOST && m->kind != HU_MOUNT_VOLUME)
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(r->m[j].path, m->path))
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hu_mount_reqs *r;
	char *text;
	hu_err err;
	int rc;

	if (size < 1)
		return 0;
	text = malloc(size);
	r = calloc(1, sizeof(*r));
	if (!text || !r)
		goto out;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (data[0] == 'h') {
		rc = hu_api_decode_host_mounts(text, r, &err);
	} else {
		json_error_t jerr;
		json_t *v = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
		if (!v)
			goto out;
		if (data[0] == 'n') {
			char name[HU_VOLUME_NAME_MAX];
			uint64_t bytes;
			rc = hu_api_decode_new_volume(v, name, &bytes, &err);
			if (rc == 0 && (!hu_volume_name_valid(name) ||
					(bytes && (bytes < HU_VOLUME_MIN_SIZE || bytes > HU_VOLUME_MAX_SIZE))))
				abort();
		} else {
			rc = hu_api_decode_volume_mounts(v, r, &err);
		}
		json_decref(v);
	}
	if (rc == 0)
		check_accepted(r);
	else if (err.code != EINVAL && err.code != ENOMEM)
		abort();
out:
	free(r);
	free(text);
	return 0;
}
