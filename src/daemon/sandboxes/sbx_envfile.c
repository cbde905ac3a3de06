/* The sandbox's environment written into it for a warm pool take (sbx_envfile.h). */
#include "daemon/sandboxes/sbx_envfile.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/initconn.h"
#include "daemon/sandboxes/registry.h"
#include "runtime/initclient.h"

struct envfile {
	struct hu_initconn *conn;
	struct event *timeout;
	uint32_t id;
	hu_sbx_envfile_fn done;
	void *arg;
};

static void finish(struct envfile *w, const hu_err *err)
{
	hu_sbx_envfile_fn done = w->done;
	void *arg = w->arg;

	hu_initconn_free(w->conn); /* safe inside its callbacks */
	event_free(w->timeout);
	free(w);
	done(arg, err);
}

static void on_frame(struct hu_initconn *c, const struct hu_frame_hdr *hdr, const uint8_t *payload, void *arg)
{
	struct envfile *w = arg;
	hu_err err;

	if (hdr->id != w->id)
		return;
	if (hdr->type == HU_MSG_ERROR) {
		hu_init_parse_error(payload, hdr->len, &err);
		hu_err_prefix(&err, "write %s", HU_SBX_ENV_FILE);
		finish(w, &err);
	} else if (hdr->type == HU_MSG_ENTRIES) { /* the answer to WRITE_CLOSE: written */
		finish(w, NULL);
	}
}

static void on_close(struct hu_initconn *c, const hu_err *why, void *arg)
{
	hu_err err;
	hu_err_set(&err, -ECONNRESET, "write %s: the sandbox's init went away", HU_SBX_ENV_FILE);
	finish(arg, &err);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	hu_err err;
	hu_err_set(&err, -ETIMEDOUT, "write %s: the sandbox's init did not answer within %d ms", HU_SBX_ENV_FILE,
		   HU_SBX_ENV_TIMEOUT_MS);
	finish(arg, &err);
}

int hu_sbx_envfile_write(struct hu_daemon *d, const struct hu_sbx *s, hu_sbx_envfile_fn done, void *arg, hu_err *err)
{
	struct hu_buf b = {0};
	struct envfile *w = calloc(1, sizeof(*w));
	char *json = json_dumps(s->env_vars, JSON_COMPACT);
	int rc = -1;

	if (!w || !json) {
		hu_err_set(err, ENOMEM, "the sandbox's envs");
		goto out;
	}
	*w = (struct envfile){.done = done, .arg = arg};
	w->timeout = evtimer_new(d->base, on_timeout, w);
	if (!w->timeout) {
		hu_err_set(err, ENOMEM, "the sandbox's envs");
		goto out;
	}
	if (hu_initconn_open(d->base, hu_sbx_socket(s), on_frame, on_close, w, &w->conn, err) < 0)
		goto out;
	/* init handles one connection's requests in order: open, data and close go at once */
	w->id = hu_initconn_next_id(w->conn);
	if (hu_init_build_write_open(&b, w->id, HU_SBX_ENV_FILE, "root", NULL, 0, err) < 0 ||
	    hu_init_build_write_data(&b, w->id, json, strlen(json), err) < 0 ||
	    hu_init_build_simple(&b, HU_MSG_WRITE_CLOSE, w->id, err) < 0 || hu_initconn_send(w->conn, &b, err) < 0)
		goto out;
	struct timeval tv = {HU_SBX_ENV_TIMEOUT_MS / 1000, (HU_SBX_ENV_TIMEOUT_MS % 1000) * 1000};
	evtimer_add(w->timeout, &tv);
	rc = 0;
out:
	hu_buf_free(&b);
	free(json);
	if (rc < 0 && w) {
		if (w->conn)
			hu_initconn_free(w->conn);
		if (w->timeout)
			event_free(w->timeout);
		free(w);
	}
	return rc;
}
