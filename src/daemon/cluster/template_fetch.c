/*
 * Template distribution between the nodes of a cluster (template_fetch.h):
 * publishing what this node built, sending a template to a node that asks,
 * and fetching one from a node that has it.
 */
#include "daemon/cluster/template_fetch.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/cluster/cluster_internal.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/forward_auth.h"
#include "daemon/cluster/template_stale.h"
#include "daemon/common/log.h"
#include "daemon/sandboxes/pool.h"
#include "daemon/http/connect.h"
#include "daemon/sandboxes/templates.h"
#include "template/template.h"
#include "util/clock.h"
#include "util/fileutil.h"
#include "util/hex.h"

/* ---- publishing ------------------------------------------------------------------ */

struct publish_ctx {
	struct hu_cluster *c;
	int failed;
};

static int publish_one(const struct hu_tpl_meta *m, void *arg)
{
	struct publish_ctx *p = arg;
	struct hu_template_row t = {0};
	hu_err err;

	/* base is every node's own; a template built before checksums
	 * cannot be checked, so it is not offered */
	if (m->host_usr || !m->checksum[0])
		return 0;
	json_t *stored = hu_tpl_meta_stored(m);
	t.meta = stored ? json_dumps(stored, JSON_COMPACT) : NULL;
	json_decref(stored);
	if (!t.meta) {
		p->failed = 1;
		return 0;
	}
	snprintf(t.id, sizeof(t.id), "%s", m->id);
	snprintf(t.checksum, sizeof(t.checksum), "%s", m->checksum);
	snprintf(t.node, sizeof(t.node), "%s", p->c->self.name);
	t.created_ms = m->created_ms;
	if (hu_store_template_record(p->c->d->store, &t, &err) < 0) {
		hu_log(HU_LOG_WARN, NULL, 0, "node %s: record template %s in the store: %s", p->c->self.name, m->id,
		       err.msg);
		p->failed = 1;
	}
	free(t.meta);
	return 0;
}

/* FNV-1a over each template's id, checksum and build time. */
static void fingerprint_add(uint64_t *h, const void *buf, size_t n)
{
	const unsigned char *b = buf;

	for (size_t i = 0; i < n; i++)
		*h = (*h ^ b[i]) * 1099511628211ull;
}

static int fingerprint_one(const struct hu_tpl_meta *m, void *arg)
{
	fingerprint_add(arg, m->id, strlen(m->id) + 1);
	fingerprint_add(arg, m->checksum, strlen(m->checksum) + 1);
	fingerprint_add(arg, &m->created_ms, sizeof(m->created_ms));
	return 0;
}

void hu_cluster_templates_publish(struct hu_cluster *c)
{
	struct publish_ctx p = {c, 0};
	uint64_t fp = 14695981039346656037ull;
	char dir[PATH_MAX];
	hu_err err;

	/* what is published changes when a template is built, fetched,
	 * removed, or rebuilt under its id (the list of names alone does not
	 * say the last) */
	hu_templates_dir(c->d, dir, sizeof(dir));
	if (hu_tpl_list(dir, fingerprint_one, &fp, &err) < 0 || (c->published && fp == c->published_fp))
		return;
	if (hu_tpl_list(dir, publish_one, &p, &err) < 0)
		p.failed = 1;
	if (!p.failed) {
		c->published = true;
		c->published_fp = fp;
	}
}

/* ---- sending --------------------------------------------------------------------- */

struct tpl_send {
	struct hu_stream *s;
	struct hu_tpl_export *x;
	struct event *ev;
	bool paused;
	uint64_t req_id;
	char id[HU_ID_MAX];
};

static void send_free(struct tpl_send *t)
{
	t->s = NULL; /* the export's last words (its trailer on free) go nowhere */
	hu_tpl_export_free(t->x);
	if (t->ev)
		event_free(t->ev);
	free(t);
}

static int send_sink(void *arg, const void *buf, size_t n)
{
	struct tpl_send *t = arg;
	int rc;

	if (!t->s)
		return -1;
	if ((rc = hu_stream_send_bytes(t->s, buf, n)) < 0)
		return -1;
	if (rc == 1)
		t->paused = true;
	return 0;
}

