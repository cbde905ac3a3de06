/* Archive entry paths and OCI whiteout names (src/template/tpl_path.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <string.h>

#include "template/template.h"

static void test_norm_accepts(void **state)
{
	static const char *const cases[][2] = {
		{"a", "a"}, {"./a", "a"}, {"a/b/c", "a/b/c"}, {"a//b/", "a/b"}, {"./a/./b", "a/b"},
		{".", ""}, {"./", ""}, {"", ""}, {"a..b/..c", "a..b/..c"}, {".wh..wh..opq", ".wh..wh..opq"},
	};
	char out[PATH_MAX];
	hu_err err;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(hu_tpl_norm_path(cases[i][0], out, sizeof(out), &err), 0);
		assert_string_equal(out, cases[i][1]);
	}
}

static void test_norm_refuses(void **state)
{
	static const char *const bad[] = {"/etc/passwd", "/", "..", "../x", "a/../../x", "a/..", "./..", "a/b/../c"};
	char out[PATH_MAX];
	hu_err err;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.code = 0;
		assert_int_equal(hu_tpl_norm_path(bad[i], out, sizeof(out), &err), -1);
		assert_int_equal(err.code, EINVAL);
	}
	char longname[NAME_MAX + 2];
	memset(longname, 'x', sizeof(longname));
	longname[NAME_MAX + 1] = '\0';
	assert_int_equal(hu_tpl_norm_path(longname, out, sizeof(out), &err), -1);
	assert_int_equal(err.code, ENAMETOOLONG);
	char small[4];
	assert_int_equal(hu_tpl_norm_path("abcd", small, sizeof(small), &err), -1);
	assert_int_equal(hu_tpl_norm_path("abc", small, sizeof(small), &err), 0);
}

static void test_whiteouts(void **state)
{
	char t[PATH_MAX];
	assert_int_equal(hu_tpl_whiteout("a/b", t, sizeof(t)), HU_TPL_WH_NONE);
	assert_int_equal(hu_tpl_whiteout("a/.whx", t, sizeof(t)), HU_TPL_WH_NONE);
	assert_int_equal(hu_tpl_whiteout("a/.wh.b", t, sizeof(t)), HU_TPL_WH_FILE);
	assert_string_equal(t, "a/b");
	assert_int_equal(hu_tpl_whiteout(".wh.top", t, sizeof(t)), HU_TPL_WH_FILE);
	assert_string_equal(t, "top");
	assert_int_equal(hu_tpl_whiteout("x/y/.wh..wh..opq", t, sizeof(t)), HU_TPL_WH_OPAQUE);
	assert_string_equal(t, "x/y");
	assert_int_equal(hu_tpl_whiteout(".wh..wh..opq", t, sizeof(t)), HU_TPL_WH_OPAQUE);
	assert_string_equal(t, "");
	/* the layer tool's own names, and names that would name the dir itself */
	assert_int_equal(hu_tpl_whiteout("a/.wh..wh.plnk", t, sizeof(t)), HU_TPL_WH_META);
	assert_int_equal(hu_tpl_whiteout("a/.wh.", t, sizeof(t)), HU_TPL_WH_META);
	assert_int_equal(hu_tpl_whiteout("a/.wh..", t, sizeof(t)), HU_TPL_WH_META);
	assert_int_equal(hu_tpl_whiteout("a/.wh...", t, sizeof(t)), HU_TPL_WH_META);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_norm_accepts),
		cmocka_unit_test(test_norm_refuses),
		cmocka_unit_test(test_whiteouts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
