#include "init/proc.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "init/pty.h"
#include "init/spawn.h"
#include "init/sudo.h"
#include "util/clock.h"
#include "util/cleanup.h"

#define EXIT_RECORDS 256
/* Bytes of stdin buffered for one process before the sending connection is
 * paused (a process that does not read its stdin must not grow init). */
#define STDIN_BOUND (256u * 1024)
/* After a process is reaped, how long to wait for EOF on its output. A
 * descendant that inherited the pipes (`cmd &`) can keep them open forever;
 * everything the process itself wrote is in the pipe already, so it is read
 * out and EXIT is sent. */
#define DRAIN_GRACE_MS 1000
/* At the end of the grace, read at most this much more per descriptor. */
#define DRAIN_FINAL_MAX (1u << 20)

struct hu_sub {
	struct hu_conn *conn;
	uint32_t id; /* request id of the SPAWN/ATTACH: OUTPUT and EXIT carry it */
};

struct outfd {
	struct hu_watch watch;
	struct hu_proc *proc;
	uint8_t stream;
	bool open;
};

struct hu_proc {
	struct hu_proc *prev, *next;
	pid_t pid;
	char *tag;
	char **argv;
	char **envv;
	char *cwd;
	bool pty;

	struct hu_sub *subs;
	size_t nsubs, subs_cap;

	struct outfd out[2];
	bool paused; /* output not polled: a subscriber's queue is over its bound */

	struct hu_watch stdin_watch; /* fd -1 once closed */
	uint8_t *stdin_buf;
	size_t stdin_len;
	bool stdin_close_pending;

	bool exited;
	int status;
	int64_t drain_deadline_ms;
};

struct exit_record {
	pid_t pid;
	char *tag;
	int status;
};

static struct hu_proc *procs;
static struct exit_record exits[EXIT_RECORDS];
static size_t exits_next;
static struct hu_watch sigchld_watch;
static uint8_t chunk[HU_PROTO_CHUNK];

static struct hu_proc *proc_of_watch(struct hu_watch *w)
{
	return ((struct outfd *)w)->proc;
}

/* ---- lookup --------------------------------------------------------------- */

static struct hu_proc *find_running(const struct hu_request *req)
{
	for (struct hu_proc *p = procs; p; p = p->next) {
		if (req->has_pid && p->pid == (pid_t)req->pid)
			return p;
		if (!req->has_pid && req->tag && p->tag && !strcmp(p->tag, req->tag))
			return p;
	}
	return NULL;
}

/* The newest exit record matching req. */
static const struct exit_record *find_exited(const struct hu_request *req)
{
	for (size_t i = 1; i <= EXIT_RECORDS; i++) {
		const struct exit_record *r = &exits[(exits_next + EXIT_RECORDS - i) % EXIT_RECORDS];
		if (!r->pid)
			break;
		if (req->has_pid ? r->pid == (pid_t)req->pid : (r->tag && !strcmp(r->tag, req->tag)))
			return r;
	}
	return NULL;
}

static void add_exit_record(struct hu_proc *p)
{
	struct exit_record *r = &exits[exits_next];
	free(r->tag);
	r->pid = p->pid;
	r->tag = p->tag;
	r->status = p->status;
	p->tag = NULL; /* moved */
	exits_next = (exits_next + 1) % EXIT_RECORDS;
}

/* ---- events to subscribers ---------------------------------------------- */

static void send_exit(struct hu_conn *c, uint32_t id, pid_t pid, int status)
{
	struct hu_buf b = {0};
	size_t f = hu_frame_begin(&b, HU_MSG_EXIT, id);
	hu_put_u32(&b, HU_F_PID, (uint32_t)pid);
	if (WIFSIGNALED(status))
		hu_put_u32(&b, HU_F_SIGNUM, (uint32_t)WTERMSIG(status));
	else
		hu_put_i32(&b, HU_F_EXIT_CODE, WEXITSTATUS(status));
	hu_frame_end(&b, f);
	hu_conn_send(c, &b);
	hu_buf_free(&b);
}

