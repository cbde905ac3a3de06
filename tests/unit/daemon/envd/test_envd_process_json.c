/*
 * process.Process messages: decoding requests into SPAWN/ATTACH/... inputs
 * and encoding init's events as envd's JSON events, without a daemon.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/envd/envd_process.h"

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);
	if (!v)
		fail_msg("bad test JSON %s: %s", text, jerr.text);
	return v;
}

/* Compare a produced message with the expected JSON text. */
static void assert_json(json_t *got, const char *want_text)
{
	json_t *want = parse(want_text);
	char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
	char *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
	if (!json_equal(got, want))
		fail_msg("got %s, want %s", g, w);
	free(g);
	free(w);
	json_decref(want);
	json_decref(got);
}

static bool has_env(const struct hu_envd_start *s, const char *kv)
{
	for (size_t i = 0; i < s->envc; i++)
		if (!strcmp(s->envv[i], kv))
			return true;
	return false;
}

static void test_start_full(void **state)
{
	json_t *msg = parse("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"echo hi\"],"
			    "\"envs\":{\"A\":\"req\",\"B\":\"b\"},\"cwd\":\"/tmp\"},"
			    "\"pty\":{\"size\":{\"rows\":\"30\",\"cols\":100}},\"tag\":\"t1\",\"stdin\":false,\"extra\":1}");
	json_t *defaults = parse("{\"A\":\"sandbox\",\"C\":\"c\"}");
	struct hu_envd_start s;
	struct hu_spawn_req req;
	hu_err err;

	assert_int_equal(hu_envd_decode_start(msg, defaults, &s, &err), 0);
	json_decref(msg); /* s holds its own reference */
	assert_int_equal(s.argc, 4);
	assert_string_equal(s.argv[0], "/bin/bash");
	assert_string_equal(s.argv[3], "echo hi");
	/* The request's A overrides the sandbox's; the sandbox's C stays. */
	assert_int_equal(s.envc, 3);
	assert_true(has_env(&s, "A=req"));
	assert_true(has_env(&s, "B=b"));
	assert_true(has_env(&s, "C=c"));
	assert_false(has_env(&s, "A=sandbox"));
	assert_string_equal(s.cwd, "/tmp");
	assert_string_equal(s.tag, "t1");
	assert_true(s.pty);
	assert_int_equal(s.rows, 30);
	assert_int_equal(s.cols, 100);
	assert_false(s.stdin_open);
	hu_envd_start_spawn_req(&s, "root", &req);
	assert_int_equal(req.argc, 4);
	assert_string_equal(req.user, "root");
	assert_true(req.pty);
	hu_envd_start_clear(&s);
	json_decref(defaults);
}

static void test_start_defaults(void **state)
{
	struct hu_envd_start s;
	hu_err err;
	json_t *msg = parse("{\"process\":{\"cmd\":\"ls\",\"cwd\":\"\",\"envs\":null},\"tag\":\"\"}");

	assert_int_equal(hu_envd_decode_start(msg, NULL, &s, &err), 0);
	assert_int_equal(s.argc, 1);
	assert_int_equal(s.envc, 0);
	assert_null(s.cwd);
	assert_null(s.tag);
	assert_false(s.pty);
	/* No "stdin": open, as envd keeps it. */
	assert_true(s.stdin_open);
	hu_envd_start_clear(&s);
	json_decref(msg);

	msg = parse("{\"process\":{\"cmd\":\"cat\"},\"stdin\":true}");
	assert_int_equal(hu_envd_decode_start(msg, NULL, &s, &err), 0);
	assert_true(s.stdin_open);
	hu_envd_start_clear(&s);
	json_decref(msg);
}

static void test_start_rejects(void **state)
{
	const struct {
		const char *json, *msg_part;
	} cases[] = {
		{"{}", "process is required"},
		{"{\"process\":[]}", "process must be an object"},
		{"{\"process\":{}}", "process.cmd is required"},
		{"{\"process\":{\"cmd\":\"\"}}", "process.cmd is required"},
		{"{\"process\":{\"cmd\":5}}", "process.cmd must be a string"},
		{"{\"process\":{\"cmd\":\"x\",\"args\":\"-l\"}}", "process.args must be"},
		{"{\"process\":{\"cmd\":\"x\",\"args\":[\"a\",1]}}", "process.args[1]"},
		{"{\"process\":{\"cmd\":\"x\",\"envs\":{\"A\":1}}}", "process.envs.A"},
		{"{\"process\":{\"cmd\":\"x\",\"envs\":{\"A=B\":\"1\"}}}", "invalid variable name"},
		{"{\"process\":{\"cmd\":\"x\",\"envs\":{\"\":\"1\"}}}", "invalid variable name"},
		{"{\"process\":{\"cmd\":\"x\"},\"stdin\":\"yes\"}", "stdin must be a boolean"},
		{"{\"process\":{\"cmd\":\"x\"},\"pty\":{\"size\":{\"rows\":70000,\"cols\":1}}}", "pty.size.rows"},
		{"{\"process\":{\"cmd\":\"x\"},\"pty\":{\"size\":{\"rows\":-1,\"cols\":1}}}", "pty.size.rows"},
		{"{\"process\":{\"cmd\":\"x\"},\"pty\":{\"size\":{\"rows\":\"1x\",\"cols\":1}}}", "pty.size.rows"},
		{"{\"process\":{\"cmd\":\"x\"},\"tag\":7}", "tag must be a string"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hu_envd_start s;
		hu_err err = {0};
		json_t *msg = parse(cases[i].json);
		assert_int_equal(hu_envd_decode_start(msg, NULL, &s, &err), -1);
		assert_true(err.code == EINVAL || err.code == ERANGE);
		if (!strstr(err.msg, cases[i].msg_part))
			fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].json, err.msg, cases[i].msg_part);
		assert_null(s.msg);
		json_decref(msg);
	}
}

