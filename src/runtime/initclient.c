#include "runtime/initclient.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/fileutil.h"

int hu_init_connect(const char *sock_path, int *fd, hu_err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (strlen(sock_path) >= sizeof(sa.sun_path))
		return hu_err_set(err, ENAMETOOLONG, "init socket path %s", sock_path);
	strcpy(sa.sun_path, sock_path);
	_cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return hu_err_sys(err, "socket");
	while (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EINTR)
			return hu_err_sys(err, "connect to init at %s", sock_path);
	}
	*fd = hu_take_fd(&s);
	return 0;
}

int hu_init_set_timeout(int fd, unsigned timeout_ms, hu_err *err)
{
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return hu_err_sys(err, "set receive timeout");
	return 0;
}

int hu_init_send(int fd, const struct hu_buf *b, hu_err *err)
{
	if (b->oom)
		return hu_err_set(err, ENOMEM, "encode request");
	size_t off = 0;
	while (off < b->len) {
		/* send with MSG_NOSIGNAL: a dead init is an error, not a SIGPIPE. */
		ssize_t n = send(fd, b->data + off, b->len - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return hu_err_sys(err, "send to init");
		}
		off += (size_t)n;
	}
	return 0;
}

/* Read exactly n bytes. 0 = done, -1 = error or EOF (err set). */
static int read_exact(int fd, void *buf, size_t n, bool at_frame_start, hu_err *err)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return hu_err_set(err, ETIMEDOUT, "no reply from init in time");
			return hu_err_sys(err, "read from init");
		}
		if (r == 0)
			return hu_err_set(err, ECONNRESET, at_frame_start && got == 0 ? "init closed the connection"
										: "init closed the connection mid-frame");
		got += (size_t)r;
	}
	return 0;
}

int hu_init_recv(int fd, struct hu_frame_hdr *hdr, uint8_t **payload, hu_err *err)
{
	uint8_t h[HU_PROTO_HEADER_SIZE];

	*payload = NULL;
	if (read_exact(fd, h, sizeof(h), true, err) < 0 || hu_frame_parse_hdr(h, sizeof(h), hdr, err) < 0)
		return -1;
	uint8_t *p = malloc(hdr->len ? hdr->len : 1);
	if (!p)
		return hu_err_set(err, ENOMEM, "frame of %u bytes", hdr->len);
	if (read_exact(fd, p, hdr->len, false, err) < 0 || hu_payload_validate(p, hdr->len, err) < 0) {
		free(p);
		return -1;
	}
	*payload = p;
	return 0;
}

int hu_init_parse_error(const uint8_t *payload, size_t len, hu_err *err)
{
	struct hu_field_iter it;
	struct hu_field f;
	uint32_t code = EIO;
	const uint8_t *msg = NULL;
	size_t msg_len = 0;
	hu_err ignored;

	hu_fields_init(&it, payload, len);
	while (hu_fields_next(&it, &f, &ignored) > 0) {
		if (f.tag == HU_F_ERRNO)
			hu_field_u32(&f, &code, &ignored);
		else if (f.tag == HU_F_MESSAGE) {
			msg = f.val;
			msg_len = f.len;
		}
	}
	if (code == 0 || code > 4095)
		code = EIO;
	/* The message already carries init's context and strerror text. */
	if (msg)
		hu_err_set(err, 0, "%.*s", (int)(msg_len < HU_ERR_MSG_MAX ? msg_len : HU_ERR_MSG_MAX - 1), (const char *)msg);
	else
		hu_err_set(err, 0, "init: %s", strerror((int)code));
	err->code = (int)code;
	return -1;
}

/* ---- builders ----------------------------------------------------------------- */

static int finish(struct hu_buf *b, size_t off, const char *what, hu_err *err)
{
	if (hu_frame_end(b, off) < 0)
		return hu_err_set(err, b->oom ? ENOMEM : E2BIG, "encode %s", what);
	return 0;
}

int hu_init_build_spawn(struct hu_buf *b, uint32_t id, const struct hu_spawn_req *req, hu_err *err)
{
	if (req->argc == 0)
		return hu_err_set(err, EINVAL, "spawn needs argv[0]");
	size_t off = hu_frame_begin(b, HU_MSG_SPAWN, id);
	for (size_t i = 0; i < req->argc; i++)
		hu_put_str(b, HU_F_ARG, req->argv[i]);
	for (size_t i = 0; i < req->envc; i++)
		hu_put_str(b, HU_F_ENV, req->envv[i]);
	if (req->cwd)
		hu_put_str(b, HU_F_CWD, req->cwd);
	if (req->user)
		hu_put_str(b, HU_F_USER, req->user);
	if (req->tag)
		hu_put_str(b, HU_F_TAG, req->tag);
	if (req->pty) {
		hu_put_u16(b, HU_F_PTY_ROWS, req->pty_rows ? req->pty_rows : 24);
		hu_put_u16(b, HU_F_PTY_COLS, req->pty_cols ? req->pty_cols : 80);
	}
	if (req->stdin_open)
		hu_put_u8(b, HU_F_STDIN, 1);
	return finish(b, off, "spawn", err);
}

/* Frames of (PID?, DATA) chunks; WRITE_DATA has no PID (pid 0). */
static int build_chunks(struct hu_buf *b, uint8_t type, uint32_t id, uint32_t pid, const void *data, size_t len,
			hu_err *err)
{
	const uint8_t *p = data;
	do {
		size_t n = len < HU_PROTO_CHUNK ? len : HU_PROTO_CHUNK;
		size_t off = hu_frame_begin(b, type, id);
		if (pid)
			hu_put_u32(b, HU_F_PID, pid);
		hu_put_bytes(b, HU_F_DATA, p, n);
		if (finish(b, off, "data", err) < 0)
			return -1;
		p += n;
		len -= n;
	} while (len > 0);
	return 0;
}