static void send_output(struct hu_proc *p, uint8_t stream, const uint8_t *data, size_t len)
{
	struct hu_buf b = {0};
	/* Iterating by index: hu_conn_send may close a connection on OOM, which
	 * removes it from p->subs through hu_proc_forget_conn. */
	for (size_t i = 0; i < p->nsubs; i++) {
		struct hu_sub s = p->subs[i];
		hu_buf_reset(&b);
		size_t f = hu_frame_begin(&b, HU_MSG_OUTPUT, s.id);
		hu_put_u32(&b, HU_F_PID, (uint32_t)p->pid);
		hu_put_u8(&b, HU_F_STREAM, stream);
		hu_put_bytes(&b, HU_F_DATA, data, len);
		hu_frame_end(&b, f);
		hu_conn_send(s.conn, &b);
	}
	hu_buf_free(&b);
}

/* ---- output polling and backpressure ------------------------------------ */

static bool any_sub_over_bound(const struct hu_proc *p)
{
	for (size_t i = 0; i < p->nsubs; i++)
		if (hu_conn_over_bound(p->subs[i].conn))
			return true;
	return false;
}

/* Poll the output only while every subscriber has room; the child blocks on
 * its full pipe meanwhile, which is the backpressure we want. */
static void update_polling(struct hu_proc *p)
{
	p->paused = any_sub_over_bound(p);
	for (int i = 0; i < 2; i++)
		if (p->out[i].open)
			hu_loop_mod(&p->out[i].watch, p->paused ? 0 : EPOLLIN);
}

/* ---- stdin ---------------------------------------------------------------- */

static void release_stdin_waiters(struct hu_proc *p)
{
	for (struct hu_conn *c = hu_conn_first(); c; c = c->next) {
		if (c->stdin_wait == p) {
			c->stdin_wait = NULL;
			hu_conn_update_interest(c);
		}
	}
}

static void close_stdin_now(struct hu_proc *p)
{
	if (p->stdin_watch.fd < 0)
		return;
	hu_loop_del(&p->stdin_watch);
	close(p->stdin_watch.fd);
	p->stdin_watch.fd = -1;
	free(p->stdin_buf);
	p->stdin_buf = NULL;
	p->stdin_len = 0;
	release_stdin_waiters(p);
}

/* Write buffered stdin as far as the pipe takes it. */
static void flush_stdin(struct hu_proc *p)
{
	size_t done = 0;
	while (done < p->stdin_len) {
		ssize_t n = write(p->stdin_watch.fd, p->stdin_buf + done, p->stdin_len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			/* EPIPE/EIO: nobody reads any more; drop what is left. */
			close_stdin_now(p);
			return;
		}
		done += (size_t)n;
	}
	memmove(p->stdin_buf, p->stdin_buf + done, p->stdin_len - done);
	p->stdin_len -= done;
	if (p->stdin_len == 0 && p->stdin_close_pending) {
		close_stdin_now(p);
		return;
	}
	if (p->stdin_len <= STDIN_BOUND)
		release_stdin_waiters(p);
	hu_loop_mod(&p->stdin_watch, p->stdin_len ? EPOLLOUT : 0);
}

static void stdin_event(struct hu_watch *w, uint32_t events)
{
	struct hu_proc *p = HU_CONTAINER_OF(w, struct hu_proc, stdin_watch);
	flush_stdin(p);
}

static int queue_stdin(struct hu_proc *p, const uint8_t *data, size_t len, hu_err *err)
{
	uint8_t *nb = realloc(p->stdin_buf, p->stdin_len + len);
	if (!nb)
		return hu_err_set(err, ENOMEM, "stdin buffer");
	memcpy(nb + p->stdin_len, data, len);
	p->stdin_buf = nb;
	p->stdin_len += len;
	flush_stdin(p);
	return 0;
}

/* ---- life cycle -------------------------------------------------------------- */

static void proc_free(void *ptr)
{
	struct hu_proc *p = ptr;
	free(p->tag);
	hu_strv_free(p->argv);
	hu_strv_free(p->envv);
	free(p->cwd);
	free(p->subs);
	free(p->stdin_buf);
	free(p);
}

static void close_out(struct outfd *o)
{
	if (!o->open)
		return;
	hu_loop_del(&o->watch);
	close(o->watch.fd);
	o->open = false;
}

/* The process is reaped and its output read to the end: tell subscribers,
 * keep a record for late ATTACHes, and forget it. */
static void maybe_finish(struct hu_proc *p)
{
	if (!p->exited || p->out[0].open || p->out[1].open)
		return;
	close_stdin_now(p);
	for (size_t i = 0; i < p->nsubs; i++)
		send_exit(p->subs[i].conn, p->subs[i].id, p->pid, p->status);
	add_exit_record(p);
	if (p->prev)
		p->prev->next = p->next;
	else
		procs = p->next;
	if (p->next)
		p->next->prev = p->prev;
	hu_loop_defer_free(p, proc_free);
}

