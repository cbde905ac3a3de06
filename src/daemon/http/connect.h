/*
 * The Connect protocol (connectrpc.com), JSON codec, as envd speaks it:
 * unary calls (application/json in and out) and server streams
 * (application/connect+json: one request envelope in, envelopes out, closed
 * by an end-stream envelope). An envelope is 1 byte of flags + a 4-byte big
 * endian length + the JSON message. Compressed envelopes (flag 0x01) are
 * rejected: hutch never negotiates compression.
 */
#ifndef HUTCH_DAEMON_CONNECT_H
#define HUTCH_DAEMON_CONNECT_H

#include <event2/buffer.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include "daemon/http/request.h"

#define HU_CONNECT_FLAG_COMPRESSED 0x01
#define HU_CONNECT_FLAG_END 0x02
#define HU_CONNECT_MAX_MESSAGE (16u << 20)

/* Parse exactly one request envelope from a stream request body into a
 * JSON object. -1 with err (EINVAL/EPROTO) on anything else. */
int hu_connect_parse_envelope(const uint8_t *body, size_t len, json_t **msg, hu_err *err);

/* The Connect error code for an errno ("not_found" for ENOENT, ...). */
const char *hu_connect_code_for_errno(int code);
/* The HTTP status Connect assigns to a code (unary errors). */
int hu_connect_http_status(const char *code);

/* Unary replies (data plane). */
void hu_connect_reply(struct hu_req *r, json_t *msg);     /* 200 application/json, msg stolen */
void hu_connect_error(struct hu_req *r, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void hu_connect_error_err(struct hu_req *r, const hu_err *err);
/* The request message of a unary call: the body as a JSON object. Replies
 * invalid_argument and returns -1 when it is not one. */
int hu_connect_unary_request(struct hu_req *r, json_t **msg);

/* A server stream in flight. Created from a request, it sends the response
 * headers at once (so client disconnects are seen), then messages, then the
 * end-stream envelope. Flow control: when the client's socket buffer is
 * over HU_STREAM_HIGH_WATER, on_pause is called; once drained, on_resume.
 * If the client goes away, on_gone is called and the stream is then freed
 * by the stream itself after hu_stream_end(). */
#define HU_STREAM_HIGH_WATER (256u * 1024u)

struct hu_stream;
struct hu_stream_cbs {
	void (*on_pause)(void *arg);
	void (*on_resume)(void *arg);
	void (*on_gone)(void *arg); /* the client disconnected */
	void *arg;
};

/* Start the stream reply (200, application/connect+json). The request is
 * owned by the stream from here on. NULL only when out of memory: an error
 * was answered then. The callbacks may call hu_stream_end. */
struct hu_stream *hu_stream_start(struct hu_req *r, const struct hu_stream_cbs *cbs);
/* Send one message envelope (msg stolen). Returns 1 if the caller should
 * pause its producer now (buffer over the high-water mark), 0 otherwise,
 * -1 if the client is gone. */
int hu_stream_send(struct hu_stream *s, json_t *msg);
/* End the stream: the end-stream envelope ({} or {"error":{code,message}}),
 * then the HTTP chunked terminator. The stream is the caller's no more, as
 * after hu_stream_finish. err_code NULL = ok. */
void hu_stream_end(struct hu_stream *s, const char *err_code, const char *err_message);

/* The same stream for raw bytes (GET /files): a chunked 200 of
 * `content_type` with the same flow control, close detection and timeouts,
 * pausing above `high_water` bytes of unsent output. NULL when out of memory
 * (nothing was answered then). */
struct hu_stream *hu_stream_start_raw(struct hu_req *r, const char *content_type, size_t high_water,
				      const struct hu_stream_cbs *cbs);
/* A raw stream with the status (and reason, NULL: the standard one) and
 * the headers the caller added (hu_reply_header): no Content-Type of its
 * own, and chunked unless a Content-Length was added (the port ingress). */
struct hu_stream *hu_stream_start_status(struct hu_req *r, int status, const char *reason, size_t high_water,
					 const struct hu_stream_cbs *cbs);
/* As hu_stream_send, for bytes. */
int hu_stream_send_bytes(struct hu_stream *s, const void *data, size_t len);
/* As hu_stream_send_bytes, for the first `len` bytes of `src` (at least
 * that many), moved out of it rather than copied where it can. */
int hu_stream_send_buffer(struct hu_stream *s, struct evbuffer *src, size_t len);
/* For a body written to the client around evhttp (splice.h): the client's
 * socket, with the connection's bufferevent no longer writing to it. What
 * evhttp queued before (the head, body bytes sent so far) is in *queued and
 * must go out first; *write_tv is the stream's write timeout. -1 when the
 * connection cannot be written around evhttp (TLS, the client gone). The
 * stream ends as usual: hu_stream_finish once every byte went out (nothing
 * may be left in *queued then), else hu_stream_abort. */
int hu_stream_bypass(struct hu_stream *s, struct evbuffer **queued, struct timeval *write_tv);
/* Give the writes back to evhttp after hu_stream_bypass, nothing written
 * around it (the caller could not go on that way). */
void hu_stream_bypass_end(struct hu_stream *s);
/* Count `len` body bytes written around the stream (hu_stream_bypass). */
void hu_stream_bypassed(struct hu_stream *s, uint64_t len);
/* End a raw stream: the body is complete. The stream is the caller's no
 * more (it calls nothing back); it frees itself, with the request, once
 * the connection has written the reply's last bytes or the client left. */
void hu_stream_finish(struct hu_stream *s);
/* End a raw stream by cutting the connection, so that the client sees a
 * truncated body rather than a short one that looks complete. Frees it. */
void hu_stream_abort(struct hu_stream *s, const char *why);

#endif
