#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"

/* RFC 4648 section 10. */
static const struct {
	const char *plain, *encoded;
} vectors[] = {
	{"", ""},
	{"f", "Zg=="},
	{"fo", "Zm8="},
	{"foo", "Zm9v"},
	{"foob", "Zm9vYg=="},
	{"fooba", "Zm9vYmE="},
	{"foobar", "Zm9vYmFy"},
};

static void test_rfc_vectors(void **state)
{
	char enc[32];
	uint8_t dec[32];
	size_t n;
	hu_err err;

	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		size_t len = strlen(vectors[i].plain);
		assert_int_equal(hu_base64_encoded_len(len), strlen(vectors[i].encoded));
		assert_int_equal(hu_base64_encode(vectors[i].plain, len, enc), strlen(vectors[i].encoded));
		assert_string_equal(enc, vectors[i].encoded);
		assert_int_equal(hu_base64_decode(enc, strlen(enc), dec, &n, &err), 0);
		assert_int_equal(n, len);
		assert_memory_equal(dec, vectors[i].plain, len);
	}
}

static void test_lenient_forms(void **state)
{
	uint8_t dec[16];
	size_t n;
	hu_err err;

	/* Without padding. */
	assert_int_equal(hu_base64_decode("Zm8", 3, dec, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(dec, "fo", 2);
	assert_int_equal(hu_base64_decode("Zg", 2, dec, &n, &err), 0);
	assert_int_equal(n, 1);
	/* URL-safe alphabet: 0xfb 0xff is "+/8=" or "-_8=". */
	assert_int_equal(hu_base64_decode("-_8=", 4, dec, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(dec[0], 0xfb);
	assert_int_equal(dec[1], 0xff);
	assert_int_equal(hu_base64_decode("+/8", 3, dec, &n, &err), 0);
	assert_int_equal(dec[0], 0xfb);
}

static void test_rejects_malformed(void **state)
{
	uint8_t dec[64];
	size_t n;
	hu_err err;
	const char *bad[] = {"Z", "Zm9vY", "Zm=", "Zm8==", "Zg===", "====", "Zm 9v", "Zm9v\n", "Zg==Zg==", "Zm9v!", "=Zm9"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(hu_base64_decode(bad[i], strlen(bad[i]), dec, &n, &err), -1);
		assert_int_equal(err.code, EINVAL);
		assert_non_null(strstr(err.msg, "base64"));
	}
}

static void test_binary_roundtrip(void **state)
{
	uint8_t data[1000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 37 + 11);
	for (size_t len = 0; len <= sizeof(data); len += 97) {
		char *enc = hu_base64_encode_alloc(data, len);
		uint8_t *dec;
		size_t n;
		hu_err err;
		assert_non_null(enc);
		assert_true(hu_base64_decoded_max(strlen(enc)) >= len);
		assert_int_equal(hu_base64_decode_alloc(enc, strlen(enc), &dec, &n, &err), 0);
		assert_int_equal(n, len);
		assert_memory_equal(dec, data, len);
		free(dec);
		free(enc);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc_vectors),
		cmocka_unit_test(test_lenient_forms),
		cmocka_unit_test(test_rejects_malformed),
		cmocka_unit_test(test_binary_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