int hu_init_build_stdin(struct hu_buf *b, uint32_t id, uint32_t pid, const void *data, size_t len, hu_err *err)
{
	return build_chunks(b, HU_MSG_STDIN, id, pid, data, len, err);
}

int hu_init_build_write_data(struct hu_buf *b, uint32_t id, const void *data, size_t len, hu_err *err)
{
	return build_chunks(b, HU_MSG_WRITE_DATA, id, 0, data, len, err);
}

int hu_init_build_close_stdin(struct hu_buf *b, uint32_t id, uint32_t pid, hu_err *err)
{
	size_t off = hu_frame_begin(b, HU_MSG_CLOSE_STDIN, id);
	hu_put_u32(b, HU_F_PID, pid);
	return finish(b, off, "close stdin", err);
}

int hu_init_build_signal(struct hu_buf *b, uint32_t id, uint32_t pid, int signum, hu_err *err)
{
	size_t off = hu_frame_begin(b, HU_MSG_SIGNAL, id);
	hu_put_u32(b, HU_F_PID, pid);
	hu_put_u32(b, HU_F_SIGNUM, (uint32_t)signum);
	return finish(b, off, "signal", err);
}

int hu_init_build_resize(struct hu_buf *b, uint32_t id, uint32_t pid, uint16_t rows, uint16_t cols, hu_err *err)
{
	size_t off = hu_frame_begin(b, HU_MSG_RESIZE, id);
	hu_put_u32(b, HU_F_PID, pid);
	hu_put_u16(b, HU_F_PTY_ROWS, rows);
	hu_put_u16(b, HU_F_PTY_COLS, cols);
	return finish(b, off, "resize", err);
}

int hu_init_build_attach(struct hu_buf *b, uint32_t id, uint32_t pid, const char *tag, hu_err *err)
{
	size_t off = hu_frame_begin(b, HU_MSG_ATTACH, id);
	if (pid)
		hu_put_u32(b, HU_F_PID, pid);
	if (tag)
		hu_put_str(b, HU_F_TAG, tag);
	return finish(b, off, "attach", err);
}

int hu_init_build_simple(struct hu_buf *b, uint8_t type, uint32_t id, hu_err *err)
{
	size_t off = hu_frame_begin(b, type, id);
	return finish(b, off, "request", err);
}

int hu_init_build_file(struct hu_buf *b, uint8_t type, uint32_t id, const char *path, const char *dest,
		       uint32_t depth, const char *user, hu_err *err)
{
	size_t off = hu_frame_begin(b, type, id);
	hu_put_str(b, HU_F_PATH, path);
	if (dest)
		hu_put_str(b, HU_F_DEST, dest);
	if (depth)
		hu_put_u32(b, HU_F_DEPTH, depth);
	if (user)
		hu_put_str(b, HU_F_USER, user);
	return finish(b, off, "file request", err);
}

int hu_init_build_write_open(struct hu_buf *b, uint32_t id, const char *path, const char *user,
			     const char *const *meta, size_t nmeta, hu_err *err)
{
	size_t off = hu_frame_begin(b, HU_MSG_WRITE_OPEN, id);
	hu_put_str(b, HU_F_PATH, path);
	if (user)
		hu_put_str(b, HU_F_USER, user);
	for (size_t i = 0; i < nmeta; i++)
		hu_put_str(b, HU_F_META, meta[i]);
	return finish(b, off, "write request", err);
}

int hu_init_build_watch(struct hu_buf *b, uint32_t id, const char *path, uint32_t depth, const char *user,
			bool with_entry, hu_err *err)
{
	size_t off = hu_frame_begin(b, HU_MSG_WATCH_START, id);
	hu_put_str(b, HU_F_PATH, path);
	hu_put_u32(b, HU_F_DEPTH, depth);
	if (user)
		hu_put_str(b, HU_F_USER, user);
	if (with_entry)
		hu_put_u8(b, HU_F_WITH_ENTRY, 1);
	return finish(b, off, "watch request", err);
}

/* ---- events ----------------------------------------------------------------------- */

int hu_init_parse_event(const struct hu_frame_hdr *hdr, const uint8_t *payload, struct hu_init_event *ev, hu_err *err)
{
	struct hu_field_iter it;
	struct hu_field f;
	uint8_t more = 0;
	int r;

	memset(ev, 0, sizeof(*ev));
	ev->type = hdr->type;
	ev->id = hdr->id;
	hu_fields_init(&it, payload, hdr->len);
	while ((r = hu_fields_next(&it, &f, err)) > 0) {
		switch (f.tag) {
		case HU_F_PID:
			r = hu_field_u32(&f, &ev->pid, err);
			break;
		case HU_F_STREAM:
			r = hu_field_u8(&f, &ev->stream, err);
			break;
		case HU_F_DATA:
			ev->data = f.val;
			ev->data_len = f.len;
			break;
		case HU_F_EXIT_CODE:
			ev->exited = true;
			r = hu_field_i32(&f, &ev->exit_code, err);
			break;
		case HU_F_SIGNUM:
			ev->exited = hdr->type == HU_MSG_EXIT;
			r = hu_field_u32(&f, &ev->signum, err);
			break;
		case HU_F_SIZE:
			r = hu_field_u64(&f, &ev->size, err);
			break;
		case HU_F_MORE:
			r = hu_field_u8(&f, &more, err);
			ev->more = more != 0;
			break;
		default:
			break;
		}
		if (r < 0)
			return -1;
	}
	return r;
}
