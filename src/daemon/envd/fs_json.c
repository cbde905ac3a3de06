#include "daemon/envd/fs_json.h"

#include "util/filemeta.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "daemon/core/daemon.h"
#include "proto/initproto.h"

void hu_fs_permissions(uint32_t st_mode, char out[HU_FS_PERMISSIONS_MAX])
{
	/* Go prints its mode-type letters in the order of "dalTLDpSugct?"; of
	 * those a stat can give d, L, D, p, S, u, g, c and t. */
	struct {
		bool on;
		char letter;
	} const type[] = {
		{S_ISDIR(st_mode), 'd'},
		{S_ISLNK(st_mode), 'L'},
		{S_ISBLK(st_mode) || S_ISCHR(st_mode), 'D'},
		{S_ISFIFO(st_mode), 'p'},
		{S_ISSOCK(st_mode), 'S'},
		{(st_mode & S_ISUID) != 0, 'u'},
		{(st_mode & S_ISGID) != 0, 'g'},
		{S_ISCHR(st_mode), 'c'},
		{(st_mode & S_ISVTX) != 0, 't'},
	};
	size_t n = 0;
	for (size_t i = 0; i < sizeof(type) / sizeof(type[0]); i++)
		if (type[i].on)
			out[n++] = type[i].letter;
	if (n == 0)
		out[n++] = '-';
	static const char rwx[] = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[n++] = (st_mode & (1u << (8 - i))) ? rwx[i] : '-';
	out[n] = '\0';
}

