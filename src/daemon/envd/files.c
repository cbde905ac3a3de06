/*
 * envd's REST file transfers on the data plane: GET /files (download) and
 * POST /files (upload), as the e2b SDK's files.read() and files.write()
 * use them. File contents are raw bytes both ways; every byte goes through
 * hutch-init (READ, WRITE_*) as the requesting user, inside the sandbox's
 * root.
 *
 * Downloads stream: the reply starts with the first chunk init sends, and a
 * client that reads slowly pauses the init connection once the HTTP output
 * buffer holds DOWNLOAD_HIGH_WATER bytes; init then stops reading the file.
 * So a 50 MB file never sits in the daemon. A missing file (404), a
 * directory (400) and an empty file (Content-Length: 0, which the SDK
 * needs) are known before the reply starts. Responses are never compressed
 * (Accept-Encoding is ignored; clients accept identity).
 *
 * Uploads: evhttp hands over the whole body (bounded by max_body). The body
 * is checked first (a multipart body is parsed completely, so a malformed
 * one is refused before any file is touched), then each file is sent to
 * init in segments; a PING after every segment comes back as a PONG once
 * init has written it, and at most UPLOAD_WINDOW segments are unanswered,
 * so the daemon never queues a whole file on the init socket. A gzip body
 * (Content-Encoding: gzip, octet-stream only) is inflated segment by
 * segment, bounded by max_body; if it turns out corrupt, the partly written
 * file is removed again.
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <zlib.h>

#include "daemon/http/connect.h"
#include "daemon/envd/fs_json.h"
#include "daemon/http/gzip_out.h"
#include "daemon/envd/meta_headers.h"
#include "daemon/sandboxes/initconn.h"
#include "daemon/http/multipart.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/envd/handlers.h"
#include "runtime/initclient.h"

/* init silent this long while we wait for it: the sandbox is frozen or stuck. */
#define FILES_TIMEOUT_MS 30000
#define DOWNLOAD_HIGH_WATER (1u << 20)
#define UPLOAD_SEGMENT (256u << 10)
#define UPLOAD_WINDOW 4
#define UPLOAD_MAX_FILES 1000

/* ---- shared ----------------------------------------------------------------------- */

/* The user a transfer runs as: ?username=, else the Basic auth user. */
static const char *transfer_user(struct hu_req *r)
{
	const char *u = hu_req_query(r, "username");
	if (u && *u)
		return u;
	return r->user ? r->user : "user";
}

static void arm_timeout(struct event *timer)
{
	struct timeval tv = {.tv_sec = FILES_TIMEOUT_MS / 1000, .tv_usec = (FILES_TIMEOUT_MS % 1000) * 1000};
	evtimer_add(timer, &tv);
}

/* ---- GET /files -------------------------------------------------------------------- */

/* A file streamed from init's READ to the client: a raw hu_stream (connect.c)
 * once the first bytes arrive, so that errors before that are JSON. */
struct download {
	struct hu_req *r;                /* until the stream owns it */
	struct hu_stream *stream;        /* NULL until the first bytes */
	char sbx_id[HU_ID_MAX];          /* for logs: the sandbox may be gone by then */
	struct hu_initconn *conn;
	struct event *timer;             /* waiting for init's first answer */
	uint32_t id;
	uint64_t sent;
	struct hu_gzip_out *gzip;        /* Accept-Encoding: gzip, else NULL */
};

static void download_release(struct download *dl)
{
	hu_initconn_free(dl->conn); /* safe inside its callbacks; ends init's READ */
	if (dl->timer)
		event_free(dl->timer);
	hu_gzip_out_free(dl->gzip);
	free(dl);
}

/* Before the stream started: an ordinary answer (an error, or an empty file). */
static void download_reply_err(struct download *dl, int status, const hu_err *err)
{
	if (status)
		hu_reply_error(dl->r, status, "%s", err->msg);
	else
		hu_reply_err(dl->r, err);
	download_release(dl);
}

/* After it started, a failure can only cut the connection, so the client
 * sees a truncated body instead of a short "complete" file. */
static void download_abort(struct download *dl, const char *why)
{
	hu_log(HU_LOG_WARN, dl->sbx_id, dl->r->id, "GET /files: cut after %llu bytes: %s",
	       (unsigned long long)dl->sent, why);
	hu_stream_abort(dl->stream, why);
	download_release(dl);
}

