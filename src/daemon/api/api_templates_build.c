/*
 * POST /templates?name=NAME: build a template of the caller's team from a
 * tar archive (plain, gzip or zstd) sent as the request body (at most
 * max_body bytes, like every body). The body is saved beside the templates
 * (a dot-name, which listings skip), and the build runs in a forked child so
 * that the event loop keeps serving while a large archive is unpacked (and
 * so that it can be confined first: hu_tpl_confine_builder); the
 * answer comes when the child exits: 201 with the template, or the build's
 * error (400 for a refused archive, 409 when the name is taken).
 */
#include <fcntl.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/api/handlers.h"
#include "daemon/sandboxes/templates.h"
#include "util/cleanup.h"
#include "util/parse.h"

#define MIB (1024ULL * 1024ULL)

struct tpl_job {
	struct hu_req *r;
	struct event *ev;
	pid_t pid;
	int pipe_fd;
	char name[HU_ID_MAX];
	char upload[PATH_MAX];
};

/* The child's verdict on the pipe: the error code (0 = built) and message. */
struct verdict {
	int code;
	char msg[HU_ERR_MSG_MAX];
};

static void job_free(struct tpl_job *j)
{
	if (j->ev)
		event_free(j->ev);
	if (j->pipe_fd >= 0)
		close(j->pipe_fd);
	if (j->upload[0])
		unlink(j->upload);
	free(j);
}

static void on_built(evutil_socket_t fd, short what, void *arg)
{
	struct tpl_job *j = arg;
	struct hu_daemon *d = hu_req_daemon(j->r);
	struct verdict v = {.code = EIO};
	struct hu_tpl_meta m;
	hu_err err;

	if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		snprintf(v.msg, sizeof(v.msg), "build template %s: the builder died", j->name);
	v.msg[sizeof(v.msg) - 1] = '\0';
	waitpid(j->pid, NULL, 0);
	if (v.code) {
		hu_err_set(&err, -v.code, "%s", v.msg);
		hu_reply_err(j->r, &err);
	} else if (hu_template_refresh(d->rt, j->name, &err) < 0 ||
		   hu_template_lookup(d, NULL, j->name, &m, &err) < 0) {
		hu_reply_err(j->r, &err);
	} else {
		hu_log(HU_LOG_INFO, NULL, j->r->id, "template %s built for team %s", j->name, j->r->principal);
		hu_reply_json(j->r, 201, hu_tpl_meta_json(&m));
		hu_tpl_meta_free(&m);
	}
	job_free(j);
}

static int query_mib(struct hu_req *r, const char *key, uint64_t *out, hu_err *err)
{
	const char *v = hu_req_query(r, key);
	uint64_t n;
	if (!v)
		return 0;
	if (hu_parse_u64(v, &n, err) < 0 || n == 0 || n > (1ULL << 30))
		return hu_err_set(err, -EINVAL, "%s must be a positive number", key);
	*out = n * MIB;
	return 0;
}

/* The build's settings from the query: name, cpuCount, memoryMB,
 * diskSizeMB, cwd, user, startCmd, readyCmd, readyTimeout. */
static int decode(struct hu_req *r, struct hu_tpl_build *b, hu_err *err)
{
	const char *name = hu_req_query(r, "name"), *cwd = hu_req_query(r, "cwd"), *user = hu_req_query(r, "user");
	const char *cpu = hu_req_query(r, "cpuCount");
	uint64_t n;

	if (!name || !hu_sandbox_id_valid(name) || !strcmp(name, "base"))
		return hu_err_set(err, -EINVAL, "name: 1 to 63 of [a-z0-9-], not 'base'");
	snprintf(b->meta.id, sizeof(b->meta.id), "%s", name);
	snprintf(b->meta.team, sizeof(b->meta.team), "%s", r->principal);
	if (cpu) {
		if (hu_parse_u64(cpu, &n, err) < 0 || n == 0 || n > 1024)
			return hu_err_set(err, -EINVAL, "cpuCount must be 1 to 1024");
		b->meta.cpu_millis = (uint32_t)(n * 1000);
	}
	if (query_mib(r, "memoryMB", &b->meta.memory_bytes, err) < 0 ||
	    query_mib(r, "diskSizeMB", &b->meta.disk_bytes, err) < 0)
		return -1;
	if (cwd && (cwd[0] != '/' || strlen(cwd) >= sizeof(b->meta.cwd)))
		return hu_err_set(err, -EINVAL, "cwd must be an absolute path");
	if (user && (!*user || strlen(user) >= sizeof(b->meta.user) || strpbrk(user, ":/")))
		return hu_err_set(err, -EINVAL, "user must be a user name");
	snprintf(b->meta.cwd, sizeof(b->meta.cwd), "%s", cwd ? cwd : "");
	snprintf(b->meta.user, sizeof(b->meta.user), "%s", user ? user : "");
	const char *start = hu_req_query(r, "startCmd"), *ready = hu_req_query(r, "readyCmd");
	const char *rt = hu_req_query(r, "readyTimeout");
	if ((start && strlen(start) >= sizeof(b->meta.start_cmd)) || (ready && strlen(ready) >= sizeof(b->meta.ready_cmd)))
		return hu_err_set(err, -EINVAL, "startCmd and readyCmd: at most %d bytes", HU_TPL_CMD_MAX - 1);
	snprintf(b->meta.start_cmd, sizeof(b->meta.start_cmd), "%s", start ? start : "");
	snprintf(b->meta.ready_cmd, sizeof(b->meta.ready_cmd), "%s", ready ? ready : "");
	if (rt) {
		if (hu_parse_u64(rt, &n, err) < 0 || n == 0 || n > 3600)
			return hu_err_set(err, -EINVAL, "readyTimeout must be 1 to 3600 seconds");
		b->meta.ready_timeout_s = (uint32_t)n;
	}
	return 0;
}

