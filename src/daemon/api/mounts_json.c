/* Mount requests of a new sandbox and the new-volume body (mounts_json.h). */
#include "daemon/api/mounts_json.h"

#include <stdio.h>
#include <string.h>

#include "util/parse.h"

#define BAD(err, ...) hu_err_set((err), -EINVAL, __VA_ARGS__)

static const json_t *field(const json_t *obj, const char *name)
{
	const json_t *v = json_object_get(obj, name);
	return json_is_null(v) ? NULL : v;
}

/* A string field without NUL bytes that fits `cap` (with its NUL). */
static int string_field(const json_t *obj, const char *name, const char *where, size_t i, char *out, size_t cap,
			hu_err *err)
{
	const json_t *v = field(obj, name);
	if (!v)
		return BAD(err, "%s[%zu].%s is required", where, i, name);
	if (!json_is_string(v))
		return BAD(err, "%s[%zu].%s must be a string", where, i, name);
	size_t len = json_string_length(v);
	if (len == 0 || len >= cap || strlen(json_string_value(v)) != len)
		return BAD(err, "%s[%zu].%s must be 1 to %zu bytes without NUL", where, i, name, cap - 1);
	memcpy(out, json_string_value(v), len + 1);
	return 0;
}

static int bool_field(const json_t *obj, const char *name, const char *where, size_t i, int *out, hu_err *err)
{
	const json_t *v = field(obj, name);
	*out = 0;
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return BAD(err, "%s[%zu].%s must be a boolean", where, i, name);
	*out = json_is_true(v);
	return 0;
}

int hu_volume_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n >= HU_VOLUME_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return 0;
	}
	return 1;
}


/* The new entry's mount point is acceptable and not taken. */
static int check_new(struct hu_mount_reqs *out, const char *where, size_t i, hu_err *err)
{
	struct hu_mount_req *m = &out->m[out->n];
	if (hu_mount_target_check(m->path, err) < 0) {
		hu_err_prefix(err, "%s[%zu]", where, i);
		return -1;
	}
	for (size_t j = 0; j < out->n; j++)
		if (!strcmp(out->m[j].path, m->path))
			return BAD(err, "%s[%zu]: %s is mounted twice", where, i, m->path);
	out->n++;
	return 0;
}

static int room(const struct hu_mount_reqs *out, hu_err *err)
{
	if (out->n >= HU_MOUNTS_MAX)
		return BAD(err, "at most %d mounts (volumes and host mounts) per sandbox", HU_MOUNTS_MAX);
	return 0;
}

int hu_api_decode_volume_mounts(const json_t *arr, struct hu_mount_reqs *out, hu_err *err)
{
	const char *where = "volumeMounts";
	size_t i;
	json_t *e;

	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return BAD(err, "volumeMounts must be an array of {name, path}");
	json_array_foreach((json_t *)arr, i, e) {
		if (room(out, err) < 0)
			return -1;
		struct hu_mount_req *m = &out->m[out->n];
		memset(m, 0, sizeof(*m));
		m->kind = HU_MOUNT_VOLUME;
		if (!json_is_object(e))
			return BAD(err, "volumeMounts[%zu] must be an object {name, path}", i);
		if (string_field(e, "name", where, i, m->volume, sizeof(m->volume), err) < 0 ||
		    string_field(e, "path", where, i, m->path, sizeof(m->path), err) < 0 ||
		    bool_field(e, "readOnly", where, i, &m->read_only, err) < 0)
			return -1;
		if (!hu_volume_name_valid(m->volume))
			return BAD(err, "volumeMounts[%zu].name: '%s' is not a volume name", i, m->volume);
		if (check_new(out, where, i, err) < 0)
			return -1;
	}
	return 0;
}

int hu_api_decode_host_mounts(const char *text, struct hu_mount_reqs *out, hu_err *err)
{
	const char *where = "host-mount";
	json_error_t jerr;
	json_t *arr = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	size_t i;
	json_t *e;
	int rc = -1;

	if (!arr)
		return BAD(err, "metadata[\"host-mount\"] is not valid JSON: %s", jerr.text);
	if (!json_is_array(arr)) {
		BAD(err, "metadata[\"host-mount\"] must be a JSON array of {hostPath, mountPath, readOnly}");
		goto out;
	}
	json_array_foreach(arr, i, e) {
		if (room(out, err) < 0)
			goto out;
		struct hu_mount_req *m = &out->m[out->n];
		memset(m, 0, sizeof(*m));
		m->kind = HU_MOUNT_HOST;
		if (!json_is_object(e)) {
			BAD(err, "host-mount[%zu] must be an object {hostPath, mountPath, readOnly}", i);
			goto out;
		}
		if (string_field(e, "hostPath", where, i, m->host_path, sizeof(m->host_path), err) < 0 ||
		    string_field(e, "mountPath", where, i, m->path, sizeof(m->path), err) < 0 ||
		    bool_field(e, "readOnly", where, i, &m->read_only, err) < 0)
			goto out;
		if (hu_host_path_check(m->host_path, err) < 0) {
			hu_err_prefix(err, "host-mount[%zu]", i);
			goto out;
		}
		if (check_new(out, where, i, err) < 0)
			goto out;
	}
	rc = 0;
out:
	json_decref(arr);
	return rc;
}

int hu_api_decode_new_volume(const json_t *body, char name[HU_VOLUME_NAME_MAX], uint64_t *size, hu_err *err)
{
	const json_t *n, *sz;

	*size = 0;
	if (!json_is_object(body))
		return BAD(err, "the request body must be a JSON object");
	n = field(body, "name");
	if (!n || !json_is_string(n))
		return BAD(err, "name is required (a string)");
	if (json_string_length(n) >= HU_VOLUME_NAME_MAX || strlen(json_string_value(n)) != json_string_length(n) ||
	    !hu_volume_name_valid(json_string_value(n)))
		return BAD(err, "name must be 1 to %d of A-Z, a-z, 0-9, '.', '_', '-', starting with a letter or digit",
			   HU_VOLUME_NAME_MAX - 1);
	snprintf(name, HU_VOLUME_NAME_MAX, "%s", json_string_value(n));
	sz = field(body, "size");
	if (!sz)
		return 0;
	if (json_is_integer(sz)) {
		if (json_integer_value(sz) < 0)
			return BAD(err, "size must not be negative");
		*size = (uint64_t)json_integer_value(sz);
	} else if (json_is_string(sz)) {
		hu_err perr;
		if (strlen(json_string_value(sz)) != json_string_length(sz) ||
		    hu_parse_size(json_string_value(sz), size, &perr) < 0)
			return BAD(err, "size: '%.32s' is not a size (bytes, or like 512M, 1G)", json_string_value(sz));
	} else {
		return BAD(err, "size must be a number of bytes or a string like \"1G\"");
	}
	if (*size && (*size < HU_VOLUME_MIN_SIZE || *size > HU_VOLUME_MAX_SIZE))
		return BAD(err, "size must be 0 (no cap) or between 4 MiB and 16 TiB");
	return 0;
}
