/* Signed URLs (signature.c), metadata headers and Accept-Encoding: the pure
 * parsers of issue 7, against vectors from the SDK and hostile input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "daemon/http/gzip_out.h"
#include "daemon/envd/meta_headers.h"
#include "daemon/envd/signed_url.h"
#include "util/base64.h"

/* The SDK's own vector ("static signing key comparison" in E2B's tests). */
static void test_digest_matches_sdk(void **state)
{
	uint8_t d[HU_SIG_DIGEST_LEN];
	struct hu_signed_req sig;
	hu_err err;

	hu_signed_digest("hello.txt", "read", "user", "0tQG31xiMp0IOQfaz9dcwi72L1CPo8e0", NULL, d);
	assert_int_equal(hu_signed_parse("v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6E", NULL, &sig, &err), 0);
	assert_memory_equal(d, sig.digest, HU_SIG_DIGEST_LEN);
	assert_false(sig.has_expiration);
	/* the expiry is part of the signed text */
	uint8_t with_exp[HU_SIG_DIGEST_LEN];
	hu_signed_digest("hello.txt", "read", "user", "0tQG31xiMp0IOQfaz9dcwi72L1CPo8e0", "1764400000", with_exp);
	assert_memory_not_equal(d, with_exp, HU_SIG_DIGEST_LEN);
	/* the URL-safe alphabet decodes to the same digest */
	assert_int_equal(hu_signed_parse("v1_gUtH_s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6E", "1764400000", &sig, &err), 0);
	assert_memory_equal(d, sig.digest, HU_SIG_DIGEST_LEN);
	assert_true(sig.has_expiration);
	assert_int_equal(sig.expiration, 1764400000);
	assert_string_equal(sig.expiration_text, "1764400000");
}

static void test_parse_rejects(void **state)
{
	static const char *const bad_sig[] = {
		NULL, "", "v1_", "v2_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6E", "v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6",
		"v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6E=", "v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6!",
		"V1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6E",
		/* the same digest with bits set past its end: E (000100) -> F, G, H */
		"v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6F", "v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6G",
		"v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6H",
	};
	static const char *const bad_exp[] = {"", "-5", "+5", "1e9", "12 ", "0x10", "9999999999999999999"};
	struct hu_signed_req sig;
	hu_err err;

	for (size_t i = 0; i < sizeof(bad_sig) / sizeof(*bad_sig); i++) {
		assert_int_equal(hu_signed_parse(bad_sig[i], NULL, &sig, &err), -1);
		assert_int_equal(err.code, EINVAL);
	}
	for (size_t i = 0; i < sizeof(bad_exp) / sizeof(*bad_exp); i++) {
		assert_int_equal(hu_signed_parse("v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6E", bad_exp[i], &sig, &err), -1);
		assert_non_null(strstr(err.msg, "signature_expiration"));
	}
}

static void test_host_id(void **state)
{
	char id[32];
	assert_true(hu_signed_host_id("49983-iabc123.hutch.example", id, sizeof(id)));
	assert_string_equal(id, "iabc123");
	assert_true(hu_signed_host_id("8000-i0.example:3000", id, sizeof(id)));
	assert_string_equal(id, "i0");
	static const char *const no[] = {
		NULL, "", "127.0.0.1:3000", "localhost", "49983-iabc", "-iabc.x", "123456-iabc.x", "49983-.x",
		"49983-I-ABC.x", "49983-i/../x.y", "49983-iabcdefghijklmnopqrstuvwxyz0123456789.x",
	};
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		assert_false(hu_signed_host_id(no[i], id, sizeof(id)));
}

static void test_meta_headers(void **state)
{
	struct hu_meta_set m = {0};
	hu_err err;

	assert_int_equal(hu_meta_set_add_header(&m, "Content-Type", "text/plain", &err), 0);
	assert_int_equal(m.n, 0);
	assert_int_equal(hu_meta_set_add_header(&m, "X-Metadata-author", "mish", &err), 0);
	assert_int_equal(hu_meta_set_add_header(&m, "x-metadata-Tag!", "a b ~", &err), 0);
	assert_int_equal(hu_meta_set_add_header(&m, "X-METADATA-author", "again", &err), 0); /* replaces */
	assert_int_equal(m.n, 2);
	assert_string_equal(m.kv[0], "author=again");
	assert_string_equal(m.kv[1], "Tag!=a b ~");
	static const char *const bad[][2] = {
		{"X-Metadata-", "empty key"}, {"X-Metadata-a b", "v"}, {"X-Metadata-a=b", "v"}, {"X-Metadata-k", "tab\there"},
		{"X-Metadata-k", "\xc3\xa9"}, {"X-Metadata-k", "new\nline"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		assert_int_equal(hu_meta_set_add_header(&m, bad[i][0], bad[i][1], &err), -1);
		assert_int_equal(err.code, EINVAL);
	}
	char longkey[300];
	memset(longkey, 'k', sizeof(longkey));
	memcpy(longkey, "X-Metadata-", 11);
	longkey[sizeof(longkey) - 1] = '\0';
	assert_int_equal(hu_meta_set_add_header(&m, longkey, "v", &err), -1);
	assert_int_equal(m.n, 2); /* nothing added by the failures */
	hu_meta_set_clear(&m);
	for (int i = 0; i < HU_META_MAX_PAIRS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "X-Metadata-k%d", i);
		assert_int_equal(hu_meta_set_add_header(&m, name, "v", &err), 0);
	}
	assert_int_equal(hu_meta_set_add_header(&m, "X-Metadata-one-too-many", "v", &err), -1);
	hu_meta_set_clear(&m);
}

static void test_accepts_gzip(void **state)
{
	static const char *const yes[] = {"gzip", "GZIP", "gzip, deflate, br", "br;q=1.0, gzip;q=0.5", "x-gzip", "*",
					  " gzip ;q=0.001", "deflate,gzip"};
	static const char *const no[] = {NULL, "", "identity", "br", "gzip;q=0", "gzip; q=0.000", "gzipx", "*;q=0",
					 "deflate, gzip;q=0"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
		assert_true(hu_accepts_gzip(yes[i]));
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		assert_false(hu_accepts_gzip(no[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_digest_matches_sdk), cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_host_id),            cmocka_unit_test(test_meta_headers),
		cmocka_unit_test(test_accepts_gzip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
