/*
 * POST /files (envd's upload, what the SDKs' files.write / writeFiles send):
 * the body is streamed to hutch-init as it arrives, never held whole.
 *
 * The body (multipart/form-data, or application/octet-stream with ?path=,
 * optionally gzip) comes from the HTTP layer piece by piece
 * (hu_req_body_stream). A multipart body goes through the streaming parser
 * (http/multipart.c); each file part's content is sent to init as
 * WRITE_DATA frames. Flow control: a PING after every UPLOAD_SEGMENT bytes
 * comes back as a PONG once init has written them; with UPLOAD_WINDOW PINGs
 * unanswered the body is paused, so the client's socket fills and TCP slows
 * it down. The daemon holds at most the window plus the HTTP read-ahead per
 * upload, whatever the body's size.
 *
 * Each file is written in place, as envd writes it (so that watchers see
 * envd's events on the file's own name). A malformed or truncated body, a
 * client that leaves, a full disk (507) or a corrupt gzip stream removes
 * the files of the upload, so nothing half-written is left. After a failure
 * the rest of the body is still read (and dropped), so the client gets its
 * answer instead of a reset connection. (Writing under a temporary name and
 * renaming at the end would leave a file's old contents on failure, but
 * watchers would see the temporary name: the SDKs' watch tests fail.)
 * init answers each WRITE_CLOSE with the file's entry, which the reply lists:
 * no request of its own is needed for it.
 */
#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "daemon/envd/fs_json.h"
#include "daemon/envd/handlers.h"
#include "daemon/envd/meta_headers.h"
#include "daemon/http/multipart.h"
#include "daemon/sandboxes/initconn.h"
#include "daemon/sandboxes/registry.h"
#include "runtime/initclient.h"

#define UPLOAD_TIMEOUT_MS 30000       /* init made no progress for this long */
#define UPLOAD_SEGMENT (64u << 10)    /* bytes between PINGs */
#define UPLOAD_WINDOW 4               /* PINGs unanswered before the body pauses */
#define UPLOAD_MAX_FILES 1000

struct up_file {
	char *dest;        /* as the client named it, where it is written; init resolves it */
	uint32_t id;       /* its WRITE_* id */
	uint32_t rm_id;    /* the clean-up's REMOVE, 0 before it */
	bool closed;       /* WRITE_CLOSE answered */
	bool close_sent;
};

struct upload {
	struct hu_req *r;
	char sbx_id[HU_ID_MAX]; /* for logs: the sandbox may be gone by then */
	struct hu_initconn *conn;
	struct event *timer;
	bool cleaning_up; /* failed: removing the upload's files */
	struct up_file *files;
	size_t n, cap;
	const char *path_param; /* ?path=, or NULL */
	struct hu_multipart *mp; /* multipart bodies */
	long cur;                /* the file receiving content, -1 none */
	bool body_done;
	bool paused;
	unsigned in_flight;      /* PINGs not yet answered */
	uint64_t since_ping;     /* bytes sent since the last PING */
	unsigned pending;        /* the clean-up's REMOVEs not yet answered */
	/* gzip (octet-stream only) */
	bool gzip;
	z_stream z;
	bool z_ready;
	uint8_t *zin, *zout;
	size_t zin_cap;
	uint64_t inflated, max_inflated;
	json_t *written; /* the reply: [{path, name, type, metadata?}], in the files' order */
	struct hu_meta_set meta;
	bool gz_complete;  /* the last gzip member ended */
	int fail_status; /* 0 while all is well */
	hu_err failure;
	bool init_gone;  /* a send to init failed: nothing to clean up through it */
};

static const char *transfer_user(struct hu_req *r)
{
	const char *u = hu_req_query(r, "username");
	if (u && *u)
		return u;
	return r->user ? r->user : "user";
}