/* Some of the stream, until the client's buffer is full; then again once
 * it drains, and again from the loop after a bounded amount of work. */
static void produce(evutil_socket_t fd, short what, void *arg)
{
	struct tpl_send *t = arg;
	hu_err err;
	int rc = 1;

	(void)fd, (void)what;
	for (int i = 0; i < 64 && !t->paused && rc > 0; i++)
		rc = hu_tpl_export_step(t->x, &err);
	if (rc < 0) {
		hu_log(HU_LOG_WARN, NULL, t->req_id, "send template %s: %s", t->id, err.msg);
		hu_stream_abort(t->s, err.msg);
		send_free(t);
		return;
	}
	if (rc == 0) {
		char sum[HU_TPL_CHECKSUM_MAX];
		hu_tpl_export_digest(t->x, sum);
		hu_log(HU_LOG_INFO, NULL, t->req_id, "sent template %s to a node: %" PRIu64 " bytes, %s", t->id,
		       hu_tpl_export_bytes(t->x), sum);
		hu_stream_finish(t->s);
		send_free(t);
		return;
	}
	if (!t->paused)
		event_active(t->ev, EV_TIMEOUT, 0);
}

static void send_pause(void *arg)
{
	((struct tpl_send *)arg)->paused = true;
}

static void send_resume(void *arg)
{
	struct tpl_send *t = arg;
	t->paused = false;
	event_active(t->ev, EV_TIMEOUT, 0);
}

static void send_gone(void *arg)
{
	struct tpl_send *t = arg;
	hu_log(HU_LOG_WARN, NULL, t->req_id, "send template %s: the node left after %" PRIu64 " bytes", t->id,
	       hu_tpl_export_bytes(t->x));
	hu_stream_finish(t->s);
	send_free(t);
}

