// fuzz-sources: src/daemon/http/response.c src/daemon/http/framing.c src/daemon/ingress/head.c
/*
 * libFuzzer driver for the two places port ingress handles bytes it did not
 * write: a sandbox server's response head (src/daemon/http/response.c),
 * fed in two pieces to exercise the "need more" path, and request headers
 * rebuilt into a head (src/daemon/ingress/head.c). What is accepted must be
 * consistent: a final head ends in a blank line and is bounded, a rewritten
 * plain head says Connection: close exactly once, its fields give a body
 * framing or an error (hu_response_framing, as the ingress and a forwarding
 * node use it), nothing that could split a header line reaches a built
 * request head.
 */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "daemon/ingress/head.h"
#include "daemon/http/response.h"

/* The fields of an accepted head give a framing the decoder knows, with a
 * length only for a sized body. */
static void check_framing(struct evbuffer *heads)
{
	struct evkeyvalq h;
	struct hu_framing f;
	char reason[128];
	int status = 0;
	hu_err err;

	TAILQ_INIT(&h);
	if (hu_response_fields(heads, &status, reason, sizeof(reason), &h, &err) == 0 &&
	    hu_response_framing(&h, status, false, 0, &f, &err) == 0) {
		if (f.mode != HU_FRAMING_LENGTH && f.mode != HU_FRAMING_CHUNKED && f.mode != HU_FRAMING_CLOSE)
			abort();
		if (f.mode != HU_FRAMING_LENGTH && f.left)
			abort();
		if ((status == 204 || status == 304 || status < 200) && (f.mode != HU_FRAMING_LENGTH || f.left))
			abort();
	}
	evhttp_clear_headers(&h);
}

static void check_response(const uint8_t *data, size_t size)
{
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	size_t half = size / 2;
	int status = 0, rc;
	hu_err err;

	evbuffer_add(in, data, half);
	rc = hu_response_head(in, out, &status, &err);
	if (rc == 0) {
		evbuffer_add(in, data + half, size - half);
		rc = hu_response_head(in, out, &status, &err);
	}
	if (rc == 1) {
		size_t n = evbuffer_get_length(out);
		char *s = malloc(n + 1);
		evbuffer_copyout(out, s, n);
		s[n] = '\0';
		if (n < 16 || memcmp(s + n - 4, "\r\n\r\n", 4) || (status < 100 || status > 999))
			abort();
		if (status != 101 && status >= 200 && memcmp(s + n - 23, "\r\nConnection: close\r\n\r\n", 23))
			abort();
		/* no NUL, and every CR starts a CRLF */
		if (memchr(s, 0, n))
			abort();
		for (size_t i = 0; i < n; i++)
			if (s[i] == '\r' && (i + 1 == n || s[i + 1] != '\n'))
				abort();
		free(s);
		check_framing(out);
	}
	evbuffer_free(in);
	evbuffer_free(out);
}

/* The input as "name\0value\0name\0value..." request headers. */
static void check_request(const uint8_t *data, size_t size)
{
	struct evkeyvalq h;
	struct evbuffer *out = evbuffer_new();
	const char *p = (const char *)data, *end = p + size;
	bool up;
	hu_err err;

	TAILQ_INIT(&h);
	while (p < end) {
		const char *k = p, *kz = memchr(k, 0, (size_t)(end - k));
		if (!kz)
			break;
		const char *v = kz + 1, *vz = v < end ? memchr(v, 0, (size_t)(end - v)) : NULL;
		if (!vz)
			break;
		/* evhttp_add_header refuses CR/LF itself; insert raw to reach head.c's own check */
		struct evkeyval *kv = calloc(1, sizeof(*kv));
		kv->key = strdup(k);
		kv->value = strdup(v);
		TAILQ_INSERT_TAIL(&h, kv, next);
		p = vz + 1;
	}
	struct hu_head_in in = {.method = "GET", .target = "/", .headers = &h, .client_addr = "1.2.3.4", .proto = "http"};
	if (hu_head_build(&in, out, &up, &err) == 0) {
		size_t n = evbuffer_get_length(out);
		char *s = malloc(n + 1);
		evbuffer_copyout(out, s, n);
		s[n] = '\0';
		/* every line ends in CRLF; no bare CR or LF, no NUL */
		if (strlen(s) != n)
			abort();
		for (size_t i = 0; i < n; i++)
			if ((s[i] == '\n' && (i == 0 || s[i - 1] != '\r')) || (s[i] == '\r' && (i + 1 == n || s[i + 1] != '\n')))
				abort();
		free(s);
	}
	evhttp_clear_headers(&h);
	evbuffer_free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_response(data, size);
	check_request(data, size);
	return 0;
}
