#include "init/request.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "util/filemeta.h"

#define DEFAULT_ROWS 24
#define DEFAULT_COLS 80

/* Which fields a request type must carry. */
enum need { NEED_ARG = 1, NEED_PID = 2, NEED_PID_OR_TAG = 4, NEED_PATH = 8, NEED_DEST = 16, NEED_SIGNUM = 32, NEED_SIZE = 64, NEED_PORT = 128 };

static int needs_of(uint8_t type, unsigned *need)
{
	switch (type) {
	case HU_MSG_PING:
	case HU_MSG_LIST_PROCS:
	case HU_MSG_WRITE_DATA:
	case HU_MSG_WRITE_CLOSE:
		*need = 0;
		return 0;
	case HU_MSG_SPAWN:
		*need = NEED_ARG;
		return 0;
	case HU_MSG_ATTACH:
		*need = NEED_PID_OR_TAG;
		return 0;
	case HU_MSG_STDIN:
	case HU_MSG_CLOSE_STDIN:
		*need = NEED_PID;
		return 0;
	case HU_MSG_SIGNAL:
		*need = NEED_PID | NEED_SIGNUM;
		return 0;
	case HU_MSG_RESIZE:
		*need = NEED_PID | NEED_SIZE;
		return 0;
	case HU_MSG_STAT:
	case HU_MSG_LIST_DIR:
	case HU_MSG_MKDIR:
	case HU_MSG_REMOVE:
	case HU_MSG_READ:
	case HU_MSG_WRITE_OPEN:
	case HU_MSG_WATCH_START:
		*need = NEED_PATH;
		return 0;
	case HU_MSG_MOVE:
		*need = NEED_PATH | NEED_DEST;
		return 0;
	case HU_MSG_PORT_CONNECT:
		*need = NEED_PORT;
		return 0;
	default:
		return -1;
	}
}

/* A string that must appear at most once, bounded in size. */
static int take_str(const struct hu_field *f, char **slot, size_t max, const char *what, hu_err *err)
{
	if (*slot)
		return hu_err_set(err, EINVAL, "duplicate %s field", what);
	if (f->len > max)
		return hu_err_set(err, EINVAL, "%s longer than %zu bytes", what, max);
	if (hu_field_strdup(f, slot, err) < 0)
		return -1;
	return 0;
}

/* Append a string to a NULL-terminated vector, bounded in count and size. */
static int push_str(const struct hu_field *f, char ***vec, size_t *count, const char *what, hu_err *err)
{
	if (*count >= HU_REQ_MAX_LIST)
		return hu_err_set(err, E2BIG, "more than %d %s fields", HU_REQ_MAX_LIST, what);
	if (f->len > HU_REQ_MAX_STR)
		return hu_err_set(err, E2BIG, "%s longer than %d bytes", what, HU_REQ_MAX_STR);
	/* Grow by doubling; +2 keeps room for the new entry and the NULL. */
	size_t n = *count;
	if ((n & (n + 1)) == 0) {
		char **v = realloc(*vec, (2 * n + 2) * sizeof(char *));
		if (!v)
			return hu_err_set(err, ENOMEM, "%s list", what);
		*vec = v;
	}
	if (hu_field_strdup(f, &(*vec)[n], err) < 0) {
		(*vec)[n] = NULL;
		return -1;
	}
	(*vec)[n + 1] = NULL;
	*count = n + 1;
	return 0;
}

