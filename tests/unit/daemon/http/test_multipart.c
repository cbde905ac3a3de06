/*
 * The multipart/form-data parser: well-formed bodies fed whole and one byte
 * at a time give the same parts; binary content and boundary look-alikes
 * pass through; every malformed input is an error, never a crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/multipart.h"

#define BOUNDARY "----formdata-undici-012345678901"
#define MAX_PARTS 8

struct got_part {
	char name[HU_MULTIPART_MAX_NAME];
	char filename[PATH_MAX];
	bool has_filename;
	char content_type[HU_MULTIPART_MAX_NAME];
	uint8_t data[4096];
	size_t len;
	uint64_t begin, end;
	bool ended;
};

struct collector {
	struct got_part parts[MAX_PARTS];
	size_t n;
	int fail_at_part; /* on_part_begin fails for this index (-1: never) */
};

static int on_begin(void *arg, const struct hu_multipart_part *part, hu_err *err)
{
	struct collector *c = arg;
	if ((int)part->index == c->fail_at_part)
		return hu_err_set(err, EPERM, "refused part %llu", (unsigned long long)part->index);
	assert_true(c->n < MAX_PARTS);
	assert_int_equal(part->index, c->n);
	struct got_part *g = &c->parts[c->n++];
	memset(g, 0, sizeof(*g));
	strcpy(g->name, part->name);
	strcpy(g->filename, part->filename);
	strcpy(g->content_type, part->content_type);
	g->has_filename = part->has_filename;
	g->begin = part->data_offset;
	return 0;
}

static int on_data(void *arg, const uint8_t *p, size_t n, hu_err *err)
{
	struct collector *c = arg;
	struct got_part *g = &c->parts[c->n - 1];
	assert_false(g->ended);
	assert_true(g->len + n <= sizeof(g->data));
	memcpy(g->data + g->len, p, n);
	g->len += n;
	return 0;
}

static int on_end(void *arg, uint64_t end, hu_err *err)
{
	struct collector *c = arg;
	struct got_part *g = &c->parts[c->n - 1];
	g->end = end;
	g->ended = true;
	return 0;
}

/* Parse body in pieces of `step` bytes (0: all at once). Returns the
 * result of the whole parse (feed and finish); err says why on -1. */
static int parse(const char *boundary, const void *body, size_t len, size_t step, struct collector *c, hu_err *err)
{
	struct hu_multipart_cbs cbs = {on_begin, on_data, on_end, c};
	struct hu_multipart *mp;
	const uint8_t *p = body;
	int r = 0;

	memset(c->parts, 0, sizeof(c->parts));
	c->n = 0;
	assert_int_equal(hu_multipart_new(boundary, &cbs, &mp, err), 0);
	if (step == 0)
		step = len ? len : 1;
	for (size_t off = 0; off < len && r == 0; off += step)
		r = hu_multipart_feed(mp, p + off, len - off < step ? len - off : step, err);
	if (r == 0)
		r = hu_multipart_finish(mp, err);
	hu_multipart_free(mp);
	return r;
}

/* Parse whole, byte by byte and in 7-byte pieces: all must agree. */
static void parse_ok(const char *boundary, const void *body, size_t len, struct collector *c)
{
	static const size_t steps[] = {1, 7, 0};
	struct collector ref = {.fail_at_part = -1};
	hu_err err;

	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		c->fail_at_part = -1;
		if (parse(boundary, body, len, steps[s], c, &err) < 0)
			fail_msg("step %zu: %s", steps[s], err.msg);
		if (s == 0) {
			ref = *c;
			continue;
		}
		assert_int_equal(c->n, ref.n);
		for (size_t i = 0; i < c->n; i++) {
			assert_int_equal(c->parts[i].len, ref.parts[i].len);
			assert_memory_equal(c->parts[i].data, ref.parts[i].data, c->parts[i].len);
			assert_int_equal(c->parts[i].begin, ref.parts[i].begin);
			assert_int_equal(c->parts[i].end, ref.parts[i].end);
		}
	}
	/* The offsets frame exactly the content in the body. */
	for (size_t i = 0; i < c->n; i++) {
		assert_true(c->parts[i].ended);
		assert_int_equal(c->parts[i].end - c->parts[i].begin, c->parts[i].len);
		assert_memory_equal((const uint8_t *)body + c->parts[i].begin, c->parts[i].data, c->parts[i].len);
	}
}