static void download_pause(void *arg)
{
	hu_initconn_pause(((struct download *)arg)->conn);
}

static void download_resume(void *arg)
{
	hu_initconn_resume(((struct download *)arg)->conn);
}

static void download_client_gone(void *arg)
{
	struct download *dl = arg;
	hu_log(HU_LOG_DEBUG, dl->sbx_id, dl->r->id, "GET /files: the client left after %llu bytes",
	       (unsigned long long)dl->sent);
	hu_stream_finish(dl->stream);
	download_release(dl);
}

static int send_to_stream(void *arg, const uint8_t *data, size_t len)
{
	return hu_stream_send_bytes(arg, data, len) < 0 ? -1 : 0;
}

/* finish: the file ended (only with gzip, whose trailer is still due).
 * false when dl was answered and released (an error). */
static bool download_data(struct download *dl, const uint8_t *data, size_t len, bool finish)
{
	if (!dl->stream) {
		/* The first bytes: a chunked 200 (the size is not promised up
		 * front: the file may change while it is read). */
		struct hu_stream_cbs cbs = {download_pause, download_resume, download_client_gone, dl};
		if (dl->gzip) {
			hu_reply_header(dl->r, "Content-Encoding", "gzip");
			hu_reply_header(dl->r, "Vary", "Accept-Encoding");
		}
		dl->stream = hu_stream_start_raw(dl->r, "application/octet-stream", DOWNLOAD_HIGH_WATER, &cbs);
		if (!dl->stream) {
			hu_err err;
			hu_err_set(&err, ENOMEM, "download");
			download_reply_err(dl, 503, &err);
			return false;
		}
		event_del(dl->timer);
	}
	dl->sent += len;
	if (dl->gzip) {
		hu_err err;
		if (hu_gzip_out_write(dl->gzip, data, len, finish, send_to_stream, dl->stream, &err) < 0) {
			download_abort(dl, err.msg);
			return false;
		}
		return true;
	}
	if (hu_stream_send_bytes(dl->stream, data, len) < 0) {
		download_abort(dl, "out of memory, or the server is stopping");
		return false;
	}
	return true;
}

static void download_on_frame(struct hu_initconn *c, const struct hu_frame_hdr *hdr, const uint8_t *payload, void *arg)
{
	struct download *dl = arg;
	struct hu_init_event ev;
	hu_err err;

	if (hdr->id != dl->id)
		return;
	if (hu_init_parse_event(hdr, payload, &ev, &err) < 0) {
		if (dl->stream)
			download_abort(dl, err.msg);
		else
			download_reply_err(dl, 0, &err);
		return;
	}
	switch (hdr->type) {
	case HU_MSG_READ_DATA:
		download_data(dl, ev.data, ev.data_len, false);
		break;
	case HU_MSG_READ_END:
		/* gzip: the trailer (for an empty file, a whole empty member) */
		if (dl->gzip && !download_data(dl, NULL, 0, true))
			break; /* answered and released already */
		if (dl->stream) {
			hu_log(HU_LOG_DEBUG, dl->sbx_id, dl->r->id, "GET /files -> 200, %llu bytes",
			       (unsigned long long)dl->sent);
			hu_stream_finish(dl->stream);
			download_release(dl);
			break;
		}
		/* Nothing was sent: an empty file, which the SDK recognises by
		 * Content-Length: 0. */
		hu_reply_header(dl->r, "Content-Type", "application/octet-stream");
		hu_reply_empty(dl->r, 200);
		download_release(dl);
		break;
	case HU_MSG_ERROR:
		hu_init_parse_error(payload, hdr->len, &err);
		if (dl->stream)
			download_abort(dl, err.msg);
		else
			download_reply_err(dl, 0, &err); /* ENOENT 404, EISDIR 400, ... */
		break;
	default:
		break;
	}
}

/* init's connection closes when its sandbox dies; a killed sandbox's
 * struct may be freed already, so the request must not point at it while
 * it is answered (and logged). */
static void download_on_close(struct hu_initconn *c, const hu_err *why, void *arg)
{
	struct download *dl = arg;
	hu_err err;

	dl->r->target = NULL;
	if (dl->stream) {
		download_abort(dl, why->msg);
		return;
	}
	hu_err_set(&err, 0, "the sandbox is not running any more");
	download_reply_err(dl, 502, &err);
}

