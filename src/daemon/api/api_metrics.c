/*
 * GET /metrics: the Prometheus text exposition of the daemon's counters,
 * histograms and capacity gauges (stats.h). It needs no key, like /health:
 * the numbers are aggregates that name no sandbox and no team, and the
 * daemon listens on loopback unless the operator says otherwise.
 */
#include <event2/buffer.h>

#include "daemon/routes.h"
#include "daemon/common/stats.h"

static void get_metrics(struct hu_req *r)
{
	struct evbuffer *out = evbuffer_new();

	if (!out || hu_stats_render(r->d, out) < 0) {
		if (out)
			evbuffer_free(out);
		hu_reply_error(r, 500, "out of memory");
		return;
	}
	hu_reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", out);
	evbuffer_free(out);
}

void hu_api_metrics_register(struct hu_daemon *d)
{
	if (hu_route(d, EVHTTP_REQ_GET, "/metrics", HU_AUTH_NONE, get_metrics) < 0)
		hu_log(HU_LOG_ERROR, NULL, 0, "cannot register /metrics");
}