static void expect_error(const char *boundary, const void *body, size_t len, int code)
{
	struct collector c = {.fail_at_part = -1};
	hu_err err;
	static const size_t steps[] = {1, 0};
	for (size_t s = 0; s < 2; s++) {
		assert_int_equal(parse(boundary, body, len, steps[s], &c, &err), -1);
		assert_int_equal(err.code, code);
		assert_true(err.msg[0] != '\0');
	}
}

#define S(lit) lit, sizeof(lit) - 1

/* ---- tests -------------------------------------------------------------------- */

static void test_single_part_as_node_sends_it(void **state)
{
	/* The exact shape undici's FormData produces. */
	static const char body[] = "--" BOUNDARY "\r\n"
				   "Content-Disposition: form-data; name=\"file\"; filename=\"/home/user/dir/a.txt\"\r\n"
				   "Content-Type: application/octet-stream\r\n"
				   "\r\n"
				   "hello world\r\n"
				   "--" BOUNDARY "--\r\n";
	struct collector c;
	parse_ok(BOUNDARY, S(body), &c);
	assert_int_equal(c.n, 1);
	assert_string_equal(c.parts[0].name, "file");
	assert_true(c.parts[0].has_filename);
	assert_string_equal(c.parts[0].filename, "/home/user/dir/a.txt"); /* full path, not basenamed */
	assert_string_equal(c.parts[0].content_type, "application/octet-stream");
	assert_int_equal(c.parts[0].len, 11);
	assert_memory_equal(c.parts[0].data, "hello world", 11);
}

static void test_several_parts_preamble_epilogue(void **state)
{
	static const char body[] = "this preamble is ignored\r\n"
				   "--XyZ\r\n"
				   "content-disposition: form-data; name=file; filename=one\r\n"
				   "\r\n"
				   "1\r\n"
				   "--XyZ  \t\r\n" /* transport padding */
				   "Content-Disposition: form-data; name=\"other\"\r\n"
				   "\r\n"
				   "\r\n\r\n" /* content: one CRLF */
				   "--XyZ\r\n"
				   "CONTENT-DISPOSITION: form-data; NAME=\"file\"; FILENAME=\"rel/two\"\r\n"
				   "\r\n"
				   "\r\n"
				   "--XyZ--"
				   "epilogue, ignored too\r\n--XyZ\r\n";
	struct collector c;
	parse_ok("XyZ", S(body), &c);
	assert_int_equal(c.n, 3);
	assert_string_equal(c.parts[0].filename, "one");
	assert_memory_equal(c.parts[0].data, "1", 1);
	assert_int_equal(c.parts[0].len, 1);
	assert_string_equal(c.parts[1].name, "other");
	assert_false(c.parts[1].has_filename);
	assert_int_equal(c.parts[1].len, 2);
	assert_string_equal(c.parts[2].name, "file");
	assert_string_equal(c.parts[2].filename, "rel/two");
	assert_int_equal(c.parts[2].len, 0);
}

static void test_binary_content_and_boundary_lookalikes(void **state)
{
	/* CRLFs, NULs, a CR before the real delimiter, the boundary text without
	 * its CRLF, a delimiter followed by other text, "--B-" and "--B--x"
	 * prefixes inside content: all content. */
	static const char content[] = "a\r\nb\0c\r\r\n\n--B\r\n"  /* boundary text, no CRLF before */
				      "\r\n--Bx\r\n"              /* delimiter + "x" */
				      "\r\n--B-\r\n"              /* delimiter + "-" + CRLF */
				      "\r\n--B \t x\r\n"          /* padding then text */
				      "\r\n--\r\n-\r\n--"
				      "\r\n--B\r\r"               /* CR CR */
				      "end\r";
	char body[512];
	size_t n = 0;
	n += (size_t)sprintf(body + n, "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"bin\"\r\n\r\n");
	memcpy(body + n, content, sizeof(content) - 1);
	n += sizeof(content) - 1;
	n += (size_t)sprintf(body + n, "\r\n--B--\r\n");

	struct collector c;
	parse_ok("B", body, n, &c);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.parts[0].len, sizeof(content) - 1);
	assert_memory_equal(c.parts[0].data, content, sizeof(content) - 1);
}

static void test_all_byte_values(void **state)
{
	uint8_t content[1024];
	char body[2048];
	size_t n = 0;
	for (size_t i = 0; i < sizeof(content); i++)
		content[i] = (uint8_t)(i * 37 + (i >> 8));
	n += (size_t)sprintf(body + n, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n", BOUNDARY);
	memcpy(body + n, content, sizeof(content));
	n += sizeof(content);
	n += (size_t)sprintf(body + n, "\r\n--%s--", BOUNDARY);
	struct collector c;
	parse_ok(BOUNDARY, body, n, &c);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.parts[0].len, sizeof(content));
	assert_memory_equal(c.parts[0].data, content, sizeof(content));
}