/* Read one chunk: 1 = data, 0 = nothing now, -1 = end of this stream. */
static int read_chunk(struct outfd *o)
{
	ssize_t n = read(o->watch.fd, chunk, sizeof(chunk));
	if (n > 0) {
		send_output(o->proc, o->stream, chunk, (size_t)n);
		return 1;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* 0 is EOF of a pipe; a pty master reads EIO once no slave is open. */
	return -1;
}

static void out_event(struct hu_watch *w, uint32_t events)
{
	struct outfd *o = (struct outfd *)w;
	struct hu_proc *p = proc_of_watch(w);

	if (read_chunk(o) < 0) {
		close_out(o);
		maybe_finish(p);
		return;
	}
	update_polling(p);
}

static void reap_children(void)
{
	int status;
	pid_t pid;

	/* Every child, ours or an orphan re-parented to us: no zombies stay. */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (hu_sudo_reaped(pid, status))
			continue;
		for (struct hu_proc *p = procs; p; p = p->next) {
			if (p->pid == pid && !p->exited) {
				p->exited = true;
				p->status = status;
				p->drain_deadline_ms = hu_mono_ms() + DRAIN_GRACE_MS;
				maybe_finish(p);
				break;
			}
		}
	}
}

static void sigchld_event(struct hu_watch *w, uint32_t events)
{
	struct signalfd_siginfo si[16];
	/* The content does not matter: signals coalesce, waitpid finds them all. */
	while (read(w->fd, si, sizeof(si)) > 0)
		;
	reap_children();
}

static int proc_next_timeout(void)
{
	int64_t next = -1, now = hu_mono_ms();
	for (struct hu_proc *p = procs; p; p = p->next) {
		if (!p->exited || p->paused)
			continue;
		int64_t left = p->drain_deadline_ms - now;
		if (left < 0)
			left = 0;
		if (next < 0 || left < next)
			next = left;
	}
	return (int)next;
}

/* Grace over: read what the process left in its pipes, then finish it. A
 * paused process is skipped: its subscribers are slow, not its pipes. */
static void proc_run_timers(void)
{
	int64_t now = hu_mono_ms();
	struct hu_proc *p = procs;
	while (p) {
		struct hu_proc *next = p->next;
		if (p->exited && !p->paused && now >= p->drain_deadline_ms) {
			for (int i = 0; i < 2; i++) {
				for (size_t got = 0; p->out[i].open && got < DRAIN_FINAL_MAX; got += sizeof(chunk))
					if (read_chunk(&p->out[i]) <= 0)
						break;
				close_out(&p->out[i]);
			}
			maybe_finish(p);
		}
		p = next;
	}
}

int hu_proc_init(hu_err *err)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return hu_err_sys(err, "block SIGCHLD");
	int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return hu_err_sys(err, "signalfd");
	if (hu_loop_add(&sigchld_watch, fd, EPOLLIN, sigchld_event, err) < 0) {
		close(fd);
		return -1;
	}
	hu_loop_set_timer_hook(proc_next_timeout, proc_run_timers);
	/* A child that ended before the signalfd existed would go unnoticed. */
	reap_children();
	return 0;
}

void hu_proc_fini(void)
{
	while (procs) {
		struct hu_proc *p = procs;
		procs = p->next;
		close_out(&p->out[0]);
		close_out(&p->out[1]);
		close_stdin_now(p);
		proc_free(p);
	}
	for (size_t i = 0; i < EXIT_RECORDS; i++) {
		free(exits[i].tag);
		exits[i].tag = NULL;
	}
	if (sigchld_watch.registered) {
		hu_loop_del(&sigchld_watch);
		close(sigchld_watch.fd);
	}
}

/* ---- subscriptions --------------------------------------------------------------- */

static int subscribe(struct hu_proc *p, struct hu_conn *c, uint32_t id, hu_err *err)
{
	for (size_t i = 0; i < p->nsubs; i++) {
		if (p->subs[i].conn == c) {
			p->subs[i].id = id; /* a repeated ATTACH moves the stream to the new id */
			return 0;
		}
	}
	if (p->nsubs == p->subs_cap) {
		size_t cap = p->subs_cap ? 2 * p->subs_cap : 4;
		struct hu_sub *s = realloc(p->subs, cap * sizeof(*s));
		if (!s)
			return hu_err_set(err, ENOMEM, "subscribe");
		p->subs = s;
		p->subs_cap = cap;
	}
	p->subs[p->nsubs++] = (struct hu_sub){c, id};
	return 0;
}

