/* The init protocol codec: round trips and every way a frame can be wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/initproto.h"

/* A header by hand, so malformed ones can be made. */
static void raw_hdr(uint8_t *h, uint8_t version, uint8_t type, uint16_t reserved, uint32_t id, uint32_t len)
{
	h[0] = version;
	h[1] = type;
	h[2] = (uint8_t)(reserved >> 8);
	h[3] = (uint8_t)reserved;
	for (int i = 0; i < 4; i++) {
		h[4 + i] = (uint8_t)(id >> (24 - 8 * i));
		h[8 + i] = (uint8_t)(len >> (24 - 8 * i));
	}
}

static void test_roundtrip_all_types(void **state)
{
	struct hu_buf b = {0};
	struct hu_frame_hdr hdr;
	struct hu_field_iter it;
	struct hu_field f;
	hu_err err;

	size_t off = hu_frame_begin(&b, HU_MSG_SPAWN, 0xdeadbeef);
	hu_put_str(&b, HU_F_ARG, "echo");
	hu_put_str(&b, HU_F_ARG, "");
	hu_put_u8(&b, HU_F_STDIN, 1);
	hu_put_u16(&b, HU_F_PTY_ROWS, 0xabcd);
	hu_put_u32(&b, HU_F_PID, 0x01020304);
	hu_put_i32(&b, HU_F_EXIT_CODE, -5);
	hu_put_u64(&b, HU_F_SIZE, 0x0102030405060708ull);
	hu_put_bytes(&b, HU_F_DATA, "a\0b", 3);
	assert_int_equal(hu_frame_end(&b, off), 0);

	assert_int_equal(hu_frame_parse_hdr(b.data, b.len, &hdr, &err), 0);
	assert_int_equal(hdr.version, HU_PROTO_VERSION);
	assert_int_equal(hdr.type, HU_MSG_SPAWN);
	assert_int_equal(hdr.id, 0xdeadbeef);
	assert_int_equal(hdr.len, b.len - HU_PROTO_HEADER_SIZE);
	/* Big endian on the wire. */
	assert_int_equal(b.data[4], 0xde);
	assert_int_equal(b.data[7], 0xef);

	const uint8_t *p = b.data + HU_PROTO_HEADER_SIZE;
	assert_int_equal(hu_payload_validate(p, hdr.len, &err), 0);
	hu_fields_init(&it, p, hdr.len);

	char *s;
	assert_int_equal(hu_fields_next(&it, &f, &err), 1);
	assert_int_equal(f.tag, HU_F_ARG);
	assert_int_equal(hu_field_strdup(&f, &s, &err), 0);
	assert_string_equal(s, "echo");
	free(s);
	assert_int_equal(hu_fields_next(&it, &f, &err), 1);
	assert_int_equal(hu_field_strdup(&f, &s, &err), 0);
	assert_string_equal(s, "");
	free(s);

	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	int32_t i32;
	uint64_t u64;
	assert_int_equal(hu_fields_next(&it, &f, &err), 1);
	assert_int_equal(hu_field_u8(&f, &u8, &err), 0);
	assert_int_equal(u8, 1);
	assert_int_equal(hu_fields_next(&it, &f, &err), 1);
	assert_int_equal(hu_field_u16(&f, &u16, &err), 0);
	assert_int_equal(u16, 0xabcd);
	assert_int_equal(hu_fields_next(&it, &f, &err), 1);
	assert_int_equal(hu_field_u32(&f, &u32, &err), 0);
	assert_int_equal(u32, 0x01020304);
	assert_int_equal(hu_fields_next(&it, &f, &err), 1);
	assert_int_equal(hu_field_i32(&f, &i32, &err), 0);
	assert_int_equal(i32, -5);
	assert_int_equal(hu_fields_next(&it, &f, &err), 1);
	assert_int_equal(hu_field_u64(&f, &u64, &err), 0);
	assert_true(u64 == 0x0102030405060708ull);
	assert_int_equal(hu_fields_next(&it, &f, &err), 1);
	assert_int_equal(f.tag, HU_F_DATA);
	assert_int_equal(f.len, 3);
	assert_memory_equal(f.val, "a\0b", 3);
	assert_int_equal(hu_fields_next(&it, &f, &err), 0);
	hu_buf_free(&b);
}