static int decode_field(struct hu_request *req, const struct hu_field *f, hu_err *err)
{
	uint8_t u8;
	uint32_t u32;

	switch (f->tag) {
	case HU_F_ARG:
		return push_str(f, &req->argv, &req->argc, "ARG", err);
	case HU_F_ENV:
		if (push_str(f, &req->envv, &req->envc, "ENV", err) < 0)
			return -1;
		const char *kv = req->envv[req->envc - 1];
		if (kv[0] == '=' || !strchr(kv, '='))
			return hu_err_set(err, EINVAL, "ENV entry is not KEY=VALUE");
		return 0;
	case HU_F_META: {
		const char *value;
		size_t klen;
		if (req->metac >= HU_META_MAX_PAIRS)
			return hu_err_set(err, E2BIG, "more than %d META fields", HU_META_MAX_PAIRS);
		if (push_str(f, &req->metav, &req->metac, "META", err) < 0)
			return -1;
		return hu_meta_split(req->metav[req->metac - 1], &value, &klen, err);
	}
	case HU_F_CWD:
		return take_str(f, &req->cwd, HU_REQ_MAX_PATH, "CWD", err);
	case HU_F_PATH:
		return take_str(f, &req->path, HU_REQ_MAX_PATH, "PATH", err);
	case HU_F_DEST:
		return take_str(f, &req->dest, HU_REQ_MAX_PATH, "DEST", err);
	case HU_F_TAG:
		return take_str(f, &req->tag, HU_REQ_MAX_NAME, "TAG", err);
	case HU_F_USER:
		if (take_str(f, &req->user, HU_REQ_MAX_NAME, "USER", err) < 0)
			return -1;
		if (strcmp(req->user, "root") && strcmp(req->user, "user"))
			return hu_err_set(err, EINVAL, "unknown USER (expected \"root\" or \"user\")");
		return 0;
	case HU_F_PTY_ROWS:
		req->pty = true;
		return hu_field_u16(f, &req->rows, err);
	case HU_F_PTY_COLS:
		req->pty = true;
		return hu_field_u16(f, &req->cols, err);
	case HU_F_STDIN:
		if (hu_field_u8(f, &u8, err) < 0)
			return -1;
		req->stdin_open = u8 == 1;
		return 0;
	case HU_F_WITH_ENTRY:
		if (hu_field_u8(f, &u8, err) < 0)
			return -1;
		req->with_entry = u8 == 1;
		return 0;
	case HU_F_PID:
		if (hu_field_u32(f, &u32, err) < 0)
			return -1;
		if (u32 == 0 || u32 > INT32_MAX)
			return hu_err_set(err, EINVAL, "PID %u out of range", u32);
		req->has_pid = true;
		req->pid = u32;
		return 0;
	case HU_F_SIGNUM:
		if (hu_field_u32(f, &u32, err) < 0)
			return -1;
		if (u32 == 0 || u32 >= (uint32_t)SIGRTMAX + 1)
			return hu_err_set(err, EINVAL, "SIGNUM %u out of range", u32);
		req->signum = (int)u32;
		return 0;
	case HU_F_DEPTH:
		if (hu_field_u32(f, &u32, err) < 0)
			return -1;
		if (u32 > HU_REQ_MAX_DEPTH)
			return hu_err_set(err, EINVAL, "DEPTH %u over the limit of %d", u32, HU_REQ_MAX_DEPTH);
		req->depth = u32;
		return 0;
	case HU_F_PORT:
		if (hu_field_u16(f, &req->port, err) < 0)
			return -1;
		if (req->port == 0)
			return hu_err_set(err, EINVAL, "PORT 0");
		return 0;
	case HU_F_DATA:
		if (req->data)
			return hu_err_set(err, EINVAL, "duplicate DATA field");
		req->data = f->val;
		req->data_len = f->len;
		return 0;
	default:
		return 0; /* a reply-only or unknown field: skipped, the protocol may grow */
	}
}

static int check_needs(const struct hu_request *req, unsigned need, hu_err *err)
{
	if ((need & NEED_ARG) && (req->argc == 0 || req->argv[0][0] == '\0'))
		return hu_err_set(err, EINVAL, "SPAWN needs a non-empty ARG");
	if ((need & NEED_PID) && !req->has_pid)
		return hu_err_set(err, EINVAL, "request needs a PID");
	if ((need & NEED_PID_OR_TAG) && !req->has_pid && !req->tag)
		return hu_err_set(err, EINVAL, "request needs a PID or a TAG");
	if ((need & NEED_PATH) && (!req->path || !req->path[0]))
		return hu_err_set(err, EINVAL, "request needs a non-empty PATH");
	if ((need & NEED_DEST) && (!req->dest || !req->dest[0]))
		return hu_err_set(err, EINVAL, "request needs a non-empty DEST");
	if ((need & NEED_SIGNUM) && req->signum == 0)
		return hu_err_set(err, EINVAL, "request needs a SIGNUM");
	if ((need & NEED_PORT) && req->port == 0)
		return hu_err_set(err, EINVAL, "PORT_CONNECT needs a PORT");
	if ((need & NEED_SIZE) && (req->rows == 0 || req->cols == 0))
		return hu_err_set(err, EINVAL, "request needs non-zero PTY_ROWS and PTY_COLS");
	return 0;
}

int hu_request_decode(const struct hu_frame_hdr *hdr, const uint8_t *payload, struct hu_request *req, hu_err *err)
{
	struct hu_field_iter it;
	struct hu_field f;
	unsigned need;
	int r;

	memset(req, 0, sizeof(*req));
	req->type = hdr->type;
	req->id = hdr->id;
	if (needs_of(hdr->type, &need) < 0)
		return hu_err_set(err, EOPNOTSUPP, "unknown request type %u", hdr->type);
	if (hu_payload_validate(payload, hdr->len, err) < 0)
		return -1;

	hu_fields_init(&it, payload, hdr->len);
	while ((r = hu_fields_next(&it, &f, err)) > 0)
		if (decode_field(req, &f, err) < 0)
			goto fail;
	if (r < 0 || check_needs(req, need, err) < 0)
		goto fail;
	if (req->type == HU_MSG_SPAWN && req->pty) {
		if (!req->rows)
			req->rows = DEFAULT_ROWS;
		if (!req->cols)
			req->cols = DEFAULT_COLS;
	}
	if ((req->type == HU_MSG_LIST_DIR || req->type == HU_MSG_WATCH_START) && req->depth == 0)
		req->depth = 1;
	return 0;
fail:
	hu_request_free(req);
	return -1;
}

static void free_vec(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

void hu_request_free(struct hu_request *req)
{
	free_vec(req->argv);
	free_vec(req->envv);
	free_vec(req->metav);
	free(req->cwd);
	free(req->user);
	free(req->tag);
	free(req->path);
	free(req->dest);
	memset(req, 0, sizeof(*req));
}