static void upload_free(struct upload *up)
{
	hu_initconn_free(up->conn); /* safe inside its callbacks */
	if (up->timer)
		event_free(up->timer);
	for (size_t i = 0; i < up->n; i++)
		free(up->files[i].dest);
	free(up->files);
	hu_multipart_free(up->mp);
	if (up->z_ready)
		inflateEnd(&up->z);
	free(up->zin);
	free(up->zout);
	json_decref(up->written);
	hu_meta_set_clear(&up->meta);
	free(up);
}

/* Answer and free. The body has ended (or was given up), so no callback of
 * it can come after this. */
static void upload_answer(struct upload *up, int status, const hu_err *err)
{
	if (err)
		hu_reply_error(up->r, status, "%s", err->msg);
	else {
		hu_reply_json(up->r, 200, up->written);
		up->written = NULL;
	}
	upload_free(up);
}

static void arm(struct upload *up)
{
	struct timeval tv = {.tv_sec = UPLOAD_TIMEOUT_MS / 1000, .tv_usec = (UPLOAD_TIMEOUT_MS % 1000) * 1000};
	if (up->in_flight || up->pending)
		evtimer_add(up->timer, &tv);
	else
		evtimer_del(up->timer); /* waiting for the client only: HTTP's idle timeout applies */
}

static void upload_fail(struct upload *up, int status, const hu_err *err);

/* Send b (freed). A failure fails the upload (answered once the body is over). */
static void send_buf(struct upload *up, struct hu_buf *b)
{
	hu_err err;
	int rc = b->len && !up->init_gone ? hu_initconn_send(up->conn, b, &err) : 0;
	hu_buf_free(b);
	if (rc < 0) {
		up->init_gone = true;
		upload_fail(up, 502, &err);
		return;
	}
	arm(up);
}

/* ---- failure ------------------------------------------------------------------------ */

static void cleanup_if_ready(struct upload *up);

/* Something is wrong (bad input, init's error): remember the first reason;
 * the upload's files go once the body is over. */
static void upload_fail(struct upload *up, int status, const hu_err *err)
{
	if (up->fail_status)
		return;
	up->fail_status = status;
	up->failure = *err;
	hu_log(HU_LOG_INFO, up->sbx_id, up->r->id, "POST /files: %d %s", status, err->msg);
	if (up->paused) { /* drop the rest of the body from here on */
		up->paused = false;
		hu_req_body_resume(up->r);
	}
	cleanup_if_ready(up);
}

static void cleanup_if_ready(struct upload *up)
{
	struct hu_buf b = {0};
	hu_err err;

	if (!up->fail_status || !up->body_done || up->cleaning_up)
		return;
	up->cleaning_up = true;
	up->pending = 0;
	if (up->init_gone) {
		upload_answer(up, up->fail_status, &up->failure);
		return;
	}
	for (size_t i = 0; i < up->n; i++) {
		struct up_file *f = &up->files[i];
		if (!f->close_sent && hu_init_build_simple(&b, HU_MSG_WRITE_CLOSE, f->id, &err) < 0)
			break;
		f->close_sent = true;
		f->rm_id = hu_initconn_next_id(up->conn);
		if (hu_init_build_file(&b, HU_MSG_REMOVE, f->rm_id, f->dest, NULL, 0, transfer_user(up->r), &err) < 0)
			break;
		up->pending++;
	}
	if (up->pending == 0) {
		hu_buf_free(&b);
		upload_answer(up, up->fail_status, &up->failure);
		return;
	}
	send_buf(up, &b);
}

/* ---- writing -------------------------------------------------------------------------- */