/* The body into a private file: evbuffer_write drains it as it goes. */
static int save_body(struct hu_req *r, const char *path, hu_err *err)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(r->ev);
	unlink(path); /* left by a daemon killed during an earlier build */
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return hu_err_sys(err, "create %s", path);
	if (evbuffer_get_length(in) == 0)
		return hu_err_set(err, -EINVAL, "the body must be a tar archive (plain, gzip or zstd)");
	while (evbuffer_get_length(in) > 0)
		if (evbuffer_write(in, fd) < 0)
			return hu_err_sys(err, "write %s", path);
	return 0;
}

void hu_api_build_template(struct hu_req *r)
{
	struct hu_tpl_build b = {.source = HU_TPL_FROM_TAR, .init_fd = -1};
	char dir[PATH_MAX], final[PATH_MAX + HU_ID_MAX];
	struct stat st;
	hu_err err;
	int pfd[2];

	hu_tpl_meta_init(&b.meta);
	if (decode(r, &b, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	hu_templates_dir(hu_req_daemon(r), dir, sizeof(dir));
	snprintf(final, sizeof(final), "%s/%s", dir, b.meta.id);
	if (lstat(final, &st) == 0) {
		hu_reply_error(r, 409, "template '%s' exists (delete it first)", b.meta.id);
		return;
	}
	struct tpl_job *j = calloc(1, sizeof(*j));
	if (!j) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	*j = (struct tpl_job){.r = r, .pipe_fd = -1};
	snprintf(j->name, sizeof(j->name), "%s", b.meta.id);
	snprintf(j->upload, sizeof(j->upload), "%s/.upload-%llu", dir, (unsigned long long)r->id);
	if (save_body(r, j->upload, &err) < 0) {
		hu_reply_err(r, &err);
		job_free(j);
		return;
	}
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		hu_reply_error(r, 500, "pipe: %s", strerror(errno));
		job_free(j);
		return;
	}
	j->pipe_fd = pfd[0];
	j->pid = fork();
	if (j->pid == 0) {
		/* the builder: file work only, then one message and _exit */
		struct verdict v = {0};
		signal(SIGPIPE, SIG_IGN);
		close(pfd[0]);
		b.templates_dir = dir;
		b.path = j->upload;
		b.meta.envs = json_object();
		if (hu_tpl_confine_builder(dir, &err) < 0 || hu_tpl_build(&b, &err) < 0) {
			v.code = err.code ? err.code : EIO;
			snprintf(v.msg, sizeof(v.msg), "%s", err.msg);
		}
		ssize_t w = write(pfd[1], &v, sizeof(v));
		_exit(w == (ssize_t)sizeof(v) ? 0 : 1);
	}
	close(pfd[1]);
	if (j->pid < 0) {
		hu_reply_error(r, 500, "fork: %s", strerror(errno));
		job_free(j);
		return;
	}
	j->ev = event_new(hu_req_daemon(r)->base, j->pipe_fd, EV_READ, on_built, j);
	if (!j->ev || event_add(j->ev, NULL) < 0) {
		kill(j->pid, SIGKILL);
		waitpid(j->pid, NULL, 0);
		hu_reply_error(r, 500, "watch the template build");
		job_free(j);
	}
}