static void test_multiple_frames_in_one_buf(void **state)
{
	struct hu_buf b = {0};
	struct hu_frame_hdr hdr;
	hu_err err;

	size_t a = hu_frame_begin(&b, HU_MSG_PING, 1);
	assert_int_equal(hu_frame_end(&b, a), 0);
	size_t c = hu_frame_begin(&b, HU_MSG_SPAWNED, 2);
	hu_put_u32(&b, HU_F_PID, 7);
	assert_int_equal(hu_frame_end(&b, c), 0);
	assert_int_equal(c, HU_PROTO_HEADER_SIZE);
	assert_int_equal(hu_frame_parse_hdr(b.data, b.len, &hdr, &err), 0);
	assert_int_equal(hdr.len, 0);
	assert_int_equal(hu_frame_parse_hdr(b.data + c, b.len - c, &hdr, &err), 0);
	assert_int_equal(hdr.id, 2);
	assert_int_equal(hdr.len, 10);
	hu_buf_reset(&b);
	assert_int_equal(b.len, 0);
	hu_buf_free(&b);
}

static void test_bad_headers(void **state)
{
	uint8_t h[HU_PROTO_HEADER_SIZE];
	struct hu_frame_hdr hdr;
	hu_err err;

	raw_hdr(h, HU_PROTO_VERSION, HU_MSG_PING, 0, 1, 0);
	assert_int_equal(hu_frame_parse_hdr(h, sizeof(h), &hdr, &err), 0);
	/* short */
	assert_int_equal(hu_frame_parse_hdr(h, sizeof(h) - 1, &hdr, &err), -1);
	assert_int_equal(err.code, EPROTO);
	/* version */
	raw_hdr(h, 2, HU_MSG_PING, 0, 1, 0);
	assert_int_equal(hu_frame_parse_hdr(h, sizeof(h), &hdr, &err), -1);
	assert_int_equal(err.code, EPROTO);
	raw_hdr(h, 0, HU_MSG_PING, 0, 1, 0);
	assert_int_equal(hu_frame_parse_hdr(h, sizeof(h), &hdr, &err), -1);
	/* reserved, either byte */
	raw_hdr(h, HU_PROTO_VERSION, HU_MSG_PING, 0x0100, 1, 0);
	assert_int_equal(hu_frame_parse_hdr(h, sizeof(h), &hdr, &err), -1);
	raw_hdr(h, HU_PROTO_VERSION, HU_MSG_PING, 0x0001, 1, 0);
	assert_int_equal(hu_frame_parse_hdr(h, sizeof(h), &hdr, &err), -1);
	/* size: the limit itself is fine, one more is not */
	raw_hdr(h, HU_PROTO_VERSION, HU_MSG_PING, 0, 1, HU_PROTO_MAX_PAYLOAD);
	assert_int_equal(hu_frame_parse_hdr(h, sizeof(h), &hdr, &err), 0);
	raw_hdr(h, HU_PROTO_VERSION, HU_MSG_PING, 0, 1, HU_PROTO_MAX_PAYLOAD + 1);
	assert_int_equal(hu_frame_parse_hdr(h, sizeof(h), &hdr, &err), -1);
	assert_int_equal(err.code, EMSGSIZE);
	raw_hdr(h, HU_PROTO_VERSION, HU_MSG_PING, 0, 1, UINT32_MAX);
	assert_int_equal(hu_frame_parse_hdr(h, sizeof(h), &hdr, &err), -1);
}

