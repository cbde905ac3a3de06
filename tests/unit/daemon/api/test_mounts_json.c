/* volumeMounts, metadata["host-mount"] and the new-volume body
 * (mounts_json.h): what is accepted, and that everything else is refused
 * with a message naming the entry. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "daemon/api/mounts_json.h"

static json_t *js(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	assert_non_null(v);
	return v;
}

static void test_volume_mounts(void **state)
{
	struct hu_mount_reqs r = {0};
	hu_err err;
	json_t *v = js("[{\"name\":\"work\",\"path\":\"/data\"},{\"name\":\"cache.1\",\"path\":\"/home/user/c\","
		       "\"readOnly\":true}]");
	assert_int_equal(hu_api_decode_volume_mounts(v, &r, &err), 0);
	json_decref(v);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.m[0].kind, HU_MOUNT_VOLUME);
	assert_string_equal(r.m[0].volume, "work");
	assert_string_equal(r.m[0].path, "/data");
	assert_int_equal(r.m[0].read_only, 0);
	assert_int_equal(r.m[1].read_only, 1);
	assert_int_equal(hu_api_decode_volume_mounts(NULL, &r, &err), 0);
	assert_int_equal(r.n, 2);
}

static void vm_bad(const char *text, const char *msg_part)
{
	struct hu_mount_reqs r = {0};
	hu_err err;
	json_t *v = js(text);
	assert_int_equal(hu_api_decode_volume_mounts(v, &r, &err), -1);
	json_decref(v);
	assert_int_equal(err.code, EINVAL);
	if (!strstr(err.msg, msg_part))
		fail_msg("'%s' lacks '%s'", err.msg, msg_part);
}

static void test_volume_mounts_bad(void **state)
{
	vm_bad("{}", "array");
	vm_bad("[1]", "object");
	vm_bad("[{\"path\":\"/d\"}]", "name is required");
	vm_bad("[{\"name\":\"v\"}]", "path is required");
	vm_bad("[{\"name\":\"../x\",\"path\":\"/d\"}]", "not a volume name");
	vm_bad("[{\"name\":\"v\",\"path\":\"d\"}]", "not absolute");
	vm_bad("[{\"name\":\"v\",\"path\":\"/\"}]", "root");
	vm_bad("[{\"name\":\"v\",\"path\":\"/usr/x\"}]", "/usr");
	vm_bad("[{\"name\":\"v\",\"path\":\"/a/../proc\"}]", "normalised");
	vm_bad("[{\"name\":\"v\",\"path\":\"/d\",\"readOnly\":\"yes\"}]", "boolean");
	vm_bad("[{\"name\":\"v\",\"path\":\"/d\"},{\"name\":\"w\",\"path\":\"/d\"}]", "twice");
	vm_bad("[{\"name\":\"v\",\"path\":\"/d\\u0000x\"}]", "NUL");
	char many[4096] = "[";
	for (int i = 0; i < HU_MOUNTS_MAX + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s{\"name\":\"v\",\"path\":\"/d%d\"}",
			 i ? "," : "", i);
	strcat(many, "]");
	vm_bad(many, "at most");
}

static void test_host_mounts(void **state)
{
	struct hu_mount_reqs r = {0};
	hu_err err;
	assert_int_equal(hu_api_decode_host_mounts("[{\"hostPath\":\"/srv/ws/a\",\"mountPath\":\"/workspace\","
						   "\"readOnly\":false},{\"hostPath\":\"/srv/ro\",\"mountPath\":\"/ro\","
						   "\"readOnly\":true}]",
						   &r, &err),
			 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.m[0].kind, HU_MOUNT_HOST);
	assert_string_equal(r.m[0].host_path, "/srv/ws/a");
	assert_string_equal(r.m[1].path, "/ro");
	assert_int_equal(r.m[1].read_only, 1);
	assert_int_equal(hu_api_decode_host_mounts("[]", &r, &err), 0);
}

static void test_host_mounts_bad(void **state)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{"", "not valid JSON"},
		{"[{", "not valid JSON"},
		{"{\"hostPath\":\"/a\"}", "array"},
		{"[\"/a:/b\"]", "object"},
		{"[{\"mountPath\":\"/w\"}]", "hostPath is required"},
		{"[{\"hostPath\":\"/a\"}]", "mountPath is required"},
		{"[{\"hostPath\":\"a\",\"mountPath\":\"/w\"}]", "not absolute"},
		{"[{\"hostPath\":\"/a/../../etc\",\"mountPath\":\"/w\"}]", "'..'"},
		{"[{\"hostPath\":\"/a/./b\",\"mountPath\":\"/w\"}]", "'.'"},
		{"[{\"hostPath\":\"/a\",\"mountPath\":\"/proc\"}]", "/proc"},
		{"[{\"hostPath\":\"/a\",\"mountPath\":\"/usr/lib\"}]", "/usr"},
		{"[{\"hostPath\":\"/a\",\"mountPath\":\"/\"}]", "root"},
		{"[{\"hostPath\":\"/a\",\"mountPath\":\"/w\",\"readOnly\":1}]", "boolean"},
		{"[{\"hostPath\":\"/a\",\"hostPath\":\"/b\",\"mountPath\":\"/w\"}]", "not valid JSON"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hu_mount_reqs r = {0};
		hu_err err;
		assert_int_equal(hu_api_decode_host_mounts(bad[i].text, &r, &err), -1);
		assert_int_equal(err.code, EINVAL);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("%s: '%s' lacks '%s'", bad[i].text, err.msg, bad[i].msg);
	}
}

static void test_new_volume(void **state)
{
	char name[HU_VOLUME_NAME_MAX];
	uint64_t size;
	hu_err err;
	json_t *v = js("{\"name\":\"ws-1\"}");
	assert_int_equal(hu_api_decode_new_volume(v, name, &size, &err), 0);
	json_decref(v);
	assert_string_equal(name, "ws-1");
	assert_int_equal(size, 0);
	v = js("{\"name\":\"a\",\"size\":\"64M\"}");
	assert_int_equal(hu_api_decode_new_volume(v, name, &size, &err), 0);
	json_decref(v);
	assert_int_equal(size, 64ull << 20);
	v = js("{\"name\":\"a\",\"size\":8388608}");
	assert_int_equal(hu_api_decode_new_volume(v, name, &size, &err), 0);
	json_decref(v);
	assert_int_equal(size, 8ull << 20);
	static const char *const bad[] = {"[]", "{}", "{\"name\":1}", "{\"name\":\"\"}", "{\"name\":\"-x\"}",
					  "{\"name\":\"a/b\"}", "{\"name\":\"a\",\"size\":-1}",
					  "{\"name\":\"a\",\"size\":\"lots\"}", "{\"name\":\"a\",\"size\":1024}",
					  "{\"name\":\"a\",\"size\":true}", "{\"name\":\"a\",\"size\":\"100T\"}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = js(bad[i]);
		assert_int_equal(hu_api_decode_new_volume(v, name, &size, &err), -1);
		assert_int_equal(err.code, EINVAL);
		json_decref(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_volume_mounts), cmocka_unit_test(test_volume_mounts_bad),
		cmocka_unit_test(test_host_mounts),   cmocka_unit_test(test_host_mounts_bad),
		cmocka_unit_test(test_new_volume),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
