/* process.Process messages <-> plain structs and init frames (pure code). */
#include "daemon/envd/envd_process.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/parse.h"

/* ---- reading proto3 JSON ------------------------------------------------------ */

/* A member, with JSON null read as absent. */
static const json_t *member(const json_t *obj, const char *key)
{
	const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
	return json_is_null(v) ? NULL : v;
}

/* An optional object member; -1 when present but not an object. */
static int get_object(const json_t *obj, const char *key, const char *what, const json_t **out, hu_err *err)
{
	*out = member(obj, key);
	if (*out && !json_is_object(*out))
		return hu_err_set(err, EINVAL, "%s must be an object", what);
	return 0;
}

/* An optional string member ("" reads as absent when empty_is_absent). */
static int get_string(const json_t *obj, const char *key, const char *what, bool empty_is_absent, const char **out,
		      hu_err *err)
{
	const json_t *v = member(obj, key);
	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return hu_err_set(err, EINVAL, "%s must be a string", what);
	if (!(empty_is_absent && json_string_length(v) == 0))
		*out = json_string_value(v);
	return 0;
}

/* proto3 JSON integers come as numbers or as decimal strings. */
static int get_uint(const json_t *obj, const char *key, const char *what, uint64_t max, int *present, uint64_t *out,
		    hu_err *err)
{
	const json_t *v = member(obj, key);
	hu_err perr;

	*present = v != NULL;
	*out = 0;
	if (!v)
		return 0;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < 0 || (uint64_t)i > max)
			return hu_err_set(err, ERANGE, "%s %lld is out of range (0..%llu)", what, (long long)i,
					  (unsigned long long)max);
		*out = (uint64_t)i;
		return 0;
	}
	if (json_is_string(v)) {
		if (hu_parse_u64(json_string_value(v), out, &perr) < 0 || *out > max)
			return hu_err_set(err, EINVAL, "%s must be an integer in 0..%llu", what, (unsigned long long)max);
		return 0;
	}
	return hu_err_set(err, EINVAL, "%s must be an integer", what);
}

/* ---- StartRequest ---------------------------------------------------------------- */

static int valid_env_key(const char *k)
{
	return k[0] != '\0' && !strchr(k, '=');
}

static char *env_entry(const char *key, const json_t *val)
{
	char *kv;
	if (asprintf(&kv, "%s=%s", key, json_string_value(val)) < 0)
		return NULL;
	return kv;
}

/* The environment of a command: the sandbox's env vars, each overridden by
 * the request's envs of the same name, then the request's own. */
static int build_env(const json_t *defaults, const json_t *envs, struct hu_envd_start *out, hu_err *err)
{
	const char *key;
	json_t *val;

	json_object_foreach((json_t *)envs, key, val) {
		if (!json_is_string(val))
			return hu_err_set(err, EINVAL, "process.envs.%s must be a string", key);
		if (!valid_env_key(key))
			return hu_err_set(err, EINVAL, "process.envs: invalid variable name \"%s\"", key);
	}
	size_t cap = (defaults ? json_object_size(defaults) : 0) + (envs ? json_object_size(envs) : 0);
	out->envv = calloc(cap + 1, sizeof(char *));
	if (!out->envv)
		return hu_err_set(err, ENOMEM, "environment");
	json_object_foreach((json_t *)defaults, key, val) {
		/* The sandbox's own vars were checked at create; skip what is odd. */
		if (!json_is_string(val) || !valid_env_key(key) || (envs && json_object_get(envs, key)))
			continue;
		if (!(out->envv[out->envc++] = env_entry(key, val)))
			return hu_err_set(err, ENOMEM, "environment");
	}
	json_object_foreach((json_t *)envs, key, val) {
		if (!(out->envv[out->envc++] = env_entry(key, val)))
			return hu_err_set(err, ENOMEM, "environment");
	}
	return 0;
}

