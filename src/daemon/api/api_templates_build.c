/*
 * POST /templates?name=NAME: build a template of the caller's team from a
 * tar archive (plain, gzip or zstd) sent as the request body (at most
 * max_body bytes, like every body). The body is saved beside the templates
 * (a dot-name, which listings skip), and hutch-build (template/builder.h)
 * unpacks it: a sealed copy of that binary started like hutch-init
 * (runtime/helper.h), in a cgroup of its own, given only the archive, the
 * empty rootfs of the build and a pipe for its verdict, confined before it
 * reads a byte. It never holds the daemon's memory, descriptors or tokens.
 * The event loop keeps serving meanwhile; once the builder has exited the
 * daemon writes the description and renames the build into place: 201 with
 * the template, or the build's error (400 for a refused archive, 409 when
 * the name is taken).
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
#include "daemon/sandboxes/quota.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/sandboxes/templates.h"
#include "runtime/helper.h"
#include "template/builder.h"
#include "util/cleanup.h"
#include "util/fileutil.h"
#include "util/parse.h"

#define MIB (1024ULL * 1024ULL)
#define BUILD_TIMEOUT_S 900 /* then the builder is killed */

struct tpl_job {
	struct tpl_job *next; /* builds in progress (quota.builds counts them per team) */
	struct hu_req *r;
	struct event *ev;
	struct hu_helper builder;
	int pipe_fd;
	struct hu_tpl_build b;
	char dir[PATH_MAX];
	char tmp[PATH_MAX];    /* the build directory, "" once renamed or never made */
	char upload[PATH_MAX];
};

/* one event loop per daemon: the list needs no lock */
static struct tpl_job *jobs;

static unsigned team_builds(const char *team)
{
	unsigned n = 0;
	for (const struct tpl_job *j = jobs; j; j = j->next)
		n += !strcmp(j->b.meta.team, team);
	return n;
}

static void job_free(struct tpl_job *j)
{
	hu_err ignore;

	for (struct tpl_job **p = &jobs; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			break;
		}

	if (j->ev)
		event_free(j->ev);
	if (j->pipe_fd >= 0)
		close(j->pipe_fd);
	hu_helper_reap(&j->builder, NULL);
	if (j->upload[0])
		unlink(j->upload);
	if (j->tmp[0])
		hu_rm_rf(j->tmp, &ignore);
	hu_tpl_meta_free(&j->b.meta);
	free(j);
}

