/* OCI index, manifest and config parsing, and template descriptions
 * (src/template/tpl_oci.c, tpl_meta.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/template.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"

static void test_pick_manifest(void **state)
{
	char d[HU_OCI_DIGEST_MAX];
	int nested = -1;
	hu_err err;
	const char *one = "{\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" D1 "\"}]}";
	assert_int_equal(hu_oci_pick_manifest(one, strlen(one), d, &nested, &err), 0);
	assert_string_equal(d, D1);
	assert_int_equal(nested, 0);
	/* the linux/amd64 one of several (this test runs on x86_64) */
	const char *multi = "{\"manifests\":[{\"digest\":\"" D1 "\",\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\"}},"
			    "{\"digest\":\"" D2 "\",\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";
	assert_int_equal(hu_oci_pick_manifest(multi, strlen(multi), d, &nested, &err), 0);
	assert_string_equal(d, D2);
	const char *idx = "{\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"digest\":\"" D3 "\"}]}";
	assert_int_equal(hu_oci_pick_manifest(idx, strlen(idx), d, &nested, &err), 0);
	assert_int_equal(nested, 1);
	static const char *const bad[] = {
		"", "[]", "{}", "{\"manifests\":[]}", "{\"manifests\":[1]}", "{\"manifests\":[{\"digest\":\"sha256:abc\"}]}",
		"{\"manifests\":[{\"digest\":\"sha512:1111111111111111111111111111111111111111111111111111111111111111\"}]}",
		"{\"manifests\":[{\"digest\":\"sha256:../../../../etc/passwd111111111111111111111111111111111111111111\"}]}",
		"{\"manifests\":[{\"digest\":\"sha256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.code = 0;
		assert_int_equal(hu_oci_pick_manifest(bad[i], strlen(bad[i]), d, &nested, &err), -1);
		assert_int_equal(err.code, EINVAL);
	}
}

static void test_manifest_layers(void **state)
{
	char cfg[HU_OCI_DIGEST_MAX], layers[2][HU_OCI_DIGEST_MAX];
	size_t n;
	hu_err err;
	const char *m = "{\"config\":{\"digest\":\"" D1 "\"},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"" D2
			"\"},{\"digest\":\"" D3 "\"}]}";
	assert_int_equal(hu_oci_manifest_layers(m, strlen(m), cfg, layers, 2, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(cfg, D1);
	assert_string_equal(layers[0], D2);
	assert_string_equal(layers[1], D3);
	/* more layers than room */
	assert_int_equal(hu_oci_manifest_layers(m, strlen(m), cfg, layers, 1, &n, &err), -1);
	assert_int_equal(err.code, E2BIG);
	const char *foreign = "{\"config\":{\"digest\":\"" D1 "\"},\"layers\":[{\"mediaType\":\"application/x-something\",\"digest\":\"" D2 "\"}]}";
	assert_int_equal(hu_oci_manifest_layers(foreign, strlen(foreign), cfg, layers, 2, &n, &err), -1);
	const char *noconfig = "{\"layers\":[]}";
	assert_int_equal(hu_oci_manifest_layers(noconfig, strlen(noconfig), cfg, layers, 2, &n, &err), -1);
}

static void test_image_config(void **state)
{
	struct hu_tpl_image_config c = {0};
	hu_err err;
	const char *j = "{\"config\":{\"Env\":[\"A=1\",\"B=x=y\",\"=bad\",\"noeq\",5],\"WorkingDir\":\"/app\",\"User\":\"node\"}}";
	assert_int_equal(hu_oci_image_config(j, strlen(j), &c, &err), 0);
	assert_string_equal(json_string_value(json_object_get(c.envs, "A")), "1");
	assert_string_equal(json_string_value(json_object_get(c.envs, "B")), "x=y");
	assert_int_equal(json_object_size(c.envs), 2);
	assert_string_equal(c.cwd, "/app");
	assert_string_equal(c.user, "node");
	json_decref(c.envs);
	/* numeric users and relative dirs are not taken */
	const char *k = "{\"config\":{\"WorkingDir\":\"app\",\"User\":\"1000:1000\"}}";
	assert_int_equal(hu_oci_image_config(k, strlen(k), &c, &err), 0);
	assert_string_equal(c.cwd, "");
	assert_string_equal(c.user, "");
	json_decref(c.envs);
}

static void test_meta_roundtrip(void **state)
{
	struct hu_tpl_meta m, back;
	hu_err err;
	hu_tpl_meta_init(&m);
	snprintf(m.id, sizeof(m.id), "my-tpl");
	snprintf(m.team, sizeof(m.team), "t1");
	snprintf(m.cwd, sizeof(m.cwd), "/work");
	m.memory_bytes = 256ULL << 20;
	m.cpu_millis = 1500;
	m.envs = json_pack("{s:s}", "K", "V");
	snprintf(m.start_cmd, sizeof(m.start_cmd), "server --port 8080");
	snprintf(m.ready_cmd, sizeof(m.ready_cmd), "curl -sf localhost:8080");
	m.ready_timeout_s = 30;
	snprintf(m.recipe, sizeof(m.recipe), "%064d", 7);
	json_t *j = hu_tpl_meta_stored(&m);
	char *text = json_dumps(j, 0);
	assert_int_equal(hu_tpl_meta_parse(text, strlen(text), &back, &err), 0);
	assert_string_equal(back.id, "my-tpl");
	assert_string_equal(back.team, "t1");
	assert_string_equal(back.cwd, "/work");
	assert_int_equal(back.memory_bytes, 256ULL << 20);
	assert_int_equal(back.cpu_millis, 1500);
	assert_string_equal(json_string_value(json_object_get(back.envs, "K")), "V");
	assert_string_equal(back.start_cmd, "server --port 8080");
	assert_string_equal(back.ready_cmd, "curl -sf localhost:8080");
	assert_int_equal(back.ready_timeout_s, 30);
	assert_string_equal(back.recipe, m.recipe);
	json_t *view = hu_tpl_meta_json(&back);
	assert_string_equal(json_string_value(json_object_get(view, "recipe")), m.recipe);
	assert_int_equal(json_integer_value(json_object_get(view, "memoryMB")), 256);
	assert_int_equal(json_integer_value(json_object_get(view, "cpuCount")), 2);
	json_decref(view);
	free(text);
	json_decref(j);
	hu_tpl_meta_free(&back);
	hu_tpl_meta_free(&m);
	static const char *const bad[] = {"{}", "{\"id\":\"Bad/Id\"}", "{\"id\":\"x\",\"envs\":{\"a\":1}}",
					  "{\"id\":\"x\",\"cpuMillis\":-1}", "not json",
					  "{\"id\":\"x\",\"readyTimeout\":99999}",
					  "{\"id\":\"x\",\"recipe\":\"0123456789012345678901234567890123456789012345678901234567890123456789012\"}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(hu_tpl_meta_parse(bad[i], strlen(bad[i]), &back, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick_manifest),
		cmocka_unit_test(test_manifest_layers),
		cmocka_unit_test(test_image_config),
		cmocka_unit_test(test_meta_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