static void download_on_timeout(evutil_socket_t fd, short what, void *arg)
{
	hu_err err;
	hu_err_set(&err, 0, "the sandbox did not answer in time");
	download_reply_err(arg, 504, &err);
}

void hu_envd_files_get(struct hu_req *r)
{
	const char *path = hu_req_query(r, "path");
	struct hu_buf b = {0};
	hu_err err;

	if (!path || !*path) {
		hu_reply_error(r, 400, "the path query parameter is required");
		return;
	}
	struct download *dl = calloc(1, sizeof(*dl));
	if (!dl) {
		hu_reply_error(r, 503, "out of memory");
		return;
	}
	dl->r = r;
	snprintf(dl->sbx_id, sizeof(dl->sbx_id), "%s", hu_req_sbx(r)->id);
	dl->timer = evtimer_new(hu_req_daemon(r)->base, download_on_timeout, dl);
	if (!dl->timer || (hu_accepts_gzip(hu_req_header(r, "Accept-Encoding")) && hu_gzip_out_new(&dl->gzip, &err) < 0)) {
		hu_err_set(&err, ENOMEM, "download");
		download_reply_err(dl, 0, &err);
		return;
	}
	if (hu_initconn_open(hu_req_daemon(r)->base, hu_sbx_socket(hu_req_sbx(r)), download_on_frame, download_on_close, dl, &dl->conn,
			     &err) < 0) {
		hu_log(HU_LOG_WARN, hu_req_sbx(r)->id, r->id, "GET /files: %s", err.msg);
		hu_err_set(&err, 0, "the sandbox is not running");
		download_reply_err(dl, 502, &err);
		return;
	}
	dl->id = hu_initconn_next_id(dl->conn);
	if (hu_init_build_file(&b, HU_MSG_READ, dl->id, path, NULL, 0, transfer_user(r), &err) < 0 ||
	    hu_initconn_send(dl->conn, &b, &err) < 0) {
		hu_buf_free(&b);
		download_reply_err(dl, 0, &err);
		return;
	}
	hu_buf_free(&b);
	arm_timeout(dl->timer);
}

/* ---- POST /files: what to write ------------------------------------------------------- */

struct upload_file {
	char *path;     /* as the client named it; init resolves it */
	uint64_t begin; /* where its data starts in the request body */
	uint64_t len;
};

struct upload_plan {
	struct upload_file *files;
	size_t n, cap;
	const char *path_param; /* ?path=, or NULL */
	bool in_file_part;      /* the multipart part being parsed is a "file" */
};

static void plan_clear(struct upload_plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->files[i].path);
	free(p->files);
	memset(p, 0, sizeof(*p));
}

static int plan_add(struct upload_plan *p, const char *path, hu_err *err)
{
	if (p->n >= UPLOAD_MAX_FILES)
		return hu_err_set(err, -E2BIG, "more than %d files in one upload", UPLOAD_MAX_FILES);
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 4;
		struct upload_file *f = realloc(p->files, cap * sizeof(*f));
		if (!f)
			return hu_err_set(err, ENOMEM, "upload");
		p->files = f;
		p->cap = cap;
	}
	struct upload_file *f = &p->files[p->n];
	memset(f, 0, sizeof(*f));
	if (!(f->path = strdup(path)))
		return hu_err_set(err, ENOMEM, "upload");
	p->n++;
	return 0;
}

/* Parts named "file" are files (envd skips other form fields); the file's
 * path is its filename, kept whole, or the path parameter. */
static int plan_part_begin(void *arg, const struct hu_multipart_part *part, hu_err *err)
{
	struct upload_plan *p = arg;

	p->in_file_part = !strcmp(part->name, "file");
	if (!p->in_file_part)
		return 0;
	if (p->path_param && p->n > 0)
		return hu_err_set(err, -EINVAL, "the path parameter names one file, but the body holds several");
	const char *path = p->path_param ? p->path_param : part->filename;
	if (!part->has_filename && !p->path_param)
		return hu_err_set(err, -EINVAL, "file part %llu has no filename and there is no path parameter",
				  (unsigned long long)part->index);
	if (!*path)
		return hu_err_set(err, -EINVAL, "file part %llu has an empty filename", (unsigned long long)part->index);
	if (plan_add(p, path, err) < 0)
		return -1;
	p->files[p->n - 1].begin = part->data_offset;
	return 0;
}