void hu_cluster_template_serve(struct hu_req *r, bool forwarded)
{
	struct hu_daemon *d = hu_req_daemon(r);
	const char *id = r->path + strlen(HU_TPL_FETCH_PATH);
	char dir[PATH_MAX];
	struct hu_tpl_meta m;
	struct tpl_send *t;
	hu_err err;

	if (!d->cluster || !forwarded) {
		hu_reply_error(r, 403, "%s is for the nodes of the cluster (a request with a valid %s)", HU_TPL_FETCH_PATH,
			       HU_FWD_HEADER);
		return;
	}
	if (strncmp(r->path, HU_TPL_FETCH_PATH, strlen(HU_TPL_FETCH_PATH)) || !hu_sandbox_id_valid(id)) {
		hu_reply_error(r, 404, "%s: no such endpoint", r->path);
		return;
	}
	if (r->method != EVHTTP_REQ_GET) {
		hu_reply_error(r, 405, "%s: GET only", r->path);
		return;
	}
	if (hu_template_lookup(d, NULL, id, &m, &err) < 0) {
		hu_reply_err(r, &err);
		return;
	}
	int offered = !m.host_usr && m.checksum[0];
	hu_tpl_meta_free(&m);
	if (!offered) {
		hu_reply_error(r, 404, "template '%s' is not sent to other nodes (base, or built before checksums)", id);
		return;
	}
	hu_templates_dir(d, dir, sizeof(dir));
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/%s/rootfs", id);
	int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		hu_err_sys(&err, "open %s", dir);
		hu_reply_err(r, &err);
		return;
	}
	if (!(t = calloc(1, sizeof(*t)))) {
		close(root);
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	t->req_id = r->id;
	snprintf(t->id, sizeof(t->id), "%s", id);
	int rc = hu_tpl_export_open(root, send_sink, t, &t->x, &err);
	close(root);
	if (rc < 0 || !(t->ev = event_new(d->base, -1, 0, produce, t))) {
		if (rc == 0)
			hu_err_set(&err, -ENOMEM, "send template %s", id);
		send_free(t);
		hu_reply_err(r, &err);
		return;
	}
	const struct hu_stream_cbs cbs = {send_pause, send_resume, send_gone, t};
	if (!(t->s = hu_stream_start_raw(r, "application/x-tar", HU_STREAM_HIGH_WATER, &cbs))) {
		send_free(t);
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	event_active(t->ev, EV_TIMEOUT, 0);
}

/* ---- fetching -------------------------------------------------------------------- */

struct waiter {
	struct waiter *next;
	struct hu_req *r;
	hu_handler create;
	char placement[HU_PLACEMENT_ID_MAX];
};

struct hu_tpl_fetch {
	struct hu_tpl_fetch *next;
	struct hu_cluster *c;
	char id[HU_ID_MAX];
	struct hu_template_row row;
	struct waiter *waiters;
	struct evhttp_connection *conn;
	struct evhttp_request *req; /* until it is done */
	struct event *abort;        /* ends the request from the loop (not from its callbacks) */
	int status;
	struct evbuffer *why;       /* a refusal's body (a little of it) */
	char file[PATH_MAX];        /* the stream as it came */
	int fd;
	EVP_MD_CTX *md;
	uint64_t bytes, logged;
	int64_t started_ms, streamed_ms; /* asked; the whole stream in and checked */
	char net_err[128];
	/* the unpacking thread */
	pthread_t thread;
	bool thread_started;
	int pipe[2];
	struct event *done;
	char tmp[PATH_MAX];
	hu_err err;
	int rc;
	uint64_t files;
	bool replace;              /* a stale copy is here: set it aside (template_stale.h) */
	char old_checksum[HU_TPL_CHECKSUM_MAX];
};

static void fetch_free(struct hu_tpl_fetch *f)
{
	struct hu_cluster *c = f->c;
	struct waiter *w;

	for (struct hu_tpl_fetch **p = &c->fetches; *p; p = &(*p)->next)
		if (*p == f) {
			*p = f->next;
			break;
		}
	if (f->req)
		evhttp_cancel_request(f->req);
	if (f->abort)
		event_free(f->abort);
	if (f->conn)
		evhttp_connection_free(f->conn);
	if (f->thread_started)
		pthread_join(f->thread, NULL);
	if (f->done)
		event_free(f->done);
	for (int i = 0; i < 2; i++)
		if (f->pipe[i] >= 0)
			close(f->pipe[i]);
	if (f->fd >= 0)
		close(f->fd);
	if (f->file[0])
		unlink(f->file);
	if (f->why)
		evbuffer_free(f->why);
	EVP_MD_CTX_free(f->md);
	free(f->row.meta);
	while ((w = f->waiters)) {
		f->waiters = w->next;
		free(w);
	}
	free(f);
}

/* Every waiting create goes on (ok) or is answered with err. */
static void finish(struct hu_tpl_fetch *f, const hu_err *err)
{
	struct hu_daemon *d = f->c->d;
	struct waiter *w;

	/* taken off first: a create that runs now must not join this fetch */
	for (struct hu_tpl_fetch **p = &f->c->fetches; *p; p = &(*p)->next)
		if (*p == f) {
			*p = f->next;
			break;
		}
	f->next = NULL;
	/* the stream is unpacked or refused: it goes before anyone goes on */
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (f->file[0])
		unlink(f->file);
	f->file[0] = '\0';
	while ((w = f->waiters)) {
		f->waiters = w->next;
		if (!err && w->r->ev) {
			w->create(w->r);
		} else if (err) {
			/* the other node could not send it (or sent what is refused):
			 * a bad gateway, unless no node has it for now */
			if (err->code == ENOTCONN)
				hu_reply_header(w->r, "Retry-After", "1");
			hu_reply_error(w->r, err->code == ENOTCONN ? 503 : 502, "%s", err->msg);
		} else
			hu_reply_error(w->r, 499, "the client left while template %s was fetched", f->id);
		hu_cluster_placed(d, w->placement);
		free(w);
	}
	/* the connection is freed from the loop, never inside its callback */
	f->next = f->c->fetch_done;
	f->c->fetch_done = f;
	event_active(f->c->fetch_reaper, EV_TIMEOUT, 0);
}

static void fail(struct hu_tpl_fetch *f, int code, const char *detail)
{
	hu_err err;

	hu_err_set(&err, code, "fetch template %s from node %s: %s", f->id, f->row.source.name, detail);
	hu_log(HU_LOG_WARN, NULL, 0, "%s", err.msg);
	finish(f, &err);
}

/* The unpacking, off the loop: stage, import through the template writer,
 * commit (rename into place). Nothing of it is left on a failure. */
static void *unpack(void *arg)
{
	struct hu_tpl_fetch *f = arg;
	struct hu_daemon *d = f->c->d;
	struct hu_tpl_build b = {.source = HU_TPL_FROM_NODE, .init_fd = -1};
	char dir[PATH_MAX], tag[32], root_path[PATH_MAX + 16], aside[PATH_MAX] = "";
	struct hu_tpl_writer w = {.caps = {HU_TPL_DEFAULT_MAX_BYTES, HU_TPL_DEFAULT_MAX_FILES}, .root = -1};
	hu_err ignore;

	hu_templates_dir(d, dir, sizeof(dir));
	b.templates_dir = dir;
	snprintf(tag, sizeof(tag), "fetch%d", (int)getpid());
	f->rc = -1;
	if (hu_tpl_meta_parse(f->row.meta, strlen(f->row.meta), &b.meta, &f->err) < 0)
		goto out;
	if (strcmp(b.meta.id, f->id)) {
		hu_err_set(&f->err, -EINVAL, "the store's description names template '%.64s'", b.meta.id);
		goto out;
	}
	snprintf(b.meta.checksum, sizeof(b.meta.checksum), "%s", f->row.checksum);
	if ((f->replace ? hu_tpl_stage_replacing : hu_tpl_stage)(dir, f->id, tag, f->tmp, sizeof(f->tmp), &f->err) < 0) {
		f->tmp[0] = '\0';
		goto out;
	}
	snprintf(root_path, sizeof(root_path), "%s/rootfs", f->tmp);
	if ((w.root = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		hu_err_sys(&f->err, "open %s", root_path);
		goto out;
	}
	if (hu_tpl_import_tar(&w, f->fd, &f->err) < 0)
		goto out;
	b.meta.size_bytes = w.bytes;
	b.meta.files = w.files;
	f->files = w.files;
	/* the old copy's name is free for a moment: a create that looks for
	 * the template then finds this fetch and waits for it */
	if (f->replace && hu_cluster_template_set_aside(dir, f->id, aside, sizeof(aside), &f->err) < 0)
		goto out;
	if (hu_tpl_commit(&b, f->tmp, &f->err) < 0) {
		snprintf(root_path, sizeof(root_path), "%s/%s", dir, f->id);
		if (aside[0] && rename(aside, root_path) < 0)
			hu_err_prefix(&f->err, "the old copy stays at %s", aside);
		goto out;
	}
	f->tmp[0] = '\0'; /* renamed into place */
	f->rc = 0;
out:
	if (w.root >= 0)
		close(w.root);
	if (f->tmp[0])
		hu_rm_rf(f->tmp, &ignore);
	hu_tpl_meta_free(&b.meta);
	char one = 1;
	if (write(f->pipe[1], &one, 1) < 0) {
		/* the loop then never hears: it cannot happen with a pipe of its own */
	}
	return NULL;
}

static void on_unpacked(evutil_socket_t fd, short what, void *arg)
{
	struct hu_tpl_fetch *f = arg;
	struct hu_daemon *d = f->c->d;
	hu_err err;

	(void)fd, (void)what;
	pthread_join(f->thread, NULL);
	f->thread_started = false;
	if (f->rc < 0) {
		hu_err_prefix(&f->err, "template %s fetched from node %s, not installed", f->id, f->row.source.name);
		hu_log(HU_LOG_WARN, NULL, 0, "%s", f->err.msg);
		finish(f, &f->err);
		return;
	}
	/* this daemon's sudo shim, as every template gets at start */
	if (hu_template_refresh(d->rt, f->id, &err) < 0)
		hu_log(HU_LOG_WARN, NULL, 0, "%s", err.msg);
	if (f->replace) {
		/* warm sandboxes of the old copy are not handed out any more */
		hu_pool_drop_template(d, f->id);
		hu_log(HU_LOG_INFO, NULL, 0,
		       "template %s: the copy here (%s) was older than the build the store records; the sandboxes that"
		       " run on it keep it until they end",
		       f->id, f->old_checksum);
	}
	hu_log(HU_LOG_INFO, NULL, 0,
	       "template %s fetched from node %s and installed: %" PRIu64 " bytes, %" PRIu64 " files in %" PRId64
	       " ms (stream %" PRId64 " ms, unpack %" PRId64 " ms), %s matches the store",
	       f->id, f->row.source.name, f->bytes, f->files, hu_mono_ms() - f->started_ms,
	       f->streamed_ms - f->started_ms, hu_mono_ms() - f->streamed_ms, f->row.checksum);
	finish(f, NULL);
}

static void on_chunk(struct evhttp_request *req, void *arg)
{
	struct hu_tpl_fetch *f = arg;
	struct evbuffer *in = evhttp_request_get_input_buffer(req);

	f->status = evhttp_request_get_response_code(req);
	if (f->status != 200) {
		/* a refusal: keep a little of its message */
		size_t room = 512 - evbuffer_get_length(f->why);
		evbuffer_remove_buffer(in, f->why, room);
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	if (f->net_err[0]) { /* refused already: the rest is not read */
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	while (evbuffer_get_length(in) > 0) {
		struct evbuffer_iovec v;
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		if (f->fd < 0 || EVP_DigestUpdate(f->md, v.iov_base, v.iov_len) != 1 ||
		    hu_write_all(f->fd, v.iov_base, v.iov_len) < 0) {
			snprintf(f->net_err, sizeof(f->net_err), "cannot write the stream to %s", f->file);
			evbuffer_drain(in, evbuffer_get_length(in));
			event_active(f->abort, EV_TIMEOUT, 0);
			return;
		}
		f->bytes += v.iov_len;
		evbuffer_drain(in, v.iov_len);
	}
	/* a stream longer than any template the writer would take is cut */
	if (f->bytes > HU_TPL_DEFAULT_MAX_BYTES + (HU_TPL_DEFAULT_MAX_BYTES >> 3)) {
		snprintf(f->net_err, sizeof(f->net_err), "the stream is over %llu bytes",
			 (unsigned long long)HU_TPL_DEFAULT_MAX_BYTES);
		event_active(f->abort, EV_TIMEOUT, 0);
	}
	if (f->bytes - f->logged >= HU_TPL_FETCH_LOG_BYTES) {
		f->logged = f->bytes;
		hu_log(HU_LOG_INFO, NULL, 0, "template %s: %" PRIu64 " MiB fetched from node %s so far (%" PRId64 " s)",
		       f->id, f->bytes >> 20, f->row.source.name, (hu_mono_ms() - f->started_ms) / 1000);
	}
}

/* The stream was refused while it came (too long, not writable): the
 * request is cancelled, and the creates answered with why. */
static void on_abort(evutil_socket_t fd, short what, void *arg)
{
	struct hu_tpl_fetch *f = arg;

	(void)fd, (void)what;
	if (!f->req)
		return; /* it ended meanwhile, and on_done said why */
	evhttp_cancel_request(f->req);
	f->req = NULL;
	fail(f, -EIO, f->net_err);
}

static void on_net_error(enum evhttp_request_error e, void *arg)
{
	struct hu_tpl_fetch *f = arg;
	const char *what = e == EVREQ_HTTP_TIMEOUT ? "timed out"
			   : e == EVREQ_HTTP_EOF ? "the connection closed before the stream ended"
			   : e == EVREQ_HTTP_INVALID_HEADER ? "an invalid response"
			   : e == EVREQ_HTTP_BUFFER_ERROR ? "a connection error"
			   : e == EVREQ_HTTP_DATA_TOO_LONG ? "a response too large"
							 : "the request was cancelled";
	if (!f->net_err[0])
		snprintf(f->net_err, sizeof(f->net_err), "%s", what);
}

static void on_done(struct evhttp_request *req, void *arg)
{
	struct hu_tpl_fetch *f = arg;
	char got[HU_TPL_CHECKSUM_MAX], why[600];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	f->req = NULL; /* libevent frees it after this callback */
	if (!req || f->net_err[0]) {
		fail(f, -EHOSTUNREACH, f->net_err[0] ? f->net_err : "no response");
		return;
	}
	f->status = evhttp_request_get_response_code(req);
	if (f->status != 200) {
		struct evbuffer *in = evhttp_request_get_input_buffer(req);
		char body[513];
		evbuffer_remove_buffer(in, f->why, 512 - evbuffer_get_length(f->why));
		size_t len = evbuffer_copyout(f->why, body, sizeof(body) - 1);
		body[len] = '\0';
		for (char *p = body; *p; p++)
			if ((unsigned char)*p < 0x20)
				*p = ' ';
		snprintf(why, sizeof(why), "it answered %d: %s", f->status, body);
		fail(f, -EHOSTUNREACH, why);
		return;
	}
	on_chunk(req, f);
	if (f->fd < 0 || f->net_err[0]) {
		fail(f, -EIO, f->net_err[0] ? f->net_err : "write failed");
		return;
	}
	if (EVP_DigestFinal_ex(f->md, md, &n) != 1 || n != 32) {
		fail(f, -EIO, "sha256 failed");
		return;
	}
	memcpy(got, "sha256:", 7);
	hu_hex_encode(md, n, got + 7);
	if (strcmp(got, f->row.checksum)) {
		snprintf(why, sizeof(why), "the copy's checksum %s is not the store's %s (%" PRIu64 " bytes): nothing installed",
			 got, f->row.checksum, f->bytes);
		fail(f, -EIO, why);
		return;
	}
	/* checked: now it may be unpacked */
	f->streamed_ms = hu_mono_ms();
	if (pipe2(f->pipe, O_CLOEXEC) < 0 ||
	    !(f->done = event_new(f->c->d->base, f->pipe[0], EV_READ, on_unpacked, f)) || event_add(f->done, NULL) < 0 ||
	    pthread_create(&f->thread, NULL, unpack, f) != 0) {
		fail(f, -ENOMEM, "cannot start the unpacking");
		return;
	}
	f->thread_started = true;
}

/* The request to the source node, over TLS for an https:// address. */
static int start_request(struct hu_tpl_fetch *f, hu_err *err)
{
	struct hu_cluster *c = f->c;
	struct evhttp_uri *u = evhttp_uri_parse(f->row.source.address);
	char target[128], proof[HU_FWD_VALUE_MAX], host[300];
	const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL, *h = u ? evhttp_uri_get_host(u) : NULL;
	bool tls = scheme && !strcmp(scheme, "https");
	struct bufferevent *bev = NULL;

	if (!h || !scheme || (!tls && strcmp(scheme, "http"))) {
		if (u)
			evhttp_uri_free(u);
		return hu_err_set(err, -EINVAL, "node address '%.64s' is not an http:// or https:// URL",
				  f->row.source.address);
	}
	int port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : tls ? 443 : 80;
	snprintf(host, sizeof(host), "%s", h);
	evhttp_uri_free(u);
	if (tls) {
		SSL_CTX *ctx = hu_cluster_client_tls(c, err);
		SSL *ssl = ctx ? SSL_new(ctx) : NULL;
		if (!ssl)
			return ctx ? hu_err_set(err, -ENOMEM, "TLS") : -1;
		X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
		if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) != 1) {
			ERR_clear_error();
			SSL_set_tlsext_host_name(ssl, host);
			X509_VERIFY_PARAM_set1_host(vp, host, 0);
		}
		bev = bufferevent_openssl_socket_new(c->d->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
						     BEV_OPT_CLOSE_ON_FREE);
		if (!bev) {
			SSL_free(ssl);
			return hu_err_set(err, -ENOMEM, "TLS");
		}
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	}
	/* evhttp takes a bracketed IPv6 literal without its brackets */
	f->conn = evhttp_connection_base_bufferevent_new(c->d->base, NULL, bev, host, (unsigned short)port);
	if (!f->conn) {
		if (bev)
			bufferevent_free(bev);
		return hu_err_set(err, -ENOMEM, "connection to node %s", f->row.source.name);
	}
	evhttp_connection_set_timeout(f->conn, HU_TPL_FETCH_TIMEOUT_S);
	snprintf(target, sizeof(target), "%s%s", HU_TPL_FETCH_PATH, f->id);
	if (hu_fwd_sign(c->secret, c->secret_len, "GET", target, c->self.name, NULL, NULL, hu_wall_ms(), proof, sizeof(proof),
			err) < 0)
		return -1;
	if (!(f->req = evhttp_request_new(on_done, f)))
		return hu_err_set(err, -ENOMEM, "fetch request");
	evhttp_request_set_chunked_cb(f->req, on_chunk);
	evhttp_request_set_error_cb(f->req, on_net_error);
	struct evkeyvalq *hs = evhttp_request_get_output_headers(f->req);
	evhttp_add_header(hs, "Host", host);
	evhttp_add_header(hs, HU_FWD_HEADER, proof);
	if (evhttp_make_request(f->conn, f->req, EVHTTP_REQ_GET, target) < 0) {
		f->req = NULL; /* freed by evhttp on failure */
		return hu_err_set(err, -ECONNREFUSED, "fetch from node %s", f->row.source.name);
	}
	return 0;
}

static struct hu_tpl_fetch *fetch_start(struct hu_cluster *c, const char *id, struct hu_template_row *row,
					const char *stale_checksum, hu_err *err)
{
	struct hu_tpl_fetch *f = calloc(1, sizeof(*f));
	char dir[PATH_MAX];

	if (!f)
		return hu_err_set(err, -ENOMEM, "fetch template %s", id), NULL;
	f->c = c;
	f->fd = f->pipe[0] = f->pipe[1] = -1;
	snprintf(f->id, sizeof(f->id), "%s", id);
	f->row = *row;
	row->meta = NULL; /* f has it */
	f->replace = stale_checksum != NULL;
	snprintf(f->old_checksum, sizeof(f->old_checksum), "%s", stale_checksum ? stale_checksum : "");
	f->started_ms = hu_mono_ms();
	f->next = c->fetches;
	c->fetches = f;
	hu_templates_dir(c->d, dir, sizeof(dir));
	if (hu_mkdir_p(dir, 0700, err) < 0)
		goto fail;
	/* a dot-name: listings skip it; one left by a killed daemon is replaced */
	snprintf(f->file, sizeof(f->file), "%s/.fetch-%s-%d.tar", dir, id, (int)getpid());
	unlink(f->file);
	if ((f->fd = open(f->file, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
		hu_err_sys(err, "create %s", f->file);
		f->file[0] = '\0';
		goto fail;
	}
	if (!(f->md = EVP_MD_CTX_new()) || EVP_DigestInit_ex(f->md, EVP_sha256(), NULL) != 1 ||
	    !(f->why = evbuffer_new()) || !(f->abort = event_new(c->d->base, -1, 0, on_abort, f))) {
		hu_err_set(err, -ENOMEM, "fetch template %s", id);
		goto fail;
	}
	if (start_request(f, err) < 0)
		goto fail;
	hu_log(HU_LOG_INFO, NULL, 0, "template %s: %s; fetching it from node %s (%s)", id,
	       f->replace ? "the copy here is older than the store's build" : "not on this node", f->row.source.name,
	       f->row.source.address);
	return f;
fail:
	hu_err_prefix(err, "fetch template %s from node %s", id, f->row.source.name);
	fetch_free(f);
	return NULL;
}

int hu_cluster_template_fetch(struct hu_req *r, const char *template_id, hu_handler create, const char *placement)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct hu_cluster *c = d->cluster;
	struct hu_template_row row;
	struct hu_tpl_meta m;
	struct hu_tpl_fetch *f;
	struct waiter *w;
	char stale[HU_TPL_CHECKSUM_MAX] = ""; /* the checksum of a stale copy here */
	hu_err err;

	if (!c || !c->secret || !d->store || !hu_sandbox_id_valid(template_id))
		return 0;
	for (f = c->fetches; f && strcmp(f->id, template_id); f = f->next)
		;
	if (!f && hu_template_lookup(d, NULL, template_id, &m, &err) == 0) {
		int old = hu_cluster_template_stale(d, &m, &row);
		snprintf(stale, sizeof(stale), "%s", m.checksum);
		hu_tpl_meta_free(&m);
		if (!old)
			return 0; /* here already, and current */
		if (!row.source.name[0]) {
			hu_log(HU_LOG_WARN, NULL, 0, "template %s: the store records a newer build, which no live node"
			       " has to send: the copy here serves", template_id);
			free(row.meta);
			return 0;
		}
	}
	if (!f) {
		if (!stale[0] && hu_store_template_find(d->store, template_id, &row, &err) < 0) {
			free(row.meta);
			if (err.code == ENOENT || err.code == ENOSYS)
				return 0; /* not a template of the cluster: the create says so */
			hu_err_prefix(&err, "template %s", template_id);
			goto answer;
		}
		/* another team's private template is not fetched for this one */
		if (hu_tpl_meta_parse(row.meta, strlen(row.meta), &m, &err) == 0) {
			int theirs = !m.is_public && strcmp(m.team, r->principal);
			hu_tpl_meta_free(&m);
			if (theirs) {
				free(row.meta);
				return 0;
			}
		}
		if (!row.source.name[0]) {
			free(row.meta);
			hu_err_set(&err, -ENOTCONN, "template %s: no live node has it to send (its builder is %s)",
				   template_id, row.node);
			goto answer;
		}
		if (!(f = fetch_start(c, template_id, &row, stale[0] ? stale : NULL, &err))) {
			free(row.meta);
			goto answer;
		}
	}
	if (!(w = calloc(1, sizeof(*w)))) {
		hu_err_set(&err, -ENOMEM, "fetch template %s", template_id);
		goto answer;
	}
	w->r = r;
	w->create = create;
	snprintf(w->placement, sizeof(w->placement), "%s", placement ? placement : "");
	w->next = f->waiters;
	f->waiters = w;
	return 1;
answer:
	hu_reply_err(r, &err);
	hu_cluster_placed(d, placement ? placement : "");
	return 1;
}

static void reap(evutil_socket_t fd, short what, void *arg)
{
	struct hu_cluster *c = arg;
	struct hu_tpl_fetch *f;

	(void)fd, (void)what;
	while ((f = c->fetch_done)) {
		c->fetch_done = f->next;
		f->next = NULL;
		/* fetch_free unlinks from c->fetches, where f no longer is */
		fetch_free(f);
	}
}

int hu_cluster_template_fetch_init(struct hu_cluster *c, hu_err *err)
{
	if (!(c->fetch_reaper = event_new(c->d->base, -1, 0, reap, c)))
		return hu_err_set(err, -ENOMEM, "cluster: template fetches");
	return 0;
}

void hu_cluster_template_fetch_abort_all(struct hu_cluster *c)
{
	struct hu_tpl_fetch *f;

	while ((f = c->fetches)) {
		/* their requests went with the HTTP server */
		struct waiter *w;
		while ((w = f->waiters)) {
			f->waiters = w->next;
			free(w);
		}
		fetch_free(f);
	}
	reap(-1, 0, c);
	if (c->fetch_reaper) {
		event_free(c->fetch_reaper);
		c->fetch_reaper = NULL;
	}
}
