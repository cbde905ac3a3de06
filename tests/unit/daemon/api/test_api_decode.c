/* Control-plane body and query decoders (api_json.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "daemon/api/api_json.h"
#include "util/rfc3339.h"
#include "daemon/sandboxes/registry.h"

static json_t *js(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
	assert_non_null(v);
	return v;
}

/* Decode a NewSandbox body that must be refused, with msg_part in the
 * message. */
static void new_bad(const char *text, const char *msg_part)
{
	struct hu_new_sandbox ns;
	json_t *body = js(text);
	hu_err err;

	assert_int_equal(hu_api_decode_new_sandbox(body, &ns, &err), -1);
	assert_int_equal(err.code, EINVAL);
	if (!strstr(err.msg, msg_part))
		fail_msg("'%s': message '%s' lacks '%s'", text, err.msg, msg_part);
	assert_null(ns.metadata);
	assert_null(ns.env_vars);
	json_decref(body);
}

static void test_new_sandbox_full(void **state)
{
	struct hu_new_sandbox ns;
	json_t *body = js("{\"templateID\":\"base\",\"timeout\":60,\"metadata\":{\"lea.session_id\":\"s1\"},"
			  "\"envVars\":{\"FOO\":\"bar\"},\"allow_internet_access\":false,\"autoPause\":true,"
			  "\"autoResume\":{\"enabled\":true},\"network\":{\"allowOut\":[]},\"unknown\":[1,2],"
			  "\"secure\":true,\"volumeMounts\":[]}");
	hu_err err;

	assert_int_equal(hu_api_decode_new_sandbox(body, &ns, &err), 0);
	json_decref(body);
	assert_string_equal(ns.template_id, "base");
	assert_int_equal(ns.timeout_s, 60);
	assert_string_equal(json_string_value(json_object_get(ns.metadata, "lea.session_id")), "s1");
	assert_string_equal(json_string_value(json_object_get(ns.env_vars, "FOO")), "bar");
	assert_int_equal(ns.allow_internet, 0);
	assert_int_equal(ns.auto_pause, 1);
	assert_int_equal(ns.auto_resume, 1);
	assert_int_equal(ns.auto_pause_memory, 1);
	hu_new_sandbox_clear(&ns);
}

static void test_new_sandbox_defaults(void **state)
{
	struct hu_new_sandbox ns;
	json_t *body = js("{\"timeout\":null,\"metadata\":null}");
	hu_err err;

	assert_int_equal(hu_api_decode_new_sandbox(body, &ns, &err), 0);
	assert_string_equal(ns.template_id, "base");
	assert_int_equal(ns.timeout_s, 0);
	assert_int_equal(json_object_size(ns.metadata), 0);
	assert_int_equal(json_object_size(ns.env_vars), 0);
	assert_int_equal(ns.allow_internet, -1);
	assert_int_equal(ns.auto_pause, 0);
	hu_new_sandbox_clear(&ns);
	json_decref(body);

	/* 300.0 is a whole number of seconds. */
	body = js("{\"timeout\":300.0}");
	assert_int_equal(hu_api_decode_new_sandbox(body, &ns, &err), 0);
	assert_int_equal(ns.timeout_s, 300);
	hu_new_sandbox_clear(&ns);
	json_decref(body);
}

static void test_new_sandbox_wrong_types(void **state)
{
	new_bad("[]", "JSON object");
	new_bad("{\"templateID\":5}", "templateID");
	new_bad("{\"templateID\":\"\"}", "templateID");
	new_bad("{\"timeout\":\"60\"}", "timeout");
	new_bad("{\"timeout\":1.5}", "timeout");
	new_bad("{\"timeout\":true}", "timeout");
	new_bad("{\"allow_internet_access\":\"yes\"}", "allow_internet_access");
	new_bad("{\"autoPause\":1}", "autoPause");
	new_bad("{\"autoResume\":true}", "autoResume");
	new_bad("{\"autoResume\":{\"enabled\":\"x\"},\"autoPause\":true}", "autoResume");
	new_bad("{\"network\":[]}", "network");
	new_bad("{\"volumeMounts\":[{\"name\":\"v\",\"path\":\"/proc\"}]}", "volumeMounts[0]");
	new_bad("{\"volumeMounts\":{\"name\":\"v\"}}", "volumeMounts");
	new_bad("{\"metadata\":{\"host-mount\":\"[{\\\"hostPath\\\":\\\"/a/../b\\\",\\\"mountPath\\\":\\\"/w\\\"}]\"}}",
		"host-mount[0]");
}

