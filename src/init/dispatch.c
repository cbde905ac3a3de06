#include "init/dispatch.h"

#include "init/fileops.h"
#include "init/portconn.h"
#include "init/proc.h"
#include "init/request.h"
#include "init/watch.h"

int hu_dispatch(struct hu_conn *c, const struct hu_frame_hdr *hdr, const uint8_t *payload)
{
	struct hu_request req;
	hu_err err;

	if (hu_request_decode(hdr, payload, &req, &err) < 0) {
		/* Malformed bytes mean the peer is broken or hostile: end the
		 * connection. A well-formed request with a bad value gets an ERROR. */
		if (err.code == EPROTO)
			return -1;
		hu_conn_send_error(c, hdr->id, &err);
		return 0;
	}
	switch (req.type) {
	case HU_MSG_PING:
		/* A PONG follows every event of c's watches that the kernel had
		 * queued when the PING arrived: a polling watcher (the daemon's
		 * GetWatcherEvents) pings to hand over everything a change it
		 * already saw the answer of caused. */
		hu_dirwatch_conn_drained(c);
		if (!c->dead)
			hu_conn_send_empty(c, HU_MSG_PONG, req.id);
		break;
	case HU_MSG_SPAWN:
		hu_proc_spawn(c, &req);
		break;
	case HU_MSG_ATTACH:
		hu_proc_attach(c, &req);
		break;
	case HU_MSG_STDIN:
		hu_proc_stdin(c, &req);
		break;
	case HU_MSG_CLOSE_STDIN:
		hu_proc_close_stdin(c, &req);
		break;
	case HU_MSG_SIGNAL:
		hu_proc_signal(c, &req);
		break;
	case HU_MSG_RESIZE:
		hu_proc_resize(c, &req);
		break;
	case HU_MSG_LIST_PROCS:
		hu_proc_list(c, &req);
		break;
	case HU_MSG_PORT_CONNECT:
		hu_port_connect(c, &req);
		break;
	case HU_MSG_WATCH_START:
		hu_dirwatch_start(c, &req);
		break;
	default:
		/* The decoder admits only known request types; the rest are files. */
		hu_fileops_handle(c, &req);
		break;
	}
	hu_request_free(&req);
	return 0;
}