static int add_file(struct upload *up, const char *dest, hu_err *err)
{
	if (up->n >= UPLOAD_MAX_FILES)
		return hu_err_set(err, -E2BIG, "more than %d files in one upload", UPLOAD_MAX_FILES);
	if (up->n == up->cap) {
		size_t cap = up->cap ? 2 * up->cap : 4;
		struct up_file *f = realloc(up->files, cap * sizeof(*f));
		if (!f)
			return hu_err_set(err, ENOMEM, "upload");
		up->files = f;
		up->cap = cap;
	}
	struct up_file *f = &up->files[up->n];
	memset(f, 0, sizeof(*f));
	/* written in place, as envd does: a watcher sees CREATE, CHMOD, WRITE
	 * on the file itself, which the SDKs' watch tests expect */
	if (!(f->dest = strdup(dest)))
		return hu_err_set(err, ENOMEM, "upload");
	f->id = hu_initconn_next_id(up->conn);
	up->n++;
	struct hu_buf b = {0};
	if (hu_init_build_write_open(&b, f->id, f->dest, transfer_user(up->r), (const char *const *)up->meta.kv,
				     up->meta.n, err) < 0) {
		hu_buf_free(&b);
		return -1;
	}
	/* init answers OK, or ERROR (then every later frame of the file too);
	 * frames are handled in order, so data may follow at once */
	up->cur = (long)(up->n - 1);
	send_buf(up, &b);
	return 0;
}

/* Content of the current file. */
static void write_bytes(struct upload *up, const uint8_t *data, size_t len)
{
	struct hu_buf b = {0};
	hu_err err;

	if (up->cur < 0 || len == 0 || up->fail_status)
		return;
	if (hu_init_build_write_data(&b, up->files[up->cur].id, data, len, &err) < 0) {
		hu_buf_free(&b);
		upload_fail(up, 503, &err);
		return;
	}
	up->since_ping += len;
	if (up->since_ping >= UPLOAD_SEGMENT) {
		up->since_ping = 0;
		if (hu_init_build_simple(&b, HU_MSG_PING, hu_initconn_next_id(up->conn), &err) == 0)
			up->in_flight++;
	}
	send_buf(up, &b);
}

static void close_current(struct upload *up)
{
	struct hu_buf b = {0};
	hu_err err;

	if (up->cur < 0)
		return;
	struct up_file *f = &up->files[up->cur];
	up->cur = -1;
	if (up->fail_status)
		return; /* the clean-up closes it */
	if (hu_init_build_simple(&b, HU_MSG_WRITE_CLOSE, f->id, &err) < 0) {
		hu_buf_free(&b);
		upload_fail(up, 503, &err);
		return;
	}
	f->close_sent = true;
	send_buf(up, &b);
}

/* Inflate what z holds into the current file, stopping when the window is
 * full (the PONGs continue it). */
static void inflate_some(struct upload *up)
{
	hu_err err;

	while (!up->fail_status && up->z.avail_in > 0 && up->in_flight < UPLOAD_WINDOW) {
		uInt before = up->z.avail_in;
		up->z.next_out = up->zout;
		up->z.avail_out = UPLOAD_SEGMENT;
		int zr = inflate(&up->z, Z_NO_FLUSH);
		size_t got = UPLOAD_SEGMENT - up->z.avail_out;
		if (zr == Z_STREAM_END) {
			up->gz_complete = true;
			inflateReset(&up->z); /* another gzip member may follow */
		} else if (zr != Z_OK && zr != Z_BUF_ERROR) {
			hu_err_set(&err, -EINVAL, "the gzip body is corrupt: %s", up->z.msg ? up->z.msg : "inflate failed");
			upload_fail(up, 400, &err);
			return;
		} else if (got || up->z.avail_in < before) {
			up->gz_complete = false;
		}
		up->inflated += got;
		if (up->inflated > up->max_inflated) {
			hu_err_set(&err, -EFBIG, "the decompressed body is larger than %llu bytes",
				   (unsigned long long)up->max_inflated);
			upload_fail(up, 413, &err);
			return;
		}
		write_bytes(up, up->zout, got);
		if (zr == Z_BUF_ERROR && got == 0)
			break;
	}
}

/* ---- the body ------------------------------------------------------------------------- */