void hu_proc_forget_conn(struct hu_conn *c)
{
	for (struct hu_proc *p = procs; p; p = p->next) {
		for (size_t i = 0; i < p->nsubs; i++) {
			if (p->subs[i].conn == c) {
				p->subs[i] = p->subs[--p->nsubs];
				break;
			}
		}
		/* With the slow subscriber gone the process may run again. */
		if (p->paused)
			update_polling(p);
	}
	c->stdin_wait = NULL;
}

void hu_proc_conn_drained(struct hu_conn *c)
{
	for (struct hu_proc *p = procs; p; p = p->next)
		if (p->paused)
			update_polling(p);
}

/* ---- requests ------------------------------------------------------------------------ */

static char **strv_dup(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	char **out = calloc(n + 1, sizeof(char *));
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		out[i] = strdup(v[i]);
		if (!out[i]) {
			hu_strv_free(out);
			return NULL;
		}
	}
	return out;
}

static int add_outfd(struct hu_proc *p, int i, int fd, uint8_t stream, hu_err *err)
{
	p->out[i].proc = p;
	p->out[i].stream = stream;
	if (fd < 0)
		return 0;
	if (hu_loop_add(&p->out[i].watch, fd, EPOLLIN, out_event, err) < 0) {
		close(fd);
		return -1;
	}
	p->out[i].open = true;
	return 0;
}