static void test_bad_fields(void **state)
{
	struct hu_field_iter it;
	struct hu_field f;
	hu_err err;

	/* a field header cut short */
	const uint8_t trunc_hdr[] = {0, 1, 0, 0, 0};
	hu_fields_init(&it, trunc_hdr, sizeof(trunc_hdr));
	assert_int_equal(hu_fields_next(&it, &f, &err), -1);
	assert_int_equal(hu_payload_validate(trunc_hdr, sizeof(trunc_hdr), &err), -1);
	/* a length past the payload, including one that would wrap */
	const uint8_t past[] = {0, 1, 0, 0, 0, 3, 'a', 'b'};
	hu_fields_init(&it, past, sizeof(past));
	assert_int_equal(hu_fields_next(&it, &f, &err), -1);
	const uint8_t huge[] = {0, 1, 0xff, 0xff, 0xff, 0xff, 'a'};
	hu_fields_init(&it, huge, sizeof(huge));
	assert_int_equal(hu_fields_next(&it, &f, &err), -1);
	assert_int_equal(hu_payload_validate(huge, sizeof(huge), &err), -1);
	assert_int_equal(err.code, EPROTO);
	/* an empty payload is fine */
	assert_int_equal(hu_payload_validate(NULL, 0, &err), 0);
	/* unknown tags are skipped */
	const uint8_t unknown[] = {0x7f, 0xff, 0, 0, 0, 2, 0, 0};
	assert_int_equal(hu_payload_validate(unknown, sizeof(unknown), &err), 0);
	/* wrong integer widths */
	const uint8_t pid3[] = {0, HU_F_PID, 0, 0, 0, 3, 1, 2, 3};
	assert_int_equal(hu_payload_validate(pid3, sizeof(pid3), &err), -1);
	hu_fields_init(&it, pid3, sizeof(pid3));
	assert_int_equal(hu_fields_next(&it, &f, &err), 1);
	uint32_t u32;
	uint8_t u8;
	uint16_t u16;
	uint64_t u64;
	assert_int_equal(hu_field_u32(&f, &u32, &err), -1);
	assert_int_equal(hu_field_u8(&f, &u8, &err), -1);
	assert_int_equal(hu_field_u16(&f, &u16, &err), -1);
	assert_int_equal(hu_field_u64(&f, &u64, &err), -1);
	const uint8_t stream2[] = {0, HU_F_STREAM, 0, 0, 0, 2, 1, 2};
	assert_int_equal(hu_payload_validate(stream2, sizeof(stream2), &err), -1);
	const uint8_t rows1[] = {0, HU_F_PTY_ROWS, 0, 0, 0, 1, 1};
	assert_int_equal(hu_payload_validate(rows1, sizeof(rows1), &err), -1);
	const uint8_t size4[] = {0, HU_F_SIZE, 0, 0, 0, 4, 1, 2, 3, 4};
	assert_int_equal(hu_payload_validate(size4, sizeof(size4), &err), -1);
}

static void test_embedded_nul(void **state)
{
	struct hu_buf b = {0};
	struct hu_field_iter it;
	struct hu_field f;
	hu_err err;
	char *s = NULL;

	hu_put_bytes(&b, HU_F_PATH, "/etc\0/shadow", 12);
	assert_int_equal(hu_payload_validate(b.data, b.len, &err), -1);
	assert_int_equal(err.code, EPROTO);
	hu_fields_init(&it, b.data, b.len);
	assert_int_equal(hu_fields_next(&it, &f, &err), 1);
	assert_int_equal(hu_field_strdup(&f, &s, &err), -1);
	assert_null(s);
	/* DATA is bytes: NUL is fine there */
	hu_buf_reset(&b);
	hu_put_bytes(&b, HU_F_DATA, "\0\0", 2);
	assert_int_equal(hu_payload_validate(b.data, b.len, &err), 0);
	hu_buf_free(&b);
}