static int decode_argv(const json_t *process, struct hu_envd_start *out, hu_err *err)
{
	const char *cmd;
	const json_t *args = member(process, "args");

	if (get_string(process, "cmd", "process.cmd", true, &cmd, err) < 0)
		return -1;
	if (!cmd)
		return hu_err_set(err, EINVAL, "process.cmd is required");
	if (args && !json_is_array(args))
		return hu_err_set(err, EINVAL, "process.args must be an array of strings");
	size_t nargs = args ? json_array_size(args) : 0;
	out->argv = calloc(nargs + 2, sizeof(char *));
	if (!out->argv)
		return hu_err_set(err, ENOMEM, "argv");
	out->argv[out->argc++] = cmd;
	for (size_t i = 0; i < nargs; i++) {
		const json_t *a = json_array_get(args, i);
		if (!json_is_string(a))
			return hu_err_set(err, EINVAL, "process.args[%zu] must be a string", i);
		out->argv[out->argc++] = json_string_value(a);
	}
	return 0;
}

static int decode_pty(const json_t *msg, int *present, uint16_t *rows, uint16_t *cols, hu_err *err)
{
	const json_t *pty, *size = NULL;
	uint64_t r, c;
	int has_r, has_c;

	*present = 0;
	*rows = *cols = 0;
	if (get_object(msg, "pty", "pty", &pty, err) < 0)
		return -1;
	if (!pty)
		return 0;
	if (get_object(pty, "size", "pty.size", &size, err) < 0 ||
	    get_uint(size, "rows", "pty.size.rows", UINT16_MAX, &has_r, &r, err) < 0 ||
	    get_uint(size, "cols", "pty.size.cols", UINT16_MAX, &has_c, &c, err) < 0)
		return -1;
	*present = 1;
	*rows = (uint16_t)r;
	*cols = (uint16_t)c;
	return 0;
}

int hu_envd_decode_start(const json_t *msg, const json_t *defaults, struct hu_envd_start *out, hu_err *err)
{
	const json_t *process, *envs = NULL;
	int pty;

	memset(out, 0, sizeof(*out));
	if (get_object(msg, "process", "process", &process, err) < 0)
		return -1;
	if (!process)
		return hu_err_set(err, EINVAL, "process is required");
	if (get_object(process, "envs", "process.envs", &envs, err) < 0 ||
	    get_string(process, "cwd", "process.cwd", true, &out->cwd, err) < 0 ||
	    get_string(msg, "tag", "tag", true, &out->tag, err) < 0 ||
	    decode_pty(msg, &pty, &out->rows, &out->cols, err) < 0)
		return -1;
	const json_t *in = member(msg, "stdin");
	if (in && !json_is_boolean(in))
		return hu_err_set(err, EINVAL, "stdin must be a boolean");
	out->stdin_open = !in || json_is_true(in);
	out->pty = pty;
	out->msg = json_incref((json_t *)msg);
	if (decode_argv(process, out, err) < 0 || build_env(defaults, envs, out, err) < 0) {
		hu_envd_start_clear(out);
		return -1;
	}
	return 0;
}

void hu_envd_start_clear(struct hu_envd_start *s)
{
	for (size_t i = 0; i < s->envc; i++)
		free(s->envv[i]);
	free(s->envv);
	free(s->argv);
	json_decref(s->msg);
	memset(s, 0, sizeof(*s));
}

void hu_envd_start_spawn_req(const struct hu_envd_start *s, const char *user, struct hu_spawn_req *req)
{
	*req = (struct hu_spawn_req){
		.argv = s->argv,
		.argc = s->argc,
		.envv = (const char *const *)s->envv,
		.envc = s->envc,
		.cwd = s->cwd,
		.user = user,
		.tag = s->tag,
		.pty = s->pty,
		.pty_rows = s->rows,
		.pty_cols = s->cols,
		.stdin_open = s->stdin_open,
	};
}

/* ---- the other requests ---------------------------------------------------------- */