static int plan_part_end(void *arg, uint64_t end, hu_err *err)
{
	struct upload_plan *p = arg;
	if (p->in_file_part)
		p->files[p->n - 1].len = end - p->files[p->n - 1].begin;
	return 0;
}

/* Feed the body to the parser chain by chain: evhttp's buffer is never
 * copied into one piece. */
static int feed_body(struct hu_multipart *mp, struct evbuffer *body, hu_err *err)
{
	struct evbuffer_ptr pos;
	struct evbuffer_iovec vec;

	if (evbuffer_ptr_set(body, &pos, 0, EVBUFFER_PTR_SET) < 0)
		return hu_err_set(err, EIO, "request body");
	while (evbuffer_peek(body, -1, &pos, &vec, 1) > 0 && vec.iov_len > 0) {
		if (hu_multipart_feed(mp, vec.iov_base, vec.iov_len, err) < 0)
			return -1;
		if (evbuffer_ptr_set(body, &pos, vec.iov_len, EVBUFFER_PTR_ADD) < 0)
			break; /* that was the last chain */
	}
	return 0;
}

static int plan_multipart(struct upload_plan *p, const char *content_type, struct evbuffer *body, hu_err *err)
{
	char boundary[HU_MULTIPART_MAX_BOUNDARY + 1];
	struct hu_multipart_cbs cbs = {.on_part_begin = plan_part_begin, .on_part_end = plan_part_end, .arg = p};
	struct hu_multipart *mp;

	if (hu_multipart_boundary(content_type, boundary, sizeof(boundary), err) < 0 ||
	    hu_multipart_new(boundary, &cbs, &mp, err) < 0)
		return -1;
	int rc = feed_body(mp, body, err);
	if (rc == 0)
		rc = hu_multipart_finish(mp, err);
	hu_multipart_free(mp);
	if (rc < 0) {
		hu_err_prefix(err, "multipart body");
		return -1;
	}
	if (p->n == 0)
		return hu_err_set(err, -EINVAL, "the multipart body has no part named \"file\"");
	return 0;
}

static bool media_type_is(const char *content_type, const char *type)
{
	size_t n = strlen(type);
	while (*content_type == ' ')
		content_type++;
	return !strncasecmp(content_type, type, n) &&
	       (content_type[n] == '\0' || content_type[n] == ';' || content_type[n] == ' ');
}

/* Decide the files of a POST /files from its headers and body. *gzip: the
 * single file's data is gzip-compressed. EINVAL: a bad request. */
static int plan_upload(struct hu_req *r, struct evbuffer *body, struct upload_plan *p, bool *gzip, hu_err *err)
{
	const char *ct = hu_req_header(r, "Content-Type");
	const char *enc = hu_req_header(r, "Content-Encoding");

	memset(p, 0, sizeof(*p));
	p->path_param = hu_req_query(r, "path");
	if (p->path_param && !*p->path_param)
		p->path_param = NULL;
	*gzip = enc && (!strcasecmp(enc, "gzip") || !strcasecmp(enc, "x-gzip"));
	if (enc && !*gzip && strcasecmp(enc, "identity"))
		return hu_err_set(err, -EINVAL, "Content-Encoding %.32s is not supported (gzip is)", enc);
	if (!ct)
		return hu_err_set(err, -EINVAL, "Content-Type is required: multipart/form-data or application/octet-stream");
	if (media_type_is(ct, "application/octet-stream")) {
		if (!p->path_param)
			return hu_err_set(err, -EINVAL, "the path query parameter is required for an application/octet-stream upload");
		if (plan_add(p, p->path_param, err) < 0)
			return -1;
		p->files[0].len = evbuffer_get_length(body);
		return 0;
	}
	if (!strncasecmp(ct, "multipart/", 10)) {
		if (*gzip)
			return hu_err_set(err, -EINVAL, "Content-Encoding gzip is supported with application/octet-stream only");
		return plan_multipart(p, ct, body, err);
	}
	return hu_err_set(err, -EINVAL, "Content-Type %.64s is not supported: multipart/form-data or application/octet-stream",
			  ct);
}

/* ---- POST /files: writing through init --------------------------------------------------- */

enum upload_phase {
	UP_OPENING, /* WRITE_OPEN sent, waiting for OK */
	UP_SENDING, /* data segments flowing */
	UP_CLOSING, /* WRITE_CLOSE sent, waiting for ENTRIES */
	UP_CLEANUP, /* bad input midway: the partial file is being removed */
};

