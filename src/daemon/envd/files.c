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
 * Uploads (POST /files) are in files_upload.c.
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

#include "daemon/http/connect.h"
#include "daemon/envd/fs_json.h"
#include "daemon/http/gzip_out.h"
#include "daemon/envd/meta_headers.h"
#include "daemon/sandboxes/initconn.h"
#include "daemon/sandboxes/registry.h"
#include "daemon/envd/handlers.h"
#include "runtime/initclient.h"

/* init silent this long while we wait for it: the sandbox is frozen or stuck. */
#define FILES_TIMEOUT_MS 30000
#define DOWNLOAD_HIGH_WATER (1u << 20)

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
