#include "daemon/ingress/head.h"

#include <string.h>
#include <sys/queue.h>
#include <strings.h>

static const char *const hop_by_hop[] = {
	"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
	"Proxy-Authenticate", "Proxy-Authorization",
	/* hutch answers 100-continue itself, and re-frames the body */
	"Expect", "Hutch-Body-Len", "Hutch-Body-Coding",
	/* set here from what the request was, never taken from the client */
	"Content-Length", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded",
	/* hutch's credential for the port: the server has no use for it */
	"E2B-Traffic-Access-Token",
};

/* Does the comma-separated list `list` hold `token` (case-insensitive)? */
static bool list_has(const char *list, const char *token)
{
	size_t tl = strlen(token);
	const char *p = list;

	while (p && *p) {
		p += strspn(p, " \t,");
		size_t n = strcspn(p, ",");
		size_t m = n;
		while (m > 0 && (p[m - 1] == ' ' || p[m - 1] == '\t'))
			m--;
		if (m == tl && !strncasecmp(p, token, tl))
			return true;
		p += n;
	}
	return false;
}

static bool is_dropped(const char *name, const char *connection)
{
	size_t n = strlen(name);

	/* run for every header of every request: names of another length
	 * are not compared */
	for (size_t i = 0; i < sizeof(hop_by_hop) / sizeof(hop_by_hop[0]); i++)
		if (strlen(hop_by_hop[i]) == n && !strcasecmp(name, hop_by_hop[i]))
			return true;
	return connection && list_has(connection, name);
}

/* "name: value\r\n" into out, without a printf per header. 0, or -1. */
static int add_field(struct evbuffer *out, const char *name, const char *value)
{
	size_t kn = strlen(name), vn = strlen(value);
	struct evbuffer_iovec v;

	if (evbuffer_reserve_space(out, (ev_ssize_t)(kn + vn + 4), &v, 1) != 1)
		return -1;
	char *at = v.iov_base;
	memcpy(at, name, kn);
	memcpy(at + kn, ": ", 2);
	memcpy(at + kn + 2, value, vn);
	memcpy(at + kn + 2 + vn, "\r\n", 2);
	v.iov_len = kn + vn + 4;
	return evbuffer_commit_space(out, &v, 1);
}

static bool clean(const char *s)
{
	return s && !strpbrk(s, "\r\n");
}

int hu_head_build(const struct hu_head_in *in, struct evbuffer *out, bool *upgrade, hu_err *err)
{
	const char *connection = NULL, *up = NULL, *host = NULL;
	struct evkeyval *kv;
	int rc = 0;

	TAILQ_FOREACH(kv, in->headers, next) {
		if (!strcasecmp(kv->key, "Connection"))
			connection = kv->value;
		else if (!strcasecmp(kv->key, "Upgrade"))
			up = kv->value;
		else if (!strcasecmp(kv->key, "Host"))
			host = kv->value;
	}
	*upgrade = up && *up && connection && list_has(connection, "upgrade") && clean(up);
	if (!clean(in->target) || !*in->target || strchr(in->target, ' '))
		return hu_err_set(err, EINVAL, "the request target cannot be forwarded");

	rc |= evbuffer_add_printf(out, "%s %s HTTP/1.1\r\n", in->method, in->target) < 0;
	if (in->host) {
		if (!clean(in->host))
			return hu_err_set(err, EINVAL, "the masked Host cannot be sent");
		rc |= evbuffer_add_printf(out, "Host: %s\r\n", in->host) < 0;
	}
	TAILQ_FOREACH(kv, in->headers, next) {
		if (is_dropped(kv->key, connection) || (in->host && !strcasecmp(kv->key, "Host")))
			continue;
		if (!clean(kv->key) || !clean(kv->value))
			return hu_err_set(err, EINVAL, "header %.64s cannot be forwarded", kv->key);
		rc |= add_field(out, kv->key, kv->value) < 0;
	}
	/* without an upgrade no Connection header: HTTP/1.1's default, keep-alive,
	 * lets the ingress reuse the connection (idle.h) */
	if (*upgrade)
		rc |= evbuffer_add_printf(out, "Connection: Upgrade\r\nUpgrade: %s\r\n", up) < 0;
	if (in->body_length < 0)
		rc |= evbuffer_add_printf(out, "Transfer-Encoding: chunked\r\n") < 0;
	else if (in->body_length > 0 || in->body_expected)
		rc |= evbuffer_add_printf(out, "Content-Length: %lld\r\n", (long long)in->body_length) < 0;
	if (clean(in->client_addr) && *in->client_addr)
		rc |= evbuffer_add_printf(out, "X-Forwarded-For: %s\r\n", in->client_addr) < 0;
	rc |= evbuffer_add_printf(out, "X-Forwarded-Proto: %s\r\n", in->proto) < 0;
	if (clean(host))
		rc |= evbuffer_add_printf(out, "X-Forwarded-Host: %s\r\n", host) < 0;
	rc |= evbuffer_add(out, "\r\n", 2) < 0;
	if (rc)
		return hu_err_set(err, ENOMEM, "build the request head");
	return 0;
}
