/*
 * How a response body is framed (daemon/http/response.h,
 * hu_response_framing): no body for a HEAD's answer and for 1xx, 204 and
 * 304; chunked; a Content-Length; else until the close; anything else in
 * Transfer-Encoding or a Content-Length that is not a number is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>

#include "daemon/http/response.h"

/* The framing of a response with status and, when not NULL, the two
 * headers; -1 when refused. */
static int framing(int status, bool head, const char *te, const char *cl, struct hu_framing *f)
{
	struct evkeyvalq h;
	hu_err err;

	TAILQ_INIT(&h);
	if (te)
		evhttp_add_header(&h, "Transfer-Encoding", te);
	if (cl)
		evhttp_add_header(&h, "Content-Length", cl);
	int rc = hu_response_framing(&h, status, head, 0, f, &err);
	evhttp_clear_headers(&h);
	return rc;
}

static void test_no_body(void **state)
{
	struct hu_framing f;

	assert_int_equal(framing(200, true, NULL, "100", &f), 0);
	assert_int_equal(f.mode, HU_FRAMING_LENGTH);
	assert_int_equal(f.left, 0);
	assert_int_equal(framing(204, false, "chunked", NULL, &f), 0);
	assert_int_equal(f.mode, HU_FRAMING_LENGTH);
	assert_int_equal(f.left, 0);
	assert_int_equal(framing(304, false, NULL, "7", &f), 0);
	assert_int_equal(f.left, 0);
}

static void test_chunked_sized_or_close(void **state)
{
	struct hu_framing f;

	assert_int_equal(framing(200, false, "chunked", "5", &f), 0);
	assert_int_equal(f.mode, HU_FRAMING_CHUNKED);
	assert_int_equal(framing(201, false, NULL, "1234", &f), 0);
	assert_int_equal(f.mode, HU_FRAMING_LENGTH);
	assert_int_equal(f.left, 1234);
	assert_int_equal(framing(200, false, NULL, NULL, &f), 0);
	assert_int_equal(f.mode, HU_FRAMING_CLOSE);
}

static void test_refused(void **state)
{
	struct hu_framing f;

	assert_int_equal(framing(200, false, "gzip, chunked", NULL, &f), -1);
	assert_int_equal(framing(200, false, NULL, "12a", &f), -1);
	assert_int_equal(framing(200, false, NULL, "", &f), -1);
	assert_int_equal(framing(200, false, NULL, "-1", &f), -1);
	assert_int_equal(framing(200, false, NULL, "1234567890123456789", &f), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_body),
		cmocka_unit_test(test_chunked_sized_or_close),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