static void test_boundary_from_content_type(void **state)
{
	char b[HU_MULTIPART_MAX_BOUNDARY + 1];
	hu_err err;

	assert_int_equal(hu_multipart_boundary("multipart/form-data; boundary=" BOUNDARY, b, sizeof(b), &err), 0);
	assert_string_equal(b, BOUNDARY);
	assert_int_equal(hu_multipart_boundary("Multipart/Form-Data;boundary=\"a b:c\"; charset=utf-8", b, sizeof(b), &err), 0);
	assert_string_equal(b, "a b:c");

	const char *bad[] = {
		NULL,
		"",
		"application/octet-stream",
		"multipart/form-data",                         /* no boundary */
		"multipart/form-data; boundary=",              /* empty */
		"multipart/form-data; boundary=\"\"",          /* empty, quoted */
		"multipart/form-data; boundary=\"ends in space \"",
		"multipart/form-data; boundary=a;boundary=b",  /* duplicate */
		"multipart/form-data; boundary=\"unterminated",
		"multipart/form-data; boundary=bad{char}",
		"multipart/form-data; boundary=12345678901234567890123456789012345678901234567890123456789012345678901", /* 71 */
		"multipart/form-data; =x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.code = 0;
		if (hu_multipart_boundary(bad[i], b, sizeof(b), &err) != -1)
			fail_msg("accepted %s", bad[i] ? bad[i] : "NULL");
		assert_int_equal(err.code, EINVAL);
	}
	/* 70 is the limit and allowed. */
	assert_int_equal(hu_multipart_boundary("multipart/form-data; boundary=1234567890123456789012345678901234567890"
					       "123456789012345678901234567890", b, sizeof(b), &err), 0);
	assert_int_equal(strlen(b), 70);
}

static void test_missing_boundary_in_body(void **state)
{
	/* No delimiter at all: everything is preamble and the close is missing. */
	expect_error("B", S("just some bytes\r\nno boundary here\r\n"), EINVAL);
	/* A different boundary than announced. */
	expect_error("B", S("--C\r\n\r\nx\r\n--C--\r\n"), EINVAL);
	/* Empty body. */
	expect_error("B", "", 0, EINVAL);
}

static void test_truncated_bodies(void **state)
{
	static const char body[] = "--B\r\n"
				   "Content-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n"
				   "\r\n"
				   "data\r\n"
				   "--B--\r\n";
	/* Every proper prefix that stops before the close delimiter fails. */
	size_t close_at = strstr(body, "--B--") - body + 5;
	for (size_t len = 0; len < close_at; len++)
		expect_error("B", body, len, EINVAL);
	struct collector c;
	parse_ok("B", body, close_at, &c);
	assert_int_equal(c.n, 1);
}

static void test_header_limits_and_syntax(void **state)
{
	size_t cap = HU_MULTIPART_MAX_HEADERS + 256;
	char *body = malloc(cap);
	assert_non_null(body);
	size_t n = (size_t)sprintf(body, "--B\r\nX-Long: ");
	while (n < HU_MULTIPART_MAX_HEADERS + 16)
		body[n++] = 'a';
	n += (size_t)sprintf(body + n, "\r\n\r\nx\r\n--B--");
	expect_error("B", body, n, E2BIG);
	free(body);

	expect_error("B", S("--B\r\nNo colon here\r\n\r\nx\r\n--B--"), EINVAL);
	expect_error("B", S("--B\r\nX: a\r\n folded\r\n\r\nx\r\n--B--"), EINVAL);
	expect_error("B", S("--B\r\nX: a\nb\r\n\r\nx\r\n--B--"), EINVAL);
	expect_error("B", S("--B\r\nX: a\0b\r\n\r\nx\r\n--B--"), EINVAL);
	expect_error("B", S("--B\r\nContent-Disposition: form-data; name=\"unterminated\r\n\r\nx\r\n--B--"), EINVAL);
	expect_error("B", S("--B\r\nContent-Disposition: form-data\r\nContent-Disposition: form-data\r\n\r\nx\r\n--B--"),
		     EINVAL);
	/* A delimiter line with too much padding is content; then the body
	 * lacks its close. */
	char padded[256];
	n = (size_t)sprintf(padded, "--B\r\n\r\nx\r\n--B");
	memset(padded + n, ' ', HU_MULTIPART_MAX_PADDING + 1);
	n += HU_MULTIPART_MAX_PADDING + 1;
	n += (size_t)sprintf(padded + n, "\r\n");
	expect_error("B", padded, n, EINVAL);
}