static int part_begin(void *arg, const struct hu_multipart_part *part, hu_err *err)
{
	struct upload *up = arg;

	up->cur = -1;
	if (strcmp(part->name, "file"))
		return 0; /* envd skips other form fields */
	if (up->path_param && up->n > 0)
		return hu_err_set(err, -EINVAL, "the path parameter names one file, but the body holds several");
	const char *path = up->path_param ? up->path_param : part->filename;
	if (!part->has_filename && !up->path_param)
		return hu_err_set(err, -EINVAL, "file part %llu has no filename and there is no path parameter",
				  (unsigned long long)part->index);
	if (!*path)
		return hu_err_set(err, -EINVAL, "file part %llu has an empty filename", (unsigned long long)part->index);
	return add_file(up, path, err);
}

static int part_data(void *arg, const uint8_t *data, size_t len, hu_err *err)
{
	write_bytes(arg, data, len);
	return 0;
}

static int part_end(void *arg, uint64_t data_end, hu_err *err)
{
	close_current(arg);
	return 0;
}

static int body_data(void *arg, const uint8_t *data, size_t len)
{
	struct upload *up = arg;
	hu_err err;

	if (up->fail_status)
		return 0; /* read to the end, dropped */
	if (up->mp) {
		if (hu_multipart_feed(up->mp, data, len, &err) < 0) {
			hu_err_prefix(&err, "multipart body");
			upload_fail(up, err.code == ENOMEM ? 503 : 400, &err);
		}
	} else if (up->gzip) {
		if (len > up->zin_cap) {
			uint8_t *p = realloc(up->zin, len);
			if (!p) {
				hu_err_set(&err, ENOMEM, "upload");
				upload_fail(up, 503, &err);
				return 0;
			}
			up->zin = p;
			up->zin_cap = len;
		}
		memcpy(up->zin, data, len);
		up->z.next_in = up->zin;
		up->z.avail_in = (uInt)len;
		inflate_some(up);
		if (up->z.avail_in > 0 && !up->fail_status) {
			up->paused = true; /* the rest of this piece first, after the next PONG */
			return 1;
		}
	} else {
		write_bytes(up, data, len);
	}
	if (!up->fail_status && up->in_flight >= UPLOAD_WINDOW) {
		up->paused = true;
		return 1;
	}
	return 0;
}

/* Every file is closed and the body is over: answer with their entries. */
static void finish_if_ready(struct upload *up)
{
	if (up->fail_status || !up->body_done)
		return;
	for (size_t i = 0; i < up->n; i++)
		if (!up->files[i].closed)
			return;
	hu_log(HU_LOG_DEBUG, up->sbx_id, up->r->id, "POST /files: %zu file(s) written", up->n);
	upload_answer(up, 200, NULL);
}

static void body_end(void *arg, const hu_err *why)
{
	struct upload *up = arg;
	hu_err err;

	up->body_done = true;
	if (why) {
		err = *why;
		hu_err_prefix(&err, "request body");
		upload_fail(up, 400, &err);
		return;
	}
	if (!up->fail_status && up->mp && hu_multipart_finish(up->mp, &err) < 0) {
		hu_err_prefix(&err, "multipart body");
		upload_fail(up, 400, &err);
		return;
	}
	if (!up->fail_status && up->mp && up->n == 0) {
		hu_err_set(&err, -EINVAL, "the multipart body has no part named \"file\"");
		upload_fail(up, 400, &err);
		return;
	}
	if (!up->fail_status && up->gzip && !up->gz_complete) {
		hu_err_set(&err, -EINVAL, "the gzip body is truncated");
		upload_fail(up, 400, &err);
		return;
	}
	if (up->fail_status) {
		cleanup_if_ready(up);
		return;
	}
	if (!up->mp)
		close_current(up);
	finish_if_ready(up);
}

/* ---- init's answers ------------------------------------------------------------------- */

