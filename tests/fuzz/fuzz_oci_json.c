// fuzz-sources: src/template/tpl_oci.c src/template/tpl_meta.c src/template/tpl_path.c src/template/tpl_archive.c src/template/archive_lib.c src/template/tpl_write.c
/*
 * libFuzzer driver for the JSON a template build reads: an OCI image index,
 * a manifest, an image config (tpl_oci.c) and a template's own description
 * (tpl_meta.c). The first byte picks the parser. A parser either refuses
 * with an error or gives values within their bounds: digests are exactly
 * "sha256:" + 64 lowercase hex (they become file names under blobs/), a
 * working directory is absolute, a user name has no ':' or '/'.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "template/template.h"

/* The runtime's id rule (runtime/sandbox.c), restated so that this driver
 * does not link the whole runtime. */
int hu_sandbox_id_valid(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n >= HU_ID_MAX || id[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') || id[i] == '-'))
			return 0;
	return 1;
}

static void check_digest(const char *d)
{
	if (strlen(d) != 71 || strncmp(d, "sha256:", 7))
		abort();
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *json = (const char *)data + 1;
	size_t len = size - 1;
	hu_err err;
	switch (data[0] % 4) {
	case 0: {
		char d[HU_OCI_DIGEST_MAX];
		int nested;
		if (hu_oci_pick_manifest(json, len, d, &nested, &err) == 0)
			check_digest(d);
		break;
	}
	case 1: {
		char cfg[HU_OCI_DIGEST_MAX], layers[8][HU_OCI_DIGEST_MAX];
		size_t n = 99;
		if (hu_oci_manifest_layers(json, len, cfg, layers, 8, &n, &err) == 0) {
			check_digest(cfg);
			if (n > 8)
				abort();
			for (size_t i = 0; i < n; i++)
				check_digest(layers[i]);
		}
		break;
	}
	case 2: {
		struct hu_tpl_image_config c = {0};
		if (hu_oci_image_config(json, len, &c, &err) == 0) {
			if (c.cwd[0] && c.cwd[0] != '/')
				abort();
			if (strchr(c.user, ':') || strchr(c.user, '/'))
				abort();
		}
		json_decref(c.envs);
		break;
	}
	case 3: {
		struct hu_tpl_meta m;
		if (hu_tpl_meta_parse(json, len, &m, &err) == 0) {
			if (!hu_sandbox_id_valid(m.id) || !m.envs)
				abort();
			json_decref(hu_tpl_meta_json(&m));
			hu_tpl_meta_free(&m);
		}
		break;
	}
	}
	return 0;
}