static void test_new_sandbox_network(void **state)
{
	struct hu_new_sandbox ns;
	json_t *body = js("{\"network\":{\"allowOut\":[\"198.51.100.10\",\"203.0.113.0/24\"],"
			  "\"denyOut\":[\"0.0.0.0/0\"],\"allowPublicTraffic\":false,\"rules\":{}}}");
	hu_err err;

	assert_int_equal(hu_api_decode_new_sandbox(body, &ns, &err), 0);
	assert_int_equal(ns.has_network, 1);
	assert_int_equal(ns.net.n_allow, 2);
	assert_int_equal(ns.net.n_deny, 1);
	assert_int_equal(ns.net.allow[0].addr, 0xc633640au);
	assert_int_equal(ns.net.allow[1].len, 24);
	assert_int_equal(ns.private_traffic, 1);
	assert_string_equal(ns.mask_host, "");
	hu_new_sandbox_clear(&ns);
	json_decref(body);
	body = js("{\"network\":{\"allowPublicTraffic\":true,\"maskRequestHost\":\"localhost:${PORT}\"}}");
	assert_int_equal(hu_api_decode_new_sandbox(body, &ns, &err), 0);
	assert_int_equal(ns.private_traffic, 0);
	assert_string_equal(ns.mask_host, "localhost:${PORT}");
	hu_new_sandbox_clear(&ns);
	json_decref(body);
	new_bad("{\"network\":{\"maskRequestHost\":\"a b\"}}", "maskRequestHost");
	new_bad("{\"network\":{\"maskRequestHost\":\"x\\r\\nX-Evil: 1\"}}", "maskRequestHost");
	new_bad("{\"network\":{\"maskRequestHost\":7}}", "maskRequestHost");
	new_bad("{\"network\":{\"allowPublicTraffic\":\"no\"}}", "allowPublicTraffic");

	new_bad("{\"network\":{\"allowOut\":\"1.2.3.4\"}}", "network.allowOut must be an array");
	new_bad("{\"network\":{\"denyOut\":[5]}}", "network.denyOut[0] must be a string");
	new_bad("{\"network\":{\"allowOut\":[\"example.com\"]}}", "domain names need denyOut");
	new_bad("{\"network\":{\"allowOut\":[\"example.com\"],\"denyOut\":[\"1.2.3.4\"]}}", "denyOut to deny all");
	new_bad("{\"network\":{\"denyOut\":[\"example.com\"]}}", "allowOut only");
	new_bad("{\"network\":{\"allowOut\":[\"*.com\"],\"denyOut\":[\"0.0.0.0/0\"]}}", "wildcard");
	new_bad("{\"network\":{\"denyOut\":[\"::/129\"]}}", "prefix length");
	new_bad("{\"network\":{\"denyOut\":[\"fe80::1%eth0\"]}}", "not an IPv6 address");
	new_bad("{\"network\":{\"denyOut\":[\"1.2.3.4/99\"]}}", "prefix length");
	new_bad("{\"network\":{\"egressProxy\":{\"address\":\"p:1080\"}}}", "egressProxy");
	new_bad("{\"network\":{\"rules\":{\"api.example.com\":[{}]}}}", "network.rules");
	new_bad("{\"allow_internet_access\":false,\"network\":{\"denyOut\":[\"1.2.3.4\"]}}", "need allow_internet_access");
}

static void test_network_update(void **state)
{
	struct hu_net_rules r;
	json_t *body = js("{\"denyOut\":[\"198.51.100.20\"],\"allow_internet_access\":true}");
	hu_err err;
	int allow;

	assert_int_equal(hu_api_decode_network_update(body, &r, &allow, &err), 0);
	assert_int_equal(allow, 1);
	assert_int_equal(r.n_allow, 0);
	assert_int_equal(r.n_deny, 1);
	json_decref(body);
	body = js("{}");
	assert_int_equal(hu_api_decode_network_update(body, &r, &allow, &err), 0);
	assert_int_equal(allow, -1);
	assert_int_equal(r.n_deny, 0);
	json_decref(body);
	body = js("[]");
	assert_int_equal(hu_api_decode_network_update(body, &r, &allow, &err), -1);
	assert_int_equal(err.code, EINVAL);
	json_decref(body);
}