static void test_selector(void **state)
{
	struct hu_envd_selector sel;
	hu_err err;
	const char *ok[] = {"{\"process\":{\"pid\":42}}", "{\"process\":{\"pid\":\"42\"}}",
			    "{\"process\":{\"pid\":42,\"tag\":\"x\"}}"};
	for (size_t i = 0; i < 3; i++) {
		json_t *msg = parse(ok[i]);
		assert_int_equal(hu_envd_decode_selector(msg, &sel, &err), 0);
		assert_int_equal(sel.pid, 42);
		assert_null(sel.tag);
		json_decref(msg);
	}
	json_t *msg = parse("{\"process\":{\"tag\":\"job\"}}");
	assert_int_equal(hu_envd_decode_selector(msg, &sel, &err), 0);
	assert_int_equal(sel.pid, 0);
	assert_string_equal(sel.tag, "job");
	json_decref(msg);

	const char *bad[] = {"{}", "{\"process\":{}}", "{\"process\":{\"pid\":0}}", "{\"process\":{\"pid\":-5}}",
			     "{\"process\":{\"pid\":\"abc\"}}", "{\"process\":{\"pid\":4294967296}}",
			     "{\"process\":{\"pid\":1.5}}", "{\"process\":{\"tag\":\"\"}}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg = parse(bad[i]);
		assert_int_equal(hu_envd_decode_selector(msg, &sel, &err), -1);
		json_decref(msg);
	}
}

static void test_signal_and_input(void **state)
{
	int sig;
	uint8_t *data;
	size_t len;
	hu_err err;
	json_t *msg;

	msg = parse("{\"signal\":\"SIGNAL_SIGKILL\"}");
	assert_int_equal(hu_envd_decode_signal(msg, &sig, &err), 0);
	assert_int_equal(sig, SIGKILL);
	json_decref(msg);
	msg = parse("{\"signal\":15}");
	assert_int_equal(hu_envd_decode_signal(msg, &sig, &err), 0);
	assert_int_equal(sig, SIGTERM);
	json_decref(msg);
	const char *bad_sig[] = {"{}", "{\"signal\":\"SIGNAL_UNSPECIFIED\"}", "{\"signal\":0}", "{\"signal\":999}",
				 "{\"signal\":\"KILL\"}"};
	for (size_t i = 0; i < sizeof(bad_sig) / sizeof(bad_sig[0]); i++) {
		msg = parse(bad_sig[i]);
		assert_int_equal(hu_envd_decode_signal(msg, &sig, &err), -1);
		assert_int_equal(err.code, EINVAL);
		json_decref(msg);
	}

	msg = parse("{\"input\":{\"stdin\":\"aGk=\"}}");
	assert_int_equal(hu_envd_decode_input(msg, &data, &len, &err), 0);
	assert_int_equal(len, 2);
	assert_memory_equal(data, "hi", 2);
	free(data);
	json_decref(msg);
	msg = parse("{\"input\":{\"pty\":\"\"}}");
	assert_int_equal(hu_envd_decode_input(msg, &data, &len, &err), 0);
	assert_int_equal(len, 0);
	free(data);
	json_decref(msg);
	const char *bad_in[] = {"{}", "{\"input\":{}}", "{\"input\":{\"stdin\":\"a\"}}", "{\"input\":{\"stdin\":3}}"};
	for (size_t i = 0; i < sizeof(bad_in) / sizeof(bad_in[0]); i++) {
		msg = parse(bad_in[i]);
		assert_int_equal(hu_envd_decode_input(msg, &data, &len, &err), -1);
		json_decref(msg);
	}

	int present;
	uint16_t rows, cols;
	msg = parse("{\"pty\":{\"size\":{\"rows\":40,\"cols\":120}}}");
	assert_int_equal(hu_envd_decode_pty_size(msg, &present, &rows, &cols, &err), 0);
	assert_true(present);
	assert_int_equal(rows, 40);
	assert_int_equal(cols, 120);
	json_decref(msg);
	msg = parse("{}");
	assert_int_equal(hu_envd_decode_pty_size(msg, &present, &rows, &cols, &err), 0);
	assert_false(present);
	json_decref(msg);
	msg = parse("{\"pty\":{\"size\":{\"rows\":0,\"cols\":120}}}");
	assert_int_equal(hu_envd_decode_pty_size(msg, &present, &rows, &cols, &err), -1);
	json_decref(msg);
}