static struct up_file *file_of(struct upload *up, uint32_t id)
{
	for (size_t i = 0; i < up->n; i++)
		if (up->files[i].id == id)
			return &up->files[i];
	return NULL;
}

/* init's answer to a file's WRITE_CLOSE: the file is complete, and this is
 * its entry for the reply. init answers a connection's requests in order and
 * each file is closed before the next one opens, so the entries come in the
 * files' order. */
static void on_entries(struct upload *up, struct up_file *f, const uint8_t *payload, size_t len)
{
	json_t *entry;
	hu_err err;

	if (up->fail_status)
		return; /* the clean-up removes it */
	if (hu_fs_first_entry(payload, len, &entry, &err) < 0) {
		upload_fail(up, 502, &err);
		return;
	}
	json_t *e = json_pack("{s:O,s:O,s:s}", "path", json_object_get(entry, "path"), "name",
			      json_object_get(entry, "name"), "type", "file");
	json_t *meta = json_object_get(entry, "metadata");
	if (e && meta)
		json_object_set(e, "metadata", meta);
	json_decref(entry);
	if (!e || json_array_append_new(up->written, e) < 0) {
		hu_err_set(&err, ENOMEM, "upload reply");
		upload_fail(up, 503, &err);
		return;
	}
	f->closed = true;
	finish_if_ready(up);
}

static void on_frame(struct hu_initconn *c, const struct hu_frame_hdr *hdr, const uint8_t *payload, void *arg)
{
	struct upload *up = arg;
	hu_err err;

	if (hdr->type == HU_MSG_PONG) {
		if (up->in_flight > 0)
			up->in_flight--;
		arm(up);
		if (up->gzip && up->z.avail_in > 0)
			inflate_some(up);
		if (up->paused && up->in_flight < UPLOAD_WINDOW && (!up->gzip || up->z.avail_in == 0)) {
			up->paused = false;
			hu_req_body_resume(up->r);
		}
		return;
	}
	if (up->cleaning_up) {
		bool removal = false;
		for (size_t i = 0; i < up->n; i++)
			removal |= up->files[i].rm_id && up->files[i].rm_id == hdr->id;
		if (removal && (hdr->type == HU_MSG_OK || hdr->type == HU_MSG_ERROR)) {
			if (up->pending && --up->pending == 0)
				upload_answer(up, up->fail_status, &up->failure);
			else
				arm(up);
		}
		return;
	}
	struct up_file *f = file_of(up, hdr->id);
	if (!f)
		return;
	switch (hdr->type) {
	case HU_MSG_ERROR: /* open, a write or close failed: ENOSPC 507, EACCES 403... */
		hu_init_parse_error(payload, hdr->len, &err);
		upload_fail(up, hu_http_status_for_errno(err.code), &err);
		break;
	case HU_MSG_ENTRIES:
		arm(up);
		on_entries(up, f, payload, hdr->len);
		break;
	default: /* OK of WRITE_OPEN */
		break;
	}
}

static void on_close(struct hu_initconn *c, const hu_err *why, void *arg)
{
	struct upload *up = arg;
	hu_err err;
	up->r->target = NULL; /* a killed sandbox's struct may be freed already */
	hu_req_body_detach(up->r);
	hu_err_set(&err, -ECONNRESET, "the sandbox is not running any more");
	upload_answer(up, 502, &err);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct upload *up = arg;
	hu_err err;
	hu_req_body_detach(up->r);
	hu_err_set(&err, -ETIMEDOUT, "the sandbox did not answer in time");
	upload_answer(up, 504, &err);
}

/* ---- the request ---------------------------------------------------------------------- */

static bool media_type_is(const char *content_type, const char *type)
{
	size_t n = strlen(type);
	while (*content_type == ' ')
		content_type++;
	return !strncasecmp(content_type, type, n) &&
	       (content_type[n] == '\0' || content_type[n] == ';' || content_type[n] == ' ');
}