static void test_new_sandbox_timeout_range(void **state)
{
	new_bad("{\"timeout\":-2}", "-1 for never");
	new_bad("{\"timeout\":86401}", "at most");
	new_bad("{\"timeout\":1e300}", "timeout");
	new_bad("{\"timeout\":-9223372036854775807}", "-1 for never");
}

static void test_new_sandbox_maps(void **state)
{
	new_bad("{\"metadata\":[\"a\"]}", "metadata must be an object");
	new_bad("{\"metadata\":\"a=b\"}", "metadata must be an object");
	new_bad("{\"metadata\":{\"a\":1}}", "metadata.a must be a string");
	new_bad("{\"metadata\":{\"a\":null}}", "metadata.a must be a string");
	new_bad("{\"metadata\":{\"\":\"x\"}}", "keys must be");
	new_bad("{\"envVars\":{\"A\":{}}}", "envVars.A must be a string");
	new_bad("{\"envVars\":{\"A=B\":\"x\"}}", "not a valid variable name");
	new_bad("{\"envVars\":{\"1A\":\"x\"}}", "not a valid variable name");
	/* metadata decoded, then envVars refused: nothing leaks (ASan). */
	new_bad("{\"metadata\":{\"a\":\"b\"},\"envVars\":[]}", "envVars");
}

static void test_new_sandbox_lifecycle_rules(void **state)
{
	new_bad("{\"autoResume\":{\"enabled\":true}}", "requires autoPause");
	new_bad("{\"autoPause\":true,\"autoPauseMemory\":false,\"autoResume\":{\"enabled\":true}}", "autoPauseMemory");
}

static void test_timeout_bodies(void **state)
{
	struct hu_connect_req c;
	int32_t secs = -1;
	int present, memory;
	json_t *body;
	hu_err err;

	body = js("{\"timeout\":30}");
	assert_int_equal(hu_api_decode_timeout(body, &secs, &err), 0);
	assert_int_equal(secs, 30);
	json_decref(body);

	body = js("{}");
	assert_int_equal(hu_api_decode_timeout(body, &secs, &err), -1);
	assert_non_null(strstr(err.msg, "required"));
	assert_int_equal(hu_api_decode_refresh(body, &present, &secs, &err), 0);
	assert_int_equal(present, 0);
	assert_int_equal(hu_api_decode_connect(body, &c, &err), 0);
	assert_int_equal(c.has_timeout, 0);
	assert_int_equal(c.memory, 1);
	assert_int_equal(hu_api_decode_pause(body, &memory, &err), 0);
	assert_int_equal(memory, 1);
	json_decref(body);

	body = js("{\"timeout\":-5,\"duration\":-5}");
	assert_int_equal(hu_api_decode_timeout(body, &secs, &err), -1);
	assert_int_equal(err.code, EINVAL);
	assert_int_equal(hu_api_decode_refresh(body, &present, &secs, &err), -1);
	assert_non_null(strstr(err.msg, "duration"));
	assert_int_equal(hu_api_decode_connect(body, &c, &err), -1);
	json_decref(body);

	body = js("{\"timeout\":\"x\"}");
	assert_int_equal(hu_api_decode_timeout(body, &secs, &err), -1);
	assert_non_null(strstr(err.msg, "timeout"));
	json_decref(body);

	body = js("{\"timeout\":120,\"memory\":false,\"autoPause\":true}");
	assert_int_equal(hu_api_decode_connect(body, &c, &err), 0);
	assert_int_equal(c.has_timeout, 1);
	assert_int_equal(c.timeout_s, 120);
	assert_int_equal(c.memory, 0);
	assert_int_equal(hu_api_decode_pause(body, &memory, &err), 0);
	assert_int_equal(memory, 0);
	json_decref(body);

	body = js("{\"memory\":\"no\"}");
	assert_int_equal(hu_api_decode_pause(body, &memory, &err), -1);
	assert_non_null(strstr(err.msg, "memory"));
	assert_int_equal(hu_api_decode_connect(body, &c, &err), -1);
	json_decref(body);

	body = js("7");
	assert_int_equal(hu_api_decode_pause(body, &memory, &err), -1);
	assert_int_equal(hu_api_decode_timeout(body, &secs, &err), -1);
	json_decref(body);
}