int hu_envd_decode_selector(const json_t *msg, struct hu_envd_selector *sel, hu_err *err)
{
	const json_t *process;
	uint64_t pid;
	int has_pid;

	memset(sel, 0, sizeof(*sel));
	if (get_object(msg, "process", "process", &process, err) < 0)
		return -1;
	if (!process)
		return hu_err_set(err, EINVAL, "process (a pid or a tag) is required");
	if (get_uint(process, "pid", "process.pid", UINT32_MAX, &has_pid, &pid, err) < 0 ||
	    get_string(process, "tag", "process.tag", true, &sel->tag, err) < 0)
		return -1;
	if (has_pid) {
		if (pid == 0)
			return hu_err_set(err, EINVAL, "process.pid must not be 0");
		sel->pid = (uint32_t)pid;
		sel->tag = NULL; /* a oneof: the pid wins */
		return 0;
	}
	if (!sel->tag)
		return hu_err_set(err, EINVAL, "process needs a pid or a tag");
	return 0;
}

static const struct {
	const char *name;
	int signum;
} signal_names[] = {
	{"SIGNAL_SIGHUP", SIGHUP},   {"SIGNAL_SIGINT", SIGINT},   {"SIGNAL_SIGQUIT", SIGQUIT},
	{"SIGNAL_SIGKILL", SIGKILL}, {"SIGNAL_SIGUSR1", SIGUSR1}, {"SIGNAL_SIGUSR2", SIGUSR2},
	{"SIGNAL_SIGTERM", SIGTERM}, {"SIGNAL_SIGCONT", SIGCONT}, {"SIGNAL_SIGSTOP", SIGSTOP},
};

int hu_envd_decode_signal(const json_t *msg, int *signum, hu_err *err)
{
	const json_t *v = member(msg, "signal");

	if (json_is_string(v)) {
		for (size_t i = 0; i < sizeof(signal_names) / sizeof(signal_names[0]); i++) {
			if (!strcmp(json_string_value(v), signal_names[i].name)) {
				*signum = signal_names[i].signum;
				return 0;
			}
		}
		return hu_err_set(err, EINVAL, "unsupported signal \"%s\"", json_string_value(v));
	}
	/* The enum's numbers are the signal numbers (SIGNAL_SIGKILL = 9). */
	if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= SIGRTMAX) {
		*signum = (int)json_integer_value(v);
		return 0;
	}
	return hu_err_set(err, EINVAL, "signal is required (SIGNAL_SIGTERM, SIGNAL_SIGKILL, ...)");
}

int hu_envd_decode_input(const json_t *msg, uint8_t **data, size_t *len, hu_err *err)
{
	const json_t *input;
	const char *b64;

	if (get_object(msg, "input", "input", &input, err) < 0)
		return -1;
	if (get_string(input, "stdin", "input.stdin", false, &b64, err) < 0)
		return -1;
	if (!b64 && get_string(input, "pty", "input.pty", false, &b64, err) < 0)
		return -1;
	if (!b64)
		return hu_err_set(err, EINVAL, "input needs stdin or pty data");
	if (hu_base64_decode_alloc(b64, strlen(b64), data, len, err) < 0) {
		hu_err_prefix(err, "input");
		return -1;
	}
	return 0;
}

int hu_envd_decode_pty_size(const json_t *msg, int *present, uint16_t *rows, uint16_t *cols, hu_err *err)
{
	if (decode_pty(msg, present, rows, cols, err) < 0)
		return -1;
	if (*present && (*rows == 0 || *cols == 0))
		return hu_err_set(err, EINVAL, "pty.size needs rows and cols above 0");
	return 0;
}

/* ---- events ------------------------------------------------------------------------ */

static json_t *event(const char *kind, json_t *body)
{
	return json_pack("{s:{s:o}}", "event", kind, body);
}

json_t *hu_envd_event_start(uint32_t pid)
{
	return event("start", json_pack("{s:I}", "pid", (json_int_t)pid));
}

json_t *hu_envd_event_keepalive(void)
{
	return event("keepalive", json_object());
}

