/*
 * EntryInfo and WatchDir event JSON from init's replies: the shapes envd
 * sends (Go's FileMode strings, protobuf timestamps, enum names).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>
#include <sys/stat.h>

#include "daemon/envd/fs_json.h"
#include "proto/initproto.h"

static void test_permissions_like_go(void **state)
{
	static const struct {
		uint32_t mode;
		const char *want;
	} cases[] = {
		{S_IFREG | 0644, "-rw-r--r--"},
		{S_IFDIR | 0755, "drwxr-xr-x"},
		{S_IFLNK | 0777, "Lrwxrwxrwx"},
		{S_IFREG | S_ISUID | 0755, "urwxr-xr-x"},
		{S_IFDIR | S_ISVTX | 0777, "dtrwxrwxrwx"},
		{S_IFCHR | 0620, "Dcrw--w----"},
		{S_IFBLK | 0660, "Drw-rw----"},
		{S_IFIFO | 0600, "prw-------"},
		{S_IFSOCK | 0755, "Srwxr-xr-x"},
		{S_IFREG | S_ISGID | 0000, "g---------"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[HU_FS_PERMISSIONS_MAX];
		hu_fs_permissions(cases[i].mode, out);
		assert_string_equal(out, cases[i].want);
	}
}

static void test_timestamps(void **state)
{
	char ts[HU_FS_TIME_MAX];
	hu_fs_timestamp(0, ts);
	assert_string_equal(ts, "1970-01-01T00:00:00Z");
	hu_fs_timestamp(1700000000ull * 1000000000ull, ts);
	assert_string_equal(ts, "2023-11-14T22:13:20Z");
	hu_fs_timestamp(1700000000ull * 1000000000ull + 120000000ull, ts);
	assert_string_equal(ts, "2023-11-14T22:13:20.120Z");
	hu_fs_timestamp(1700000000ull * 1000000000ull + 123456000ull, ts);
	assert_string_equal(ts, "2023-11-14T22:13:20.123456Z");
	hu_fs_timestamp(1700000000ull * 1000000000ull + 1ull, ts);
	assert_string_equal(ts, "2023-11-14T22:13:20.000000001Z");
}

/* An ENTRIES payload with one entry per name, as init builds it. */
static void build_entries(struct hu_buf *b, const char *const *names, size_t n, uint8_t type, uint32_t mode)
{
	for (size_t i = 0; i < n; i++) {
		size_t e = hu_put_nested_begin(b, HU_F_ENTRY);
		hu_put_str(b, HU_F_NAME, names[i]);
		hu_put_str(b, HU_F_PATH, "/home/user/x");
		hu_put_u8(b, HU_F_TYPE, type);
		hu_put_u64(b, HU_F_SIZE, 42);
		hu_put_u32(b, HU_F_MODE, mode);
		hu_put_str(b, HU_F_OWNER, "user");
		hu_put_str(b, HU_F_GROUP, "user");
		hu_put_u64(b, HU_F_MTIME_NS, 1700000000ull * 1000000000ull);
		if (type == HU_ENTRY_SYMLINK)
			hu_put_str(b, HU_F_SYMLINK, "/etc");
		hu_put_nested_end(b, e);
	}
}

static void test_entry_info(void **state)
{
	struct hu_buf b = {0};
	const char *names[] = {"x"};
	json_t *e;
	hu_err err;

	build_entries(&b, names, 1, HU_ENTRY_SYMLINK, S_IFLNK | 0777);
	assert_false(b.oom);
	assert_int_equal(hu_fs_first_entry(b.data, b.len, &e, &err), 0);
	char *s = json_dumps(e, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(s, "{\"group\":\"user\",\"mode\":511,\"modifiedTime\":\"2023-11-14T22:13:20Z\",\"name\":\"x\","
			       "\"owner\":\"user\",\"path\":\"/home/user/x\",\"permissions\":\"Lrwxrwxrwx\",\"size\":42,"
			       "\"symlinkTarget\":\"/etc\",\"type\":\"FILE_TYPE_SYMLINK\"}");
	free(s);
	json_decref(e);

	/* Devices and the like are FILE_TYPE_UNSPECIFIED (the SDK skips them). */
	hu_buf_reset(&b);
	const char *three[] = {"a", "b", "\xff-not-utf8"};
	build_entries(&b, three, 3, HU_ENTRY_OTHER, S_IFIFO | 0600);
	json_t *list = json_array();
	assert_int_equal(hu_fs_entries_append(b.data, b.len, list, &err), 0);
	assert_int_equal(json_array_size(list), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 1), "type")), "FILE_TYPE_UNSPECIFIED");
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 2), "name")), "?-not-utf8");
	json_decref(list);

	/* No entry at all, or a malformed one: an error, not a crash. */
	assert_int_equal(hu_fs_first_entry((const uint8_t *)"", 0, &e, &err), -1);
	hu_buf_reset(&b);
	size_t n = hu_put_nested_begin(&b, HU_F_ENTRY);
	hu_put_u32(&b, HU_F_TYPE, 1); /* wrong width */
	hu_put_nested_end(&b, n);
	assert_int_equal(hu_fs_first_entry(b.data, b.len, &e, &err), -1);
	hu_buf_free(&b);
}

static void test_first_entry_path(void **state)
{
	struct hu_buf b = {0};
	const char *names[] = {"f.txt"};
	char *name, *path;
	hu_err err;

	build_entries(&b, names, 1, HU_ENTRY_FILE, S_IFREG | 0644);
	assert_int_equal(hu_fs_first_entry_path(b.data, b.len, &name, &path, &err), 0);
	assert_string_equal(name, "f.txt");
	assert_string_equal(path, "/home/user/x");
	free(name);
	free(path);
	hu_buf_free(&b);
}

static void test_watch_event(void **state)
{
	struct hu_buf b = {0};
	json_t *ev;
	hu_err err;

	hu_put_str(&b, HU_F_NAME, "sub/f");
	hu_put_u8(&b, HU_F_EVENT, HU_WATCH_RENAME);
	assert_int_equal(hu_fs_watch_event(b.data, b.len, &ev, &err), 0);
	char *s = json_dumps(ev, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(s, "{\"filesystem\":{\"name\":\"sub/f\",\"type\":\"EVENT_TYPE_RENAME\"}}");
	free(s);
	json_decref(ev);

	hu_buf_reset(&b);
	hu_put_str(&b, HU_F_NAME, "x");
	hu_put_u8(&b, HU_F_EVENT, 99); /* unknown type */
	assert_int_equal(hu_fs_watch_event(b.data, b.len, &ev, &err), -1);
	hu_buf_reset(&b);
	hu_put_u8(&b, HU_F_EVENT, HU_WATCH_CREATE); /* no name */
	assert_int_equal(hu_fs_watch_event(b.data, b.len, &ev, &err), -1);
	hu_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_permissions_like_go),
		cmocka_unit_test(test_timestamps),
		cmocka_unit_test(test_entry_info),
		cmocka_unit_test(test_first_entry_path),
		cmocka_unit_test(test_watch_event),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