/* What the headers say the body is. EINVAL: a bad request. */
static int read_headers(struct upload *up, hu_err *err)
{
	struct hu_req *r = up->r;
	const char *ct = hu_req_header(r, "Content-Type");
	const char *enc = hu_req_header(r, "Content-Encoding");
	char boundary[HU_MULTIPART_MAX_BOUNDARY + 1];

	up->path_param = hu_req_query(r, "path");
	if (up->path_param && !*up->path_param)
		up->path_param = NULL;
	up->gzip = enc && (!strcasecmp(enc, "gzip") || !strcasecmp(enc, "x-gzip"));
	if (enc && !up->gzip && strcasecmp(enc, "identity"))
		return hu_err_set(err, -EINVAL, "Content-Encoding %.32s is not supported (gzip is)", enc);
	if (!ct)
		return hu_err_set(err, -EINVAL, "Content-Type is required: multipart/form-data or application/octet-stream");
	if (media_type_is(ct, "application/octet-stream")) {
		if (!up->path_param)
			return hu_err_set(err, -EINVAL,
					  "the path query parameter is required for an application/octet-stream upload");
		return 0;
	}
	if (strncasecmp(ct, "multipart/", 10))
		return hu_err_set(err, -EINVAL,
				  "Content-Type %.64s is not supported: multipart/form-data or application/octet-stream", ct);
	if (up->gzip)
		return hu_err_set(err, -EINVAL, "Content-Encoding gzip is supported with application/octet-stream only");
	struct hu_multipart_cbs cbs = {part_begin, part_data, part_end, up};
	if (hu_multipart_boundary(ct, boundary, sizeof(boundary), err) < 0 ||
	    hu_multipart_new(boundary, &cbs, &up->mp, err) < 0)
		return -1;
	return 0;
}

void hu_envd_files_post(struct hu_req *r)
{
	hu_err err;
	struct upload *up = calloc(1, sizeof(*up));

	if (!up) {
		hu_reply_error(r, 503, "out of memory");
		return;
	}
	up->r = r;
	up->cur = -1;
	snprintf(up->sbx_id, sizeof(up->sbx_id), "%s", hu_req_sbx(r)->id);
	if (hu_meta_set_from_headers(&up->meta, evhttp_request_get_input_headers(r->ev), &err) < 0 ||
	    read_headers(up, &err) < 0) {
		upload_answer(up, err.code == ENOMEM ? 503 : 400, &err);
		return;
	}
	up->max_inflated = hu_req_daemon(r)->cfg.max_body_bytes;
	up->timer = evtimer_new(hu_req_daemon(r)->base, on_timeout, up);
	up->written = json_array();
	if (!up->timer || !up->written ||
	    (up->gzip && (!(up->zout = malloc(UPLOAD_SEGMENT)) || inflateInit2(&up->z, 16 + MAX_WBITS) != Z_OK))) {
		hu_err_set(&err, ENOMEM, "upload");
		upload_answer(up, 503, &err);
		return;
	}
	up->z_ready = up->gzip;
	if (hu_initconn_open(hu_req_daemon(r)->base, hu_sbx_socket(hu_req_sbx(r)), on_frame, on_close, up, &up->conn,
			     &err) < 0) {
		hu_log(HU_LOG_WARN, hu_req_sbx(r)->id, r->id, "POST /files: %s", err.msg);
		hu_err_set(&err, -ECONNREFUSED, "the sandbox is not running");
		upload_answer(up, 502, &err);
		return;
	}
	if (!up->mp && add_file(up, up->path_param, &err) < 0) {
		upload_answer(up, 503, &err);
		return;
	}
	struct hu_body_cbs cbs = {body_data, body_end, up};
	if (hu_req_body_stream(r, &cbs) < 0) {
		hu_err_set(&err, -ECONNRESET, "the client is gone");
		up->body_done = true;
		upload_fail(up, 400, &err);
	}
}