static void test_mime_params(void **state)
{
	char out[64];
	hu_err err;

	assert_int_equal(hu_mime_param("form-data; name=\"a\\\"b\\\\c\"; filename=x.txt", "name", out, sizeof(out), &err), 1);
	assert_string_equal(out, "a\"b\\c");
	assert_int_equal(hu_mime_param("form-data; name=\"a\"", "filename", out, sizeof(out), &err), 0);
	/* filename* (RFC 5987) wins over filename. */
	assert_int_equal(hu_mime_param("form-data; filename=\"plain\"; filename*=UTF-8''%2Fhome%2Fuser%2F%C3%A9t%C3%A9",
				       "filename", out, sizeof(out), &err), 1);
	assert_string_equal(out, "/home/user/\xc3\xa9t\xc3\xa9");
	assert_int_equal(hu_mime_param("form-data; filename*=UTF-8''a%00b", "filename", out, sizeof(out), &err), -1);
	assert_int_equal(hu_mime_param("form-data; filename*=latin2''x", "filename", out, sizeof(out), &err), -1);
	assert_int_equal(hu_mime_param("form-data; filename*=UTF-8''%zz", "filename", out, sizeof(out), &err), -1);
	/* Too long for the buffer: an error, not a truncation. */
	assert_int_equal(hu_mime_param("form-data; name=0123456789", "name", out, 8, &err), -1);
	assert_int_equal(err.code, EINVAL);
	/* No parameters at all, a trailing ';'. */
	assert_int_equal(hu_mime_param("form-data", "name", out, sizeof(out), &err), 0);
	assert_int_equal(hu_mime_param("form-data;", "name", out, sizeof(out), &err), 0);
	assert_int_equal(hu_mime_param("form-data; name=a b", "name", out, sizeof(out), &err), -1);
}

static void test_callback_error_stops_parse(void **state)
{
	static const char body[] = "--B\r\n\r\n1\r\n--B\r\n\r\n2\r\n--B--";
	struct collector c = {.fail_at_part = 1};
	struct hu_multipart_cbs cbs = {on_begin, on_data, on_end, &c};
	struct hu_multipart *mp;
	hu_err err;

	assert_int_equal(hu_multipart_new("B", &cbs, &mp, &err), 0);
	assert_int_equal(hu_multipart_feed(mp, (const uint8_t *)body, sizeof(body) - 1, &err), -1);
	assert_int_equal(err.code, EPERM);
	/* The parser stays failed, with the same error. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(hu_multipart_feed(mp, (const uint8_t *)"x", 1, &err), -1);
	assert_int_equal(err.code, EPERM);
	assert_int_equal(hu_multipart_finish(mp, &err), -1);
	assert_int_equal(c.n, 1);
	hu_multipart_free(mp);
}

static void test_bad_boundary_for_parser(void **state)
{
	struct hu_multipart *mp;
	hu_err err;
	assert_int_equal(hu_multipart_new("", NULL, &mp, &err), -1);
	assert_int_equal(hu_multipart_new("a\r\nb", NULL, &mp, &err), -1);
	/* No callbacks at all is fine (validation only). */
	assert_int_equal(hu_multipart_new("B", NULL, &mp, &err), 0);
	assert_int_equal(hu_multipart_feed(mp, (const uint8_t *)"--B\r\n\r\nx\r\n--B--", 15, &err), 0);
	assert_int_equal(hu_multipart_finish(mp, &err), 0);
	hu_multipart_free(mp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_part_as_node_sends_it),
		cmocka_unit_test(test_several_parts_preamble_epilogue),
		cmocka_unit_test(test_binary_content_and_boundary_lookalikes),
		cmocka_unit_test(test_all_byte_values),
		cmocka_unit_test(test_boundary_from_content_type),
		cmocka_unit_test(test_missing_boundary_in_body),
		cmocka_unit_test(test_truncated_bodies),
		cmocka_unit_test(test_header_limits_and_syntax),
		cmocka_unit_test(test_mime_params),
		cmocka_unit_test(test_callback_error_stops_parse),
		cmocka_unit_test(test_bad_boundary_for_parser),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