json_t *hu_envd_event_data(uint8_t stream, const uint8_t *data, size_t len)
{
	const char *name = stream == HU_STREAM_STDERR ? "stderr" : stream == HU_STREAM_PTY ? "pty" : "stdout";
	size_t n = hu_base64_encoded_len(len);
	char *b64 = malloc(n + 1);
	if (!b64)
		return NULL;
	hu_base64_encode(data, len, b64);
	/* Base64 is ASCII: skip jansson's UTF-8 check of a large string. */
	json_t *s = json_stringn_nocheck(b64, n);
	free(b64);
	return s ? event("data", json_pack("{s:o}", name, s)) : NULL;
}

/* Go's names of signals (syscall.Signal.String() on linux). */
static const char *go_signal_name(uint32_t signum)
{
	static const char *const names[] = {
		[SIGHUP] = "hangup",
		[SIGINT] = "interrupt",
		[SIGQUIT] = "quit",
		[SIGILL] = "illegal instruction",
		[SIGTRAP] = "trace/breakpoint trap",
		[SIGABRT] = "aborted",
		[SIGBUS] = "bus error",
		[SIGFPE] = "floating point exception",
		[SIGKILL] = "killed",
		[SIGUSR1] = "user defined signal 1",
		[SIGSEGV] = "segmentation fault",
		[SIGUSR2] = "user defined signal 2",
		[SIGPIPE] = "broken pipe",
		[SIGALRM] = "alarm clock",
		[SIGTERM] = "terminated",
		[SIGSTKFLT] = "stack fault",
		[SIGCHLD] = "child exited",
		[SIGCONT] = "continued",
		[SIGSTOP] = "stopped (signal)",
		[SIGTSTP] = "stopped",
		[SIGTTIN] = "stopped (tty input)",
		[SIGTTOU] = "stopped (tty output)",
		[SIGURG] = "urgent I/O condition",
		[SIGXCPU] = "CPU time limit exceeded",
		[SIGXFSZ] = "file size limit exceeded",
		[SIGVTALRM] = "virtual timer expired",
		[SIGPROF] = "profiling timer expired",
		[SIGWINCH] = "window changed",
		[SIGIO] = "I/O possible",
		[SIGPWR] = "power failure",
		[SIGSYS] = "bad system call",
	};
	return signum < sizeof(names) / sizeof(names[0]) ? names[signum] : NULL;
}

void hu_envd_exit_status(int32_t code, uint32_t signum, char *buf, size_t n)
{
	if (!signum) {
		snprintf(buf, n, "exit status %d", (int)code);
		return;
	}
	const char *name = go_signal_name(signum);
	if (name)
		snprintf(buf, n, "signal: %s", name);
	else
		snprintf(buf, n, "signal: signal %u", signum);
}

json_t *hu_envd_event_end(const struct hu_init_event *exit)
{
	char status[64];
	bool signaled = exit->signum != 0;
	int32_t code = signaled ? -1 : exit->exit_code;

	hu_envd_exit_status(exit->exit_code, exit->signum, status, sizeof(status));
	json_t *end = json_pack("{s:i,s:b,s:s}", "exitCode", (int)code, "exited", !signaled, "status", status);
	/* envd reports cmd.Wait()'s error, which is the same text. */
	if (end && (signaled || code != 0))
		json_object_set_new(end, "error", json_string(status));
	return end ? event("end", end) : NULL;
}

/* ---- PROCS -------------------------------------------------------------------------- */