static void test_time_format_and_parse(void **state)
{
	char buf[HU_TIME_STR_MAX];
	int64_t ms;
	hu_err err;

	hu_rfc3339_format(1795946400123, buf);
	assert_string_equal(buf, "2026-11-29T10:00:00.123Z");
	assert_int_equal(hu_rfc3339_parse("2026-11-29T10:00:00.123Z", &ms, &err), 0);
	assert_int_equal(ms, 1795946400123);
	assert_int_equal(hu_rfc3339_parse("2026-11-29T10:00:00Z", &ms, &err), 0);
	assert_int_equal(ms, 1795946400000);
	assert_int_equal(hu_rfc3339_parse("2026-11-29T12:00:00+02:00", &ms, &err), 0);
	assert_int_equal(ms, 1795946400000);
	assert_int_equal(hu_rfc3339_parse("2026-11-29T10:00:00.5Z", &ms, &err), 0);
	assert_int_equal(ms, 1795946400500);

	const char *bad[] = {"", "2026-11-29", "2026-11-29T10:00:00", "2026-02-30T10:00:00Z", "2026-11-29T24:00:00Z",
			     "2026-11-29T10:00:00.Z", "2026-11-29T10:00:00Zjunk", "x026-11-29T10:00:00Z",
			     "2026-11-29T10:00:00+2:00"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(hu_rfc3339_parse(bad[i], &ms, &err), -1);
		assert_int_equal(err.code, EINVAL);
	}
}

static void test_list_query(void **state)
{
	struct hu_list_params p = {0};
	struct hu_list_query q;
	char token[HU_LIST_TOKEN_MAX];
	hu_err err;

	assert_int_equal(hu_api_decode_list_query(&p, &q, &err), 0);
	assert_int_equal(q.states, HU_STATE_BIT(HU_SBX_RUNNING) | HU_STATE_BIT(HU_SBX_PAUSED));
	assert_int_equal(q.limit, HU_LIST_DEFAULT_LIMIT);
	assert_int_equal(q.asc, 0);
	assert_null(q.metadata);
	assert_int_equal(q.has_cursor, 0);

	hu_list_token_encode(1700000000000, "iabc0123456789xyz012", token);
	p = (struct hu_list_params){.state = "paused", .limit = "2", .order = "asc", .next_token = token,
				    .metadata = "user=alice", .started_after = "2026-01-01T00:00:00Z",
				    .template_id = "base"};
	assert_int_equal(hu_api_decode_list_query(&p, &q, &err), 0);
	assert_int_equal(q.states, HU_STATE_BIT(HU_SBX_PAUSED));
	assert_int_equal(q.limit, 2);
	assert_int_equal(q.asc, 1);
	assert_int_equal(q.has_cursor, 1);
	assert_int_equal(q.cursor_started_ms, 1700000000000);
	assert_string_equal(q.cursor_id, "iabc0123456789xyz012");
	assert_string_equal(json_string_value(json_object_get(q.metadata, "user")), "alice");
	assert_int_equal(q.has_started_after, 1);
	assert_string_equal(q.template_id, "base");
	hu_list_query_clear(&q);

	p = (struct hu_list_params){.state = "running,paused"};
	assert_int_equal(hu_api_decode_list_query(&p, &q, &err), 0);
	assert_int_equal(q.states, HU_STATE_BIT(HU_SBX_RUNNING) | HU_STATE_BIT(HU_SBX_PAUSED));

	const struct hu_list_params bad[] = {
		{.state = "stopped"}, {.state = "running,killed"}, {.limit = "0"}, {.limit = "1001"},
		{.limit = "-1"}, {.limit = "ten"}, {.order = "up"}, {.next_token = "zz"},
		{.next_token = "616263"} /* "abc": no ':' */, {.next_token = "3a61"} /* ":a" */,
		{.next_token = "313a41"} /* "1:A" */, {.started_after = "yesterday"}, {.metadata = "a=%zz"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(hu_api_decode_list_query(&bad[i], &q, &err), -1);
		assert_int_equal(err.code, EINVAL);
		hu_list_query_clear(&q);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_sandbox_full),
		cmocka_unit_test(test_new_sandbox_defaults),
		cmocka_unit_test(test_new_sandbox_wrong_types),
		cmocka_unit_test(test_new_sandbox_timeout_range),
		cmocka_unit_test(test_new_sandbox_maps),
		cmocka_unit_test(test_new_sandbox_lifecycle_rules),
		cmocka_unit_test(test_new_sandbox_network),
		cmocka_unit_test(test_network_update),
		cmocka_unit_test(test_timeout_bodies),
		cmocka_unit_test(test_time_format_and_parse),
		cmocka_unit_test(test_list_query),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