struct upload {
	struct hu_req *r;
	char sbx_id[HU_ID_MAX]; /* for logs: the sandbox may be gone by then */
	struct hu_initconn *conn;
	struct event *timer; /* init made no progress for this long */
	struct upload_plan plan;
	size_t cur;          /* the file being written */
	enum upload_phase phase;
	uint32_t write_id;   /* WRITE_* of the current file */
	uint32_t cleanup_id; /* REMOVE of a partial file */
	unsigned in_flight;  /* segments not yet answered by a PONG */
	struct evbuffer *body; /* the request body, drained as it is sent */
	uint64_t body_pos;   /* body offset of the buffer's first byte */
	uint64_t left;       /* body bytes of the current file not yet taken */
	bool input_done;     /* the current file's data is all sent */
	bool gzip;
	z_stream z;
	bool z_ready;
	uint8_t *zin, *zout; /* gzip: compressed input, one inflated segment */
	uint64_t inflated, max_inflated;
	json_t *written;     /* the reply: [{path, name, type, metadata?}] */
	struct hu_meta_set meta; /* X-Metadata-* of the request, set on every file */
	int fail_status;     /* UP_CLEANUP: the reply once the file is removed */
	hu_err failure;
};

static void upload_free(struct upload *up)
{
	hu_initconn_free(up->conn); /* safe inside its callbacks */
	if (up->timer)
		event_free(up->timer);
	plan_clear(&up->plan);
	if (up->z_ready)
		inflateEnd(&up->z);
	free(up->zin);
	free(up->zout);
	json_decref(up->written);
	hu_meta_set_clear(&up->meta);
	free(up);
}

static void upload_reply_status(struct upload *up, int status, const hu_err *err)
{
	hu_reply_error(up->r, status, "%s", err->msg);
	upload_free(up);
}

/* An error from init: its errno picks the status (ENOSPC 507, ENOENT 404...). */
static void upload_fail(struct upload *up, const hu_err *err)
{
	hu_reply_err(up->r, err);
	upload_free(up);
}

static void upload_send(struct upload *up, struct hu_buf *b)
{
	hu_err err;
	int rc = b->len ? hu_initconn_send(up->conn, b, &err) : 0;
	hu_buf_free(b);
	if (rc < 0)
		upload_fail(up, &err);
}

/* The client's data was bad (gzip corrupt or too large) after part of the
 * file was written: close and remove it, then answer `status`. */
static void upload_reject_midway(struct upload *up, int status, const hu_err *err)
{
	struct hu_buf b = {0};
	hu_err e;

	up->failure = *err;
	up->fail_status = status;
	up->phase = UP_CLEANUP;
	up->cleanup_id = hu_initconn_next_id(up->conn);
	if (hu_init_build_simple(&b, HU_MSG_WRITE_CLOSE, up->write_id, &e) < 0 ||
	    hu_init_build_file(&b, HU_MSG_REMOVE, up->cleanup_id, up->plan.files[up->cur].path, NULL, 0,
			       transfer_user(up->r), &e) < 0) {
		hu_buf_free(&b);
		upload_reply_status(up, status, err);
		return;
	}
	upload_send(up, &b);
}

/* Drop the body bytes before the current file's next ones (multipart
 * headers, other parts): memory goes back as the upload proceeds. */
static void body_skip_to(struct upload *up, uint64_t offset)
{
	if (offset > up->body_pos) {
		evbuffer_drain(up->body, (size_t)(offset - up->body_pos));
		up->body_pos = offset;
	}
}

/* Up to n body bytes of the current file, as WRITE_DATA frames in b
 * straight from evhttp's chains, then dropped from the body. */
static int append_raw(struct upload *up, struct hu_buf *b, size_t n, hu_err *err)
{
	struct evbuffer_iovec vec[16];
	int nvec = evbuffer_peek(up->body, (ev_ssize_t)n, NULL, vec, 16);
	size_t taken = 0;

	for (int i = 0; i < nvec && i < 16 && taken < n; i++) {
		size_t len = vec[i].iov_len < n - taken ? vec[i].iov_len : n - taken;
		if (hu_init_build_write_data(b, up->write_id, vec[i].iov_base, len, err) < 0)
			return -1;
		taken += len;
	}
	evbuffer_drain(up->body, taken);
	up->body_pos += taken;
	up->left -= taken;
	return 0;
}