void hu_fs_timestamp(uint64_t ns, char out[HU_FS_TIME_MAX])
{
	time_t sec = (time_t)(ns / 1000000000u);
	uint32_t frac = (uint32_t)(ns % 1000000000u);
	struct tm tm;
	char base[32];

	gmtime_r(&sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	if (frac == 0)
		snprintf(out, HU_FS_TIME_MAX, "%sZ", base);
	else if (frac % 1000000 == 0)
		snprintf(out, HU_FS_TIME_MAX, "%s.%03uZ", base, frac / 1000000);
	else if (frac % 1000 == 0)
		snprintf(out, HU_FS_TIME_MAX, "%s.%06uZ", base, frac / 1000);
	else
		snprintf(out, HU_FS_TIME_MAX, "%s.%09uZ", base, frac);
}

static const char *file_type_name(uint8_t type)
{
	switch (type) {
	case HU_ENTRY_FILE:
		return "FILE_TYPE_FILE";
	case HU_ENTRY_DIR:
		return "FILE_TYPE_DIRECTORY";
	case HU_ENTRY_SYMLINK:
		return "FILE_TYPE_SYMLINK";
	default:
		return "FILE_TYPE_UNSPECIFIED"; /* devices, fifos...: the SDK's list() skips them */
	}
}

static const char *event_type_name(uint8_t type)
{
	switch (type) {
	case HU_WATCH_CREATE:
		return "EVENT_TYPE_CREATE";
	case HU_WATCH_WRITE:
		return "EVENT_TYPE_WRITE";
	case HU_WATCH_REMOVE:
		return "EVENT_TYPE_REMOVE";
	case HU_WATCH_RENAME:
		return "EVENT_TYPE_RENAME";
	case HU_WATCH_CHMOD:
		return "EVENT_TYPE_CHMOD";
	default:
		return NULL;
	}
}

/* Set key to the string field f (names may hold any bytes but NUL; what is
 * not UTF-8 is made printable rather than dropped). */
static int set_str(json_t *obj, const char *key, const struct hu_field *f, hu_err *err)
{
	char *s;
	if (hu_field_strdup(f, &s, err) < 0)
		return -1;
	int rc = json_object_set_new(obj, key, hu_json_text(s));
	free(s);
	return rc < 0 ? hu_err_set(err, ENOMEM, "entry %s", key) : 0;
}

/* One META "key=value" into the entry's "metadata" object. */
static int add_meta(json_t *entry, const struct hu_field *f, hu_err *err)
{
	char *kv;
	const char *value;
	size_t klen;

	if (hu_field_strdup(f, &kv, err) < 0)
		return -1;
	int rc = hu_meta_split(kv, &value, &klen, err);
	json_t *m = json_object_get(entry, "metadata");
	if (rc == 0 && !m && json_object_set_new(entry, "metadata", m = json_object()) < 0)
		rc = hu_err_set(err, ENOMEM, "entry metadata");
	if (rc == 0 && (!m || json_object_setn_new(m, kv, klen, json_string(value)) < 0))
		rc = hu_err_set(err, ENOMEM, "entry metadata");
	free(kv);
	return rc;
}

int hu_fs_entry_info(const uint8_t *entry, size_t len, json_t **out, hu_err *err)
{
	struct hu_field_iter it;
	struct hu_field f;
	uint8_t type = 0;
	uint32_t mode = 0;
	uint64_t u64;
	int r;

	json_t *e = json_object();
	if (!e)
		return hu_err_set(err, ENOMEM, "entry");
	hu_fields_init(&it, entry, len);
	while ((r = hu_fields_next(&it, &f, err)) > 0) {
		switch (f.tag) {
		case HU_F_NAME:
			r = set_str(e, "name", &f, err);
			break;
		case HU_F_PATH:
			r = set_str(e, "path", &f, err);
			break;
		case HU_F_OWNER:
			r = set_str(e, "owner", &f, err);
			break;
		case HU_F_GROUP:
			r = set_str(e, "group", &f, err);
			break;
		case HU_F_SYMLINK:
			r = set_str(e, "symlinkTarget", &f, err);
			break;
		case HU_F_META:
			r = add_meta(e, &f, err);
			break;
		case HU_F_TYPE:
			r = hu_field_u8(&f, &type, err);
			break;
		case HU_F_MODE:
			r = hu_field_u32(&f, &mode, err);
			break;
		case HU_F_SIZE:
			if ((r = hu_field_u64(&f, &u64, err)) == 0)
				json_object_set_new(e, "size", json_integer((json_int_t)(u64 > INT64_MAX ? INT64_MAX : u64)));
			break;
		case HU_F_MTIME_NS:
			if ((r = hu_field_u64(&f, &u64, err)) == 0) {
				char ts[HU_FS_TIME_MAX];
				hu_fs_timestamp(u64, ts);
				json_object_set_new(e, "modifiedTime", json_string(ts));
			}
			break;
		default:
			break;
		}
		if (r < 0)
			break;
	}
	if (r < 0) {
		json_decref(e);
		hu_err_prefix(err, "entry from init");
		return -1;
	}
	char perm[HU_FS_PERMISSIONS_MAX];
	hu_fs_permissions(mode, perm);
	json_object_set_new(e, "type", json_string(file_type_name(type)));
	json_object_set_new(e, "mode", json_integer(mode & 0777));
	json_object_set_new(e, "permissions", json_string(perm));
	*out = e;
	return 0;
}

/* Call fn for each ENTRY of payload until fn returns non-zero. */
static int each_entry(const uint8_t *payload, size_t len, int (*fn)(const struct hu_field *f, void *arg, hu_err *err),
		      void *arg, hu_err *err)
{
	struct hu_field_iter it;
	struct hu_field f;
	int r;

	hu_fields_init(&it, payload, len);
	while ((r = hu_fields_next(&it, &f, err)) > 0) {
		if (f.tag != HU_F_ENTRY)
			continue;
		if ((r = fn(&f, arg, err)) != 0)
			return r;
	}
	return r;
}

static int append_one(const struct hu_field *f, void *arg, hu_err *err)
{
	json_t *e;
	if (hu_fs_entry_info(f->val, f->len, &e, err) < 0)
		return -1;
	if (json_array_append_new(arg, e) < 0)
		return hu_err_set(err, ENOMEM, "entry list");
	return 0;
}

int hu_fs_entries_append(const uint8_t *payload, size_t len, json_t *array, hu_err *err)
{
	return each_entry(payload, len, append_one, array, err);
}

static int take_first(const struct hu_field *f, void *arg, hu_err *err)
{
	if (hu_fs_entry_info(f->val, f->len, arg, err) < 0)
		return -1;
	return 1;
}

int hu_fs_first_entry(const uint8_t *payload, size_t len, json_t **out, hu_err *err)
{
	int r = each_entry(payload, len, take_first, out, err);
	if (r == 0)
		return hu_err_set(err, -EPROTO, "init replied without an entry");
	return r < 0 ? -1 : 0;
}

int hu_fs_first_entry_path(const uint8_t *payload, size_t len, char **name, char **path, hu_err *err)
{
	json_t *e;
	if (hu_fs_first_entry(payload, len, &e, err) < 0)
		return -1;
	const char *n = json_string_value(json_object_get(e, "name"));
	const char *p = json_string_value(json_object_get(e, "path"));
	*name = strdup(n ? n : "");
	*path = strdup(p ? p : "");
	json_decref(e);
	if (!*name || !*path) {
		free(*name);
		free(*path);
		return hu_err_set(err, ENOMEM, "entry");
	}
	return 0;
}

int hu_fs_watch_event(const uint8_t *payload, size_t len, json_t **out, hu_err *err)
{
	struct hu_field_iter it;
	struct hu_field f;
	uint8_t type = 0;
	char *name = NULL;
	json_t *entry = NULL;
	int r;

	hu_fields_init(&it, payload, len);
	while ((r = hu_fields_next(&it, &f, err)) > 0) {
		if (f.tag == HU_F_EVENT)
			r = hu_field_u8(&f, &type, err);
		else if (f.tag == HU_F_NAME && !name)
			r = hu_field_strdup(&f, &name, err);
		else if (f.tag == HU_F_ENTRY && !entry)
			r = hu_fs_entry_info(f.val, f.len, &entry, err);
		if (r < 0)
			break;
	}
	const char *tname = event_type_name(type);
	if (r == 0 && (!name || !tname))
		r = hu_err_set(err, -EPROTO, "watch event from init without a name or a known type");
	if (r == 0) {
		*out = json_pack("{s:{s:o,s:s}}", "filesystem", "name", hu_json_text(name), "type", tname);
		if (!*out)
			r = hu_err_set(err, ENOMEM, "watch event");
		else if (entry)
			json_object_set(json_object_get(*out, "filesystem"), "entry", entry);
	}
	json_decref(entry);
	free(name);
	return r < 0 ? -1 : 0;
}