void hu_proc_spawn(struct hu_conn *c, const struct hu_request *req)
{
	struct hu_spawned s;
	hu_err err = {0};

	if (req->tag && find_running(&(struct hu_request){.tag = req->tag})) {
		hu_err_set(&err, EEXIST, "a running process already has tag %s", req->tag);
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	struct hu_proc *p = calloc(1, sizeof(*p));
	if (!p) {
		hu_err_set(&err, ENOMEM, "spawn");
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	p->stdin_watch.fd = -1;
	p->argv = strv_dup(req->argv);
	p->tag = req->tag ? strdup(req->tag) : NULL;
	if (!p->argv || (req->tag && !p->tag) || subscribe(p, c, req->id, &err) < 0 || hu_spawn(req, &s, &err) < 0) {
		if (!err.code)
			hu_err_set(&err, ENOMEM, "spawn");
		hu_conn_send_error(c, req->id, &err);
		proc_free(p);
		return;
	}
	p->pid = s.pid;
	p->envv = s.envv;
	p->cwd = s.cwd;
	p->pty = s.pty;
	p->next = procs;
	if (procs)
		procs->prev = p;
	procs = p;
	/* From here the process runs; a registration failure only loses its
	 * output (the fd is closed, which reads as EOF to the bookkeeping). */
	if (add_outfd(p, 0, s.out_fd[0], s.pty ? HU_STREAM_PTY : HU_STREAM_STDOUT, &err) < 0 ||
	    add_outfd(p, 1, s.out_fd[1], HU_STREAM_STDERR, &err) < 0)
		hu_err_clear(&err);
	if (s.stdin_fd >= 0 && hu_loop_add(&p->stdin_watch, s.stdin_fd, 0, stdin_event, &err) < 0) {
		close(s.stdin_fd);
		p->stdin_watch.fd = -1;
	}
	hu_conn_send_pid(c, HU_MSG_SPAWNED, req->id, (uint32_t)p->pid);
}

/* A running process for a request that needs one, or an ERROR reply. */
static struct hu_proc *running_or_reply(struct hu_conn *c, const struct hu_request *req)
{
	hu_err err;
	struct hu_proc *p = find_running(req);
	if (!p || p->exited) {
		hu_err_set(&err, ESRCH, "no running process %u", req->pid);
		hu_conn_send_error(c, req->id, &err);
		return NULL;
	}
	return p;
}

void hu_proc_attach(struct hu_conn *c, const struct hu_request *req)
{
	hu_err err;
	struct hu_proc *p = find_running(req);

	if (p) {
		if (subscribe(p, c, req->id, &err) < 0) {
			hu_conn_send_error(c, req->id, &err);
			return;
		}
		hu_conn_send_pid(c, HU_MSG_ATTACHED, req->id, (uint32_t)p->pid);
		update_polling(p);
		return;
	}
	const struct exit_record *r = find_exited(req);
	if (!r) {
		if (req->has_pid)
			hu_err_set(&err, ESRCH, "no process %u", req->pid);
		else
			hu_err_set(&err, ESRCH, "no process tagged %s", req->tag);
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	hu_conn_send_pid(c, HU_MSG_ATTACHED, req->id, (uint32_t)r->pid);
	send_exit(c, req->id, r->pid, r->status);
}

void hu_proc_stdin(struct hu_conn *c, const struct hu_request *req)
{
	hu_err err;
	struct hu_proc *p = running_or_reply(c, req);

	if (!p)
		return;
	if (p->stdin_watch.fd < 0 || p->stdin_close_pending) {
		hu_err_set(&err, EPIPE, "stdin of process %u is closed", req->pid);
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	if (req->data_len && queue_stdin(p, req->data, req->data_len, &err) < 0) {
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	if (p->stdin_watch.fd < 0) {
		/* The write found the reader gone (EPIPE): the data is lost. */
		hu_err_set(&err, EPIPE, "stdin of process %u", req->pid);
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	if (p->stdin_len > STDIN_BOUND) {
		/* Accepted, but no more requests from c until the process reads. */
		c->stdin_wait = p;
		hu_conn_update_interest(c);
	}
	hu_conn_send_empty(c, HU_MSG_OK, req->id);
}

void hu_proc_close_stdin(struct hu_conn *c, const struct hu_request *req)
{
	static const uint8_t eof_char = 0x04; /* ^D: EOF for a terminal in canonical mode */
	hu_err err;
	struct hu_proc *p = running_or_reply(c, req);

	if (!p)
		return;
	if (p->stdin_watch.fd >= 0 && !p->stdin_close_pending) {
		if (p->pty) {
			/* The master stays open: it is the terminal's output side too. */
			if (queue_stdin(p, &eof_char, 1, &err) < 0) {
				hu_conn_send_error(c, req->id, &err);
				return;
			}
		} else if (p->stdin_len) {
			p->stdin_close_pending = true;
		} else {
			close_stdin_now(p);
		}
	}
	hu_conn_send_empty(c, HU_MSG_OK, req->id);
}

void hu_proc_signal(struct hu_conn *c, const struct hu_request *req)
{
	hu_err err;
	struct hu_proc *p = running_or_reply(c, req);

	if (!p)
		return;
	/* The process is a session and group leader (setsid): its group is the
	 * whole job, pipelines and children included. */
	if (kill(-p->pid, req->signum) < 0 && kill(p->pid, req->signum) < 0) {
		hu_err_sys(&err, "signal %d to process %d", req->signum, (int)p->pid);
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	hu_conn_send_empty(c, HU_MSG_OK, req->id);
}

void hu_proc_resize(struct hu_conn *c, const struct hu_request *req)
{
	hu_err err;
	struct hu_proc *p = running_or_reply(c, req);

	if (!p)
		return;
	if (!p->pty || !p->out[0].open) {
		hu_err_set(&err, ENOTTY, "process %u has no pty", req->pid);
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	if (hu_pty_resize(p->out[0].watch.fd, req->rows, req->cols, &err) < 0) {
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	hu_conn_send_empty(c, HU_MSG_OK, req->id);
}

void hu_proc_list(struct hu_conn *c, const struct hu_request *req)
{
	struct hu_buf b = {0};
	hu_err err;

	size_t f = hu_frame_begin(&b, HU_MSG_PROCS, req->id);
	for (struct hu_proc *p = procs; p; p = p->next) {
		if (p->exited)
			continue;
		size_t n = hu_put_nested_begin(&b, HU_F_PROC);
		hu_put_u32(&b, HU_F_PID, (uint32_t)p->pid);
		if (p->tag)
			hu_put_str(&b, HU_F_TAG, p->tag);
		for (char **a = p->argv; *a; a++)
			hu_put_str(&b, HU_F_ARG, *a);
		for (char **e = p->envv; e && *e; e++)
			hu_put_str(&b, HU_F_ENV, *e);
		if (p->cwd)
			hu_put_str(&b, HU_F_CWD, p->cwd);
		hu_put_nested_end(&b, n);
	}
	if (hu_frame_end(&b, f) < 0) {
		hu_err_set(&err, E2BIG, "process list does not fit in one frame");
		hu_conn_send_error(c, req->id, &err);
	} else {
		hu_conn_send(c, &b);
	}
	hu_buf_free(&b);
}