/* One inflated segment of the current file as WRITE_DATA frames in b. */
static int append_inflated(struct upload *up, struct hu_buf *b, hu_err *err)
{
	up->z.next_out = up->zout;
	up->z.avail_out = UPLOAD_SEGMENT;
	while (up->z.avail_out > 0) {
		if (up->z.avail_in == 0 && up->left > 0) {
			size_t want = up->left < UPLOAD_SEGMENT ? (size_t)up->left : UPLOAD_SEGMENT;
			int n = evbuffer_remove(up->body, up->zin, want);
			if (n <= 0)
				return hu_err_set(err, EIO, "request body");
			up->body_pos += (uint64_t)n;
			up->left -= (uint64_t)n;
			up->z.next_in = up->zin;
			up->z.avail_in = (uInt)n;
		}
		int zr = inflate(&up->z, Z_NO_FLUSH);
		if (zr == Z_STREAM_END) {
			if (up->z.avail_in == 0 && up->left == 0) {
				up->input_done = true;
				break;
			}
			inflateReset(&up->z); /* another gzip member follows */
			continue;
		}
		if (zr == Z_BUF_ERROR && up->z.avail_in == 0 && up->left == 0)
			return hu_err_set(err, -EINVAL, "the gzip body is truncated");
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return hu_err_set(err, -EINVAL, "the gzip body is corrupt: %s", up->z.msg ? up->z.msg : "inflate failed");
	}
	size_t len = UPLOAD_SEGMENT - up->z.avail_out;
	up->inflated += len;
	if (up->inflated > up->max_inflated)
		return hu_err_set(err, -EFBIG, "the decompressed body is larger than %llu bytes",
				  (unsigned long long)up->max_inflated);
	return len ? hu_init_build_write_data(b, up->write_id, up->zout, len, err) : 0;
}

/* The next segment of the current file as frames in b. */
static int append_segment(struct upload *up, struct hu_buf *b, hu_err *err)
{
	if (up->gzip)
		return append_inflated(up, b, err);
	int rc = append_raw(up, b, up->left < UPLOAD_SEGMENT ? (size_t)up->left : UPLOAD_SEGMENT, err);
	up->input_done = up->left == 0;
	return rc;
}

/* Send segments while the window has room; close the file after its last. */
static void upload_pump(struct upload *up)
{
	struct hu_buf b = {0};
	hu_err err;

	while (up->phase == UP_SENDING && !up->input_done && up->in_flight < UPLOAD_WINDOW) {
		if (append_segment(up, &b, &err) < 0) {
			hu_buf_free(&b);
			if (err.code == EINVAL || err.code == EFBIG)
				upload_reject_midway(up, err.code == EFBIG ? 413 : 400, &err);
			else
				upload_fail(up, &err);
			return;
		}
		if (hu_init_build_simple(&b, HU_MSG_PING, hu_initconn_next_id(up->conn), &err) < 0) {
			hu_buf_free(&b);
			upload_fail(up, &err);
			return;
		}
		up->in_flight++;
		/* Sent per segment: b never holds more than one. */
		if (hu_initconn_send(up->conn, &b, &err) < 0) {
			hu_buf_free(&b);
			upload_fail(up, &err);
			return;
		}
		hu_buf_reset(&b);
	}
	if (up->phase == UP_SENDING && up->input_done) {
		/* init writes in order: no need to wait for the PONGs. */
		up->phase = UP_CLOSING;
		if (hu_init_build_simple(&b, HU_MSG_WRITE_CLOSE, up->write_id, &err) < 0) {
			hu_buf_free(&b);
			upload_fail(up, &err);
			return;
		}
	}
	upload_send(up, &b);
}

/* Open the next file, or answer when all are written. */
static void upload_next_file(struct upload *up)
{
	struct hu_buf b = {0};
	hu_err err;

	if (up->cur == up->plan.n) {
		hu_log(HU_LOG_DEBUG, up->sbx_id, up->r->id, "POST /files: %zu file(s) written", up->plan.n);
		hu_reply_json(up->r, 200, up->written);
		up->written = NULL;
		upload_free(up);
		return;
	}
	struct upload_file *f = &up->plan.files[up->cur];
	up->phase = UP_OPENING;
	up->input_done = false;
	up->write_id = hu_initconn_next_id(up->conn);
	body_skip_to(up, f->begin);
	up->left = f->len;
	if (hu_init_build_write_open(&b, up->write_id, f->path, transfer_user(up->r), (const char *const *)up->meta.kv,
				     up->meta.n, &err) < 0) {
		hu_buf_free(&b);
		upload_fail(up, &err);
		return;
	}
	upload_send(up, &b);
}