/* One PROC as ProcessInfo; *pid and *tag (pointing into the payload) too. */
static int proc_info(const struct hu_field *proc, json_t *info, uint32_t *pid, struct hu_field *tag, hu_err *err)
{
	struct hu_field_iter it;
	struct hu_field f;
	json_t *args = json_array(), *envs = json_object();
	json_t *config = json_pack("{s:o,s:o}", "args", args, "envs", envs);
	bool have_cmd = false;
	int r;

	if (!config)
		return hu_err_set(err, ENOMEM, "process list");
	json_object_set_new(info, "config", config);
	memset(tag, 0, sizeof(*tag));
	*pid = 0;
	hu_fields_init(&it, proc->val, proc->len);
	while ((r = hu_fields_next(&it, &f, err)) > 0) {
		json_t *s = NULL;
		if (f.tag == HU_F_PID) {
			if (hu_field_u32(&f, pid, err) < 0)
				return -1;
			continue;
		}
		if (f.tag != HU_F_ARG && f.tag != HU_F_ENV && f.tag != HU_F_CWD && f.tag != HU_F_TAG)
			continue;
		s = json_stringn(f.val ? (const char *)f.val : "", f.len);
		if (!s)
			continue; /* not UTF-8: JSON cannot carry it, leave it out */
		if (f.tag == HU_F_ARG && !have_cmd) {
			json_object_set_new(config, "cmd", s);
			have_cmd = true;
		} else if (f.tag == HU_F_ARG) {
			json_array_append_new(args, s);
		} else if (f.tag == HU_F_CWD) {
			json_object_set_new(config, "cwd", s);
		} else if (f.tag == HU_F_TAG) {
			json_object_set_new(info, "tag", s);
			*tag = f;
		} else {
			const char *kv = json_string_value(s);
			const char *eq = strchr(kv, '=');
			if (eq) {
				char *key = strndup(kv, (size_t)(eq - kv));
				if (key)
					json_object_set_new(envs, key, json_string(eq + 1));
				free(key);
			}
			json_decref(s);
		}
	}
	if (r < 0)
		return -1;
	json_object_set_new(info, "pid", json_integer(*pid));
	return 0;
}

/* Walk the PROCs of a PROCS payload; fn returns 1 to stop. */
static int each_proc(const uint8_t *payload, size_t len,
		     int (*fn)(json_t *info, uint32_t pid, const struct hu_field *tag, void *arg), void *arg,
		     hu_err *err)
{
	struct hu_field_iter it;
	struct hu_field f, tag;
	uint32_t pid;
	int r;

	hu_fields_init(&it, payload, len);
	while ((r = hu_fields_next(&it, &f, err)) > 0) {
		if (f.tag != HU_F_PROC)
			continue;
		json_t *info = json_object();
		if (!info)
			return hu_err_set(err, ENOMEM, "process list");
		if (proc_info(&f, info, &pid, &tag, err) < 0) {
			json_decref(info);
			return -1;
		}
		int stop = fn(info, pid, &tag, arg);
		if (stop)
			return stop < 0 ? hu_err_set(err, ENOMEM, "process list") : 0;
	}
	return r;
}

static int append_info(json_t *info, uint32_t pid, const struct hu_field *tag, void *arg)
{
	return json_array_append_new(arg, info) < 0 ? -1 : 0;
}

int hu_envd_encode_procs(const uint8_t *payload, size_t len, json_t **out, hu_err *err)
{
	json_t *list = json_array();
	if (!list)
		return hu_err_set(err, ENOMEM, "process list");
	if (each_proc(payload, len, append_info, list, err) < 0) {
		json_decref(list);
		return -1;
	}
	*out = json_pack("{s:o}", "processes", list);
	return *out ? 0 : hu_err_set(err, ENOMEM, "process list");
}

struct tag_lookup {
	const char *tag;
	uint32_t pid;
};

static int match_tag(json_t *info, uint32_t pid, const struct hu_field *tag, void *arg)
{
	struct tag_lookup *l = arg;
	json_decref(info);
	if (tag->val && tag->len == strlen(l->tag) && !memcmp(tag->val, l->tag, tag->len)) {
		l->pid = pid;
		return 1;
	}
	return 0;
}

int hu_envd_find_tag(const uint8_t *payload, size_t len, const char *tag, uint32_t *pid, hu_err *err)
{
	struct tag_lookup l = {.tag = tag};
	if (each_proc(payload, len, match_tag, &l, err) < 0)
		return -1;
	if (!l.pid)
		return hu_err_set(err, ESRCH, "no running process tagged %s", tag);
	*pid = l.pid;
	return 0;
}