static void test_events(void **state)
{
	struct hu_init_event ev = {.type = HU_MSG_EXIT, .exited = true};

	assert_json(hu_envd_event_start(77), "{\"event\":{\"start\":{\"pid\":77}}}");
	assert_json(hu_envd_event_keepalive(), "{\"event\":{\"keepalive\":{}}}");
	assert_json(hu_envd_event_data(HU_STREAM_STDOUT, (const uint8_t *)"hi\n", 3),
		    "{\"event\":{\"data\":{\"stdout\":\"aGkK\"}}}");
	assert_json(hu_envd_event_data(HU_STREAM_STDERR, (const uint8_t *)"", 0), "{\"event\":{\"data\":{\"stderr\":\"\"}}}");
	assert_json(hu_envd_event_data(HU_STREAM_PTY, (const uint8_t *)"\xff", 1), "{\"event\":{\"data\":{\"pty\":\"/w==\"}}}");

	assert_json(hu_envd_event_end(&ev),
		    "{\"event\":{\"end\":{\"exitCode\":0,\"exited\":true,\"status\":\"exit status 0\"}}}");
	ev.exit_code = 3;
	assert_json(hu_envd_event_end(&ev), "{\"event\":{\"end\":{\"exitCode\":3,\"exited\":true,"
					    "\"status\":\"exit status 3\",\"error\":\"exit status 3\"}}}");
	ev.exit_code = 0;
	ev.signum = SIGKILL;
	assert_json(hu_envd_event_end(&ev), "{\"event\":{\"end\":{\"exitCode\":-1,\"exited\":false,"
					    "\"status\":\"signal: killed\",\"error\":\"signal: killed\"}}}");

	char buf[64];
	hu_envd_exit_status(0, SIGTERM, buf, sizeof(buf));
	assert_string_equal(buf, "signal: terminated");
	hu_envd_exit_status(0, SIGSEGV, buf, sizeof(buf));
	assert_string_equal(buf, "signal: segmentation fault");
	hu_envd_exit_status(0, 40, buf, sizeof(buf));
	assert_string_equal(buf, "signal: signal 40");
	hu_envd_exit_status(255, 0, buf, sizeof(buf));
	assert_string_equal(buf, "exit status 255");
}

/* A PROCS payload as init builds it. */
static void build_procs(struct hu_buf *b)
{
	size_t f = hu_frame_begin(b, HU_MSG_PROCS, 1);
	size_t p = hu_put_nested_begin(b, HU_F_PROC);
	hu_put_u32(b, HU_F_PID, 10);
	hu_put_str(b, HU_F_ARG, "/bin/bash");
	hu_put_str(b, HU_F_ARG, "-l");
	hu_put_str(b, HU_F_ENV, "HOME=/root");
	hu_put_str(b, HU_F_ENV, "X=a=b");
	hu_put_str(b, HU_F_CWD, "/root");
	hu_put_nested_end(b, p);
	p = hu_put_nested_begin(b, HU_F_PROC);
	hu_put_u32(b, HU_F_PID, 11);
	hu_put_str(b, HU_F_TAG, "job");
	hu_put_str(b, HU_F_ARG, "sleep");
	hu_put_nested_end(b, p);
	assert_int_equal(hu_frame_end(b, f), 0);
}

static void test_procs(void **state)
{
	struct hu_buf b = {0};
	json_t *list;
	uint32_t pid;
	hu_err err;

	build_procs(&b);
	const uint8_t *payload = b.data + HU_PROTO_HEADER_SIZE;
	size_t len = b.len - HU_PROTO_HEADER_SIZE;
	assert_int_equal(hu_envd_encode_procs(payload, len, &list, &err), 0);
	assert_json(list, "{\"processes\":["
			  "{\"pid\":10,\"config\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\"],"
			  "\"envs\":{\"HOME\":\"/root\",\"X\":\"a=b\"},\"cwd\":\"/root\"}},"
			  "{\"pid\":11,\"tag\":\"job\",\"config\":{\"cmd\":\"sleep\",\"args\":[],\"envs\":{}}}]}");
	assert_int_equal(hu_envd_find_tag(payload, len, "job", &pid, &err), 0);
	assert_int_equal(pid, 11);
	assert_int_equal(hu_envd_find_tag(payload, len, "jo", &pid, &err), -1);
	assert_int_equal(err.code, ESRCH);
	/* An empty list. */
	assert_int_equal(hu_envd_encode_procs(payload, 0, &list, &err), 0);
	assert_json(list, "{\"processes\":[]}");
	/* A malformed payload is an error, not a partial answer. */
	assert_int_equal(hu_envd_encode_procs(payload, len - 1, &list, &err), -1);
	hu_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_full),     cmocka_unit_test(test_start_defaults),
		cmocka_unit_test(test_start_rejects),  cmocka_unit_test(test_selector),
		cmocka_unit_test(test_signal_and_input), cmocka_unit_test(test_events),
		cmocka_unit_test(test_procs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