static void on_built(evutil_socket_t fd, short what, void *arg)
{
	struct tpl_job *j = arg;
	struct hu_daemon *d = hu_req_daemon(j->r);
	struct hu_tpl_verdict v = {.code = EIO};
	struct hu_tpl_meta m;
	hu_err err;
	int status;

	(void)fd;
	if (what & EV_TIMEOUT)
		snprintf(v.msg, sizeof(v.msg), "build template %s: the builder took longer than %d s", j->b.meta.id,
			 BUILD_TIMEOUT_S);
	else if (read(j->pipe_fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		snprintf(v.msg, sizeof(v.msg), "build template %s: the builder died", j->b.meta.id);
	v.msg[sizeof(v.msg) - 1] = '\0';
	hu_helper_reap(&j->builder, &status);
	if (v.code == 0 && !(what & EV_TIMEOUT) && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
	{
		v.code = EIO;
		snprintf(v.msg, sizeof(v.msg), "the builder %s %d after reporting success",
			 WIFSIGNALED(status) ? "was killed by signal" : "exited with", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
	if (v.code) {
		hu_err_set(&err, v.code > 0 ? -v.code : -EIO, "%s", v.msg);
		hu_reply_err(j->r, &err);
		job_free(j);
		return;
	}
	j->b.meta.size_bytes = v.bytes;
	j->b.meta.files = v.files;
	if (hu_tpl_commit(&j->b, j->tmp, &err) < 0) {
		hu_err_prefix(&err, "build template %s", j->b.meta.id);
		hu_reply_err(j->r, &err);
		job_free(j);
		return;
	}
	j->tmp[0] = '\0'; /* renamed into place */
	if (hu_template_refresh(d->rt, j->b.meta.id, &err) < 0 || hu_template_lookup(d, NULL, j->b.meta.id, &m, &err) < 0) {
		hu_reply_err(j->r, &err);
	} else {
		hu_log(HU_LOG_INFO, NULL, j->r->id, "template %s built for team %s (%llu files, %llu bytes)", j->b.meta.id,
		       j->r->principal, (unsigned long long)v.files, (unsigned long long)v.bytes);
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

#ifdef HU_TEST_HOOKS
static int first_socket(struct hu_sbx *s, void *arg)
{
	if (s->rt && s->state == HU_SBX_RUNNING) {
		snprintf(arg, PATH_MAX, "%s", hu_sandbox_socket(s->rt));
		return 1;
	}
	return 0;
}

/* Test builds with HUTCH_TEST_BUILD_PROBE=1: the builder tries the daemon's
 * port, its database, a sandbox's init socket and a file outside its root
 * instead of building (template/builder.h). */
static int probe_argv(struct tpl_job *j, char **argv)
{
	struct hu_daemon *d = hu_req_daemon(j->r);
	static char port[16], db[PATH_MAX], sock[PATH_MAX], outside[PATH_MAX + 32], pid[16];
	const char *v = getenv("HUTCH_TEST_BUILD_PROBE");

	if (!v || strcmp(v, "1"))
		return 0;
	snprintf(port, sizeof(port), "%u", d->cfg.port);
	snprintf(db, sizeof(db), "%s/hutch.db", d->cfg.data_dir);
	snprintf(sock, sizeof(sock), "/nonexistent");
	if (d->reg)
		hu_registry_each(d->reg, first_socket, sock);
	snprintf(outside, sizeof(outside), "%s/.probe-outside", j->dir);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	argv[1] = "probe", argv[2] = port, argv[3] = db, argv[4] = sock, argv[5] = outside, argv[6] = pid;
	argv[7] = NULL;
	hu_log(HU_LOG_WARN, NULL, j->r->id, "template build probe (HUTCH_TEST_BUILD_PROBE; tests only): %s %s %s",
	       db, sock, outside);
	return 1;
}
#endif

/* Start hutch-build on the saved upload, into the staged rootfs. */
static int start_builder(struct tpl_job *j, hu_err *err)
{
	char bin[PATH_MAX], root[PATH_MAX + 8], cgroup[32];
	char *argv[8] = {"hutch-build", "tar", NULL};
	int pfd[2];

	if (hu_helper_find("hutch-build", "HUTCH_BUILDER", bin, sizeof(bin), err) < 0)
		return -1;
#ifdef HU_TEST_HOOKS
	probe_argv(j, argv);
#endif
	snprintf(root, sizeof(root), "%s/rootfs", j->tmp);
	_cleanup_close_ int archive = open(j->upload, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (archive < 0 || rootfd < 0)
		return hu_err_sys(err, "open %s", archive < 0 ? j->upload : root);
	/* read once the builder has exited (its pidfd): never blocks */
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
		return hu_err_sys(err, "pipe");
	j->pipe_fd = pfd[0];
	const int fds[] = {pfd[1], archive, rootfd}; /* 3, 4, 5: template/builder.h */
	snprintf(cgroup, sizeof(cgroup), "build-%llu", (unsigned long long)j->r->id);
	struct hu_helper_spec spec = {
		.binary = bin, .argv = argv, .fds = fds, .n_fds = 3, .cgroup = cgroup,
		.limits = {.memory_bytes = HU_BUILDER_MEMORY_BYTES, .pids = HU_BUILDER_PIDS,
			   .cpu_millis = HU_BUILDER_CPU_MILLIS},
	};
	int rc = hu_helper_start(hu_req_daemon(j->r)->rt, &spec, &j->builder, err);
	close(pfd[1]);
	return rc;
}

void hu_api_build_template(struct hu_req *r)
{
	char final[PATH_MAX + HU_ID_MAX], tag[24];
	struct stat st;
	hu_err err;

	struct tpl_job *j = calloc(1, sizeof(*j));
	if (!j) {
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	*j = (struct tpl_job){.r = r, .pipe_fd = -1, .builder = {.pid = -1, .pidfd = -1},
			      .b = {.source = HU_TPL_FROM_TAR, .init_fd = -1}};
	hu_tpl_meta_init(&j->b.meta);
	if (decode(r, &j->b, &err) < 0) {
		hu_reply_err(r, &err);
		job_free(j);
		return;
	}
	if (hu_quota_check_build(hu_req_daemon(r), j->b.meta.team, team_builds(j->b.meta.team), &err) < 0) {
		hu_reply_err(r, &err);
		job_free(j);
		return;
	}
	j->next = jobs;
	jobs = j;
	hu_templates_dir(hu_req_daemon(r), j->dir, sizeof(j->dir));
	j->b.templates_dir = j->dir;
	if (!(j->b.meta.envs = json_object())) {
		hu_reply_error(r, 500, "out of memory");
		job_free(j);
		return;
	}
	snprintf(final, sizeof(final), "%s/%s", j->dir, j->b.meta.id);
	if (lstat(final, &st) == 0) {
		hu_reply_error(r, 409, "template '%s' exists (delete it first)", j->b.meta.id);
		job_free(j);
		return;
	}
	snprintf(j->upload, sizeof(j->upload), "%s/.upload-%llu", j->dir, (unsigned long long)r->id);
	snprintf(tag, sizeof(tag), "%llu", (unsigned long long)r->id);
	if (save_body(r, j->upload, &err) < 0 ||
	    hu_tpl_stage(j->dir, j->b.meta.id, tag, j->tmp, sizeof(j->tmp), &err) < 0 || start_builder(j, &err) < 0) {
		if (err.code != EEXIST && err.code != EINVAL)
			hu_err_prefix(&err, "build template %s", j->b.meta.id);
		hu_reply_err(r, &err);
		job_free(j);
		return;
	}
	hu_log(HU_LOG_INFO, NULL, r->id, "template %s: building for team %s (hutch-build pid %d)", j->b.meta.id,
	       j->b.meta.team, (int)j->builder.pid);
	/* the answer comes when the builder has exited, not when it has written:
	 * reaping it then never kills one that is still on its way out */
	struct timeval limit = {.tv_sec = BUILD_TIMEOUT_S};
	j->ev = event_new(hu_req_daemon(r)->base, j->builder.pidfd, EV_READ, on_built, j);
	if (!j->ev || event_add(j->ev, &limit) < 0) {
		hu_reply_error(r, 500, "watch the template build");
		job_free(j);
	}
}

void hu_api_abort_builds(struct hu_daemon *d)
{
	(void)d;
	while (jobs) {
		struct tpl_job *j = jobs;
		hu_reply_error(j->r, 503, "the server is shutting down; build template %s again", j->b.meta.id);
		job_free(j); /* kills the builder, removes its cgroup, build directory and upload */
	}
}