static void test_nested(void **state)
{
	struct hu_buf b = {0};
	struct hu_field_iter it, inner;
	struct hu_field f, g;
	hu_err err;

	size_t off = hu_frame_begin(&b, HU_MSG_ENTRIES, 3);
	for (int i = 0; i < 3; i++) {
		size_t e = hu_put_nested_begin(&b, HU_F_ENTRY);
		hu_put_str(&b, HU_F_NAME, "x");
		hu_put_u32(&b, HU_F_UID, (uint32_t)i);
		hu_put_nested_end(&b, e);
	}
	assert_int_equal(hu_frame_end(&b, off), 0);
	const uint8_t *p = b.data + HU_PROTO_HEADER_SIZE;
	size_t len = b.len - HU_PROTO_HEADER_SIZE;
	assert_int_equal(hu_payload_validate(p, len, &err), 0);
	hu_fields_init(&it, p, len);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(hu_fields_next(&it, &f, &err), 1);
		assert_int_equal(f.tag, HU_F_ENTRY);
		hu_fields_init(&inner, f.val, f.len);
		assert_int_equal(hu_fields_next(&inner, &g, &err), 1);
		assert_int_equal(g.tag, HU_F_NAME);
		assert_int_equal(hu_fields_next(&inner, &g, &err), 1);
		uint32_t uid;
		assert_int_equal(hu_field_u32(&g, &uid, &err), 0);
		assert_int_equal(uid, i);
		assert_int_equal(hu_fields_next(&inner, &g, &err), 0);
	}
	assert_int_equal(hu_fields_next(&it, &f, &err), 0);

	/* A bad field inside a nested one fails the whole payload. */
	hu_buf_reset(&b);
	size_t e = hu_put_nested_begin(&b, HU_F_PROC);
	hu_put_u16(&b, HU_F_PID, 1);
	hu_put_nested_end(&b, e);
	assert_int_equal(hu_payload_validate(b.data, b.len, &err), -1);

	/* Nesting deeper than two levels is refused. */
	hu_buf_reset(&b);
	size_t outer = hu_put_nested_begin(&b, HU_F_PROC);
	size_t mid = hu_put_nested_begin(&b, HU_F_ENTRY);
	hu_put_u32(&b, HU_F_PID, 1);
	hu_put_nested_end(&b, mid);
	hu_put_nested_end(&b, outer);
	assert_int_equal(hu_payload_validate(b.data, b.len, &err), -1);
	assert_int_equal(err.code, EPROTO);

	/* A nested length running past its parent. */
	const uint8_t bad[] = {0, HU_F_PROC, 0, 0, 0, 7, 0, HU_F_PID, 0, 0, 0, 4, 1};
	assert_int_equal(hu_payload_validate(bad, sizeof(bad), &err), -1);
	hu_buf_free(&b);
}

static void test_max_size(void **state)
{
	struct hu_buf b = {0};
	struct hu_frame_hdr hdr;
	hu_err err;
	size_t room = HU_PROTO_MAX_PAYLOAD - 6;
	uint8_t *big = calloc(1, room + 1);
	assert_non_null(big);

	size_t off = hu_frame_begin(&b, HU_MSG_READ_DATA, 1);
	hu_put_bytes(&b, HU_F_DATA, big, room);
	assert_int_equal(hu_frame_end(&b, off), 0);
	assert_int_equal(hu_frame_parse_hdr(b.data, b.len, &hdr, &err), 0);
	assert_int_equal(hdr.len, HU_PROTO_MAX_PAYLOAD);
	assert_int_equal(hu_payload_validate(b.data + HU_PROTO_HEADER_SIZE, hdr.len, &err), 0);

	hu_buf_reset(&b);
	off = hu_frame_begin(&b, HU_MSG_READ_DATA, 1);
	hu_put_bytes(&b, HU_F_DATA, big, room + 1);
	assert_int_equal(hu_frame_end(&b, off), -1);
	free(big);
	hu_buf_free(&b);
}

static void test_oom_flag_sticks(void **state)
{
	struct hu_buf b = {0};
	size_t off = hu_frame_begin(&b, HU_MSG_PING, 1);
	b.oom = 1;
	hu_put_u32(&b, HU_F_PID, 1);
	assert_int_equal(b.len, HU_PROTO_HEADER_SIZE);
	assert_int_equal(hu_frame_end(&b, off), -1);
	hu_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_all_types),
		cmocka_unit_test(test_multiple_frames_in_one_buf),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_bad_fields),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_max_size),
		cmocka_unit_test(test_oom_flag_sticks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