static void upload_file_written(struct upload *up, const uint8_t *payload, size_t len)
{
	json_t *entry;
	hu_err err;

	if (hu_fs_first_entry(payload, len, &entry, &err) < 0) {
		upload_fail(up, &err);
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
		upload_fail(up, &err);
		return;
	}
	up->cur++;
	upload_next_file(up);
}

static void upload_on_frame(struct hu_initconn *c, const struct hu_frame_hdr *hdr, const uint8_t *payload, void *arg)
{
	struct upload *up = arg;
	hu_err err;

	arm_timeout(up->timer); /* init is alive and moving */
	if (up->phase == UP_CLEANUP) {
		if (hdr->id == up->cleanup_id && (hdr->type == HU_MSG_OK || hdr->type == HU_MSG_ERROR))
			upload_reply_status(up, up->fail_status, &up->failure);
		return;
	}
	if (hdr->type == HU_MSG_PONG) {
		if (up->in_flight > 0)
			up->in_flight--;
		upload_pump(up);
		return;
	}
	if (hdr->id != up->write_id)
		return;
	switch (hdr->type) {
	case HU_MSG_ERROR: /* open, a write or close failed: the upload stops here */
		hu_init_parse_error(payload, hdr->len, &err);
		upload_fail(up, &err);
		break;
	case HU_MSG_OK:
		if (up->phase == UP_OPENING) {
			up->phase = UP_SENDING;
			upload_pump(up);
		}
		break;
	case HU_MSG_ENTRIES:
		if (up->phase == UP_CLOSING)
			upload_file_written(up, payload, hdr->len);
		break;
	default:
		break;
	}
}

static void upload_on_close(struct hu_initconn *c, const hu_err *why, void *arg)
{
	struct upload *up = arg;
	hu_err err;
	up->r->target = NULL; /* see download_on_close */
	hu_err_set(&err, -ECONNRESET, "the sandbox is not running any more");
	upload_reply_status(up, 502, &err);
}

static void upload_on_timeout(evutil_socket_t fd, short what, void *arg)
{
	hu_err err;
	hu_err_set(&err, -ETIMEDOUT, "the sandbox did not answer in time");
	upload_reply_status(arg, 504, &err);
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
	snprintf(up->sbx_id, sizeof(up->sbx_id), "%s", hu_req_sbx(r)->id);
	/* The body is read in place (hu_req_body would copy it into one piece)
	 * and drained as it goes to init. */
	up->body = evhttp_request_get_input_buffer(r->ev);
	if (hu_meta_set_from_headers(&up->meta, evhttp_request_get_input_headers(r->ev), &err) < 0 ||
	    plan_upload(r, up->body, &up->plan, &up->gzip, &err) < 0) {
		upload_reply_status(up, err.code == ENOMEM ? 503 : 400, &err);
		return;
	}
	up->max_inflated = hu_req_daemon(r)->cfg.max_body_bytes;
	up->timer = evtimer_new(hu_req_daemon(r)->base, upload_on_timeout, up);
	up->written = json_array();
	if (!up->timer || !up->written ||
	    (up->gzip && (!(up->zin = malloc(UPLOAD_SEGMENT)) || !(up->zout = malloc(UPLOAD_SEGMENT)) ||
			  inflateInit2(&up->z, 16 + MAX_WBITS) != Z_OK))) {
		hu_err_set(&err, ENOMEM, "upload");
		upload_reply_status(up, 503, &err);
		return;
	}
	up->z_ready = up->gzip;
	if (hu_initconn_open(hu_req_daemon(r)->base, hu_sbx_socket(hu_req_sbx(r)), upload_on_frame, upload_on_close, up, &up->conn,
			     &err) < 0) {
		hu_log(HU_LOG_WARN, hu_req_sbx(r)->id, r->id, "POST /files: %s", err.msg);
		hu_err_set(&err, -ECONNREFUSED, "the sandbox is not running");
		upload_reply_status(up, 502, &err);
		return;
	}
	arm_timeout(up->timer);
	upload_next_file(up);
}
