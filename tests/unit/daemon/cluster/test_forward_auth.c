/*
 * The forwarding proof (cluster/forward_auth.h): what one node signs the
 * other accepts, and nothing else does: another secret, method, target,
 * time, node or client address; a proof too old or from too far ahead; malformed ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "daemon/cluster/forward_auth.h"

#define SECRET "0123456789abcdef-cluster"
#define NOW 1760000000000LL
#define Z64 "0000000000000000000000000000000000000000000000000000000000000000"

static void sign_for(const char *method, const char *target, const char *node, const char *placement,
		     const char *client, int64_t at, char *out)
{
	hu_err err;
	assert_int_equal(hu_fwd_sign(SECRET, strlen(SECRET), method, target, node, placement, client, at, out,
				     HU_FWD_VALUE_MAX, &err),
			 0);
}

static void sign(const char *method, const char *target, const char *node, const char *placement, int64_t at,
		 char *out)
{
	sign_for(method, target, node, placement, "127.0.0.1", at, out);
}

static int verify(const char *secret, const char *method, const char *target, const char *value, int64_t now,
		  struct hu_fwd_claim *c)
{
	hu_err err;
	int rc = hu_fwd_verify(secret, strlen(secret), method, target, value, now, c, &err);
	if (rc < 0)
		assert_int_equal(err.code, EACCES);
	return rc;
}

static void test_round_trip(void **state)
{
	char v[HU_FWD_VALUE_MAX];
	struct hu_fwd_claim c;

	sign("POST", "/sandboxes", "n1", "0f1e2d3c", NOW, v);
	assert_int_equal(verify(SECRET, "POST", "/sandboxes", v, NOW + 500, &c), 0);
	assert_string_equal(c.node, "n1");
	assert_string_equal(c.placement, "0f1e2d3c");
	assert_string_equal(c.client, "127.0.0.1");
	assert_true(c.at_ms == NOW);
	sign("GET", "/files?path=%2Ftmp%2Fa&username=user", "node-2.x_y", NULL, NOW, v);
	assert_int_equal(verify(SECRET, "GET", "/files?path=%2Ftmp%2Fa&username=user", v, NOW - 9000, &c), 0);
	assert_string_equal(c.placement, "");
}

/* The client's address rides in the proof: IPv6 too; an address the format
 * cannot carry (a scope, a name) or none goes as unknown. */
static void test_client_address(void **state)
{
	char v[HU_FWD_VALUE_MAX];
	struct hu_fwd_claim c;

	sign_for("GET", "/x", "n1", NULL, "2001:db8::1", NOW, v);
	assert_int_equal(verify(SECRET, "GET", "/x", v, NOW, &c), 0);
	assert_string_equal(c.client, "2001:db8::1");
	static const char *const unknown[] = {NULL, "", "fe80::1%eth0", "evil host", "1.2.3.4, 5.6.7.8"};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		sign_for("GET", "/x", "n1", NULL, unknown[i], NOW, v);
		assert_non_null(strstr(v, " c=- "));
		assert_int_equal(verify(SECRET, "GET", "/x", v, NOW, &c), 0);
		assert_string_equal(c.client, "");
	}
}

static void test_refused(void **state)
{
	char v[HU_FWD_VALUE_MAX], t[HU_FWD_VALUE_MAX];
	struct hu_fwd_claim c;

	sign("POST", "/sandboxes", "n1", NULL, NOW, v);
	assert_int_equal(verify("another-secret-of-16+", "POST", "/sandboxes", v, NOW, &c), -1);
	assert_int_equal(verify(SECRET, "GET", "/sandboxes", v, NOW, &c), -1);
	assert_int_equal(verify(SECRET, "POST", "/sandboxes/x/pause", v, NOW, &c), -1);
	assert_int_equal(verify(SECRET, "POST", "/sandboxes", v, NOW + HU_FWD_VALID_MS + 1, &c), -1);
	assert_int_equal(verify(SECRET, "POST", "/sandboxes", v, NOW - HU_FWD_VALID_MS - 1, &c), -1);
	/* another node name or time in the text than the one signed */
	snprintf(t, sizeof(t), "%s", v);
	char *n = strstr(t, " n=n1 ");
	n[4] = '2';
	assert_int_equal(verify(SECRET, "POST", "/sandboxes", t, NOW, &c), -1);
	snprintf(t, sizeof(t), "%s", v);
	char *tm = strstr(t, " t=") + 3;
	tm[12] = tm[12] == '9' ? '8' : '9';
	assert_int_equal(verify(SECRET, "POST", "/sandboxes", t, NOW, &c), -1);
	/* another client address than the one signed (a node cannot be made
	 * to vouch for an address it did not see) */
	snprintf(t, sizeof(t), "%s", v);
	char *cl = strstr(t, " c=127.0.0.1 ") + 3;
	cl[0] = '6';
	assert_int_equal(verify(SECRET, "POST", "/sandboxes", t, NOW, &c), -1);
	/* a flipped digit of the HMAC */
	snprintf(t, sizeof(t), "%s", v);
	char *s = strstr(t, " s=") + 3;
	s[10] = s[10] == 'a' ? 'b' : 'a';
	assert_int_equal(verify(SECRET, "POST", "/sandboxes", t, NOW, &c), -1);
	static const char *const bad[] = {
		"", "v2", "v2 t=1 n=a p=- c=- s=00", "v2 t=1 n=a p=- c=- s=", "v2 t=x n=a p=- c=- s=" Z64,
		"v2  t=1 n=a p=- c=- s=" Z64,
		"v2 t=1 n=a p=- c=- s=" Z64 " x=1",
		"v2 t=99999999999999999999999 n=a p=- c=- s=" Z64,
		"v2 n=a t=1 p=- c=- s=" Z64,
		"v2 t=1 n=a/b p=- c=- s=" Z64,
		"v2 t=1 n=a p=- s=" Z64,                 /* no client field */
		"v2 t=1 n=a p=- c=6.6.6.6,1.1.1.1 s=" Z64, /* a list, as X-Forwarded-For */
		"v2 t=1 n=a p=- c= s=" Z64,
		"v1 t=1 n=a p=- s=" Z64,                 /* the version before the client address */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(verify(SECRET, "POST", "/sandboxes", bad[i], NOW, &c), -1);
}

static void test_sign_refuses_what_it_cannot_carry(void **state)
{
	char v[HU_FWD_VALUE_MAX];
	hu_err err;

	assert_int_equal(hu_fwd_sign(SECRET, strlen(SECRET), "GET", "/", "a b", NULL, NULL, NOW, v, sizeof(v), &err), -1);
	assert_int_equal(hu_fwd_sign(SECRET, strlen(SECRET), "GET", "/", "n1", "x y", NULL, NOW, v, sizeof(v), &err), -1);
	assert_int_equal(hu_fwd_sign(SECRET, strlen(SECRET), "GET", "/", "", NULL, NULL, NOW, v, sizeof(v), &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_client_address),
		cmocka_unit_test(test_sign_refuses_what_it_cannot_carry),
	};
	return cmocka_run_group_tests_name("cluster: forwarding proof", tests, NULL, NULL);
}
