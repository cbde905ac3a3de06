#include "daemon/http/response.h"

#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const dropped[] = {"Connection", "Keep-Alive", "Proxy-Connection"};

static bool is_dropped(const char *line, size_t len)
{
	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
		size_t n = strlen(dropped[i]);
		if (len > n && line[n] == ':' && !strncasecmp(line, dropped[i], n))
			return true;
	}
	return false;
}

/* Parse "HTTP/1.x NNN ..." into its status code; -1 when it is not one. */
static int status_of(const char *line, size_t len)
{
	if (len < 12 || strncmp(line, "HTTP/1.", 7) || (line[7] != '0' && line[7] != '1') || line[8] != ' ')
		return -1;
	int code = 0;
	for (int i = 9; i < 12; i++) {
		if (line[i] < '0' || line[i] > '9')
			return -1;
		code = code * 10 + (line[i] - '0');
	}
	if (code < 100 || (len > 12 && line[12] != ' '))
		return -1;
	return code;
}

/* Every CR in s is the start of a CRLF. */
static bool crlf_only(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\r' && (i + 1 == len || s[i + 1] != '\n'))
			return false;
	return true;
}

/* Does a Connection header line ("Connection: a, close") name `close`? */
static bool says_close(const char *line, size_t len)
{
	const char *p = line + 11, *end = line + len; /* past "Connection:" */

	if (len < 11 || strncasecmp(line, "Connection:", 11))
		return false;
	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		const char *tok = p;
		while (p < end && *p != ',' && *p != ' ' && *p != '\t')
			p++;
		if (p - tok == 5 && !strncasecmp(tok, "close", 5))
			return true;
	}
	return false;
}

/* One head of `len` bytes (its blank line included) at head: copied to out,
 * rewritten unless it is a 1xx. *keep is cleared when the head says the
 * server closes its connection after this response (HTTP/1.0, or
 * Connection: close). -2 on a bare CR, and then nothing is added to out. */
static int emit(const char *head, size_t len, int code, struct evbuffer *out, bool *keep)
{
	const char *p = head, *end = head + len - 2; /* before the blank line */
	struct evbuffer *tmp;
	int rc = 0;

	if (code < 200)
		return !crlf_only(head, len) ? -2 : evbuffer_add(out, head, len);
	/* built aside: on a refusal the caller writes a 502 to out instead */
	if (!(tmp = evbuffer_new()))
		return -1;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n = eol ? (size_t)(eol - p) + 1 : (size_t)(end - p);
		size_t content = n;
		while (content > 0 && (p[content - 1] == '\n' || p[content - 1] == '\r'))
			content--;
		/* lines may end in a bare LF (normalised to CRLF); a CR anywhere
		 * else could make the client see a line the server never sent */
		if (memchr(p, '\r', content)) {
			evbuffer_free(tmp);
			return -2;
		}
		if (p != head && says_close(p, content))
			*keep = false;
		if (p == head || !is_dropped(p, content)) {
			rc |= evbuffer_add(tmp, p, content);
			rc |= evbuffer_add(tmp, "\r\n", 2);
		}
		p += n;
	}
	rc |= evbuffer_add(tmp, "Connection: close\r\n\r\n", 21);
	rc |= evbuffer_add_buffer(out, tmp);
	evbuffer_free(tmp);
	return rc ? -1 : 0;
}

int hu_response_head(struct evbuffer *in, struct evbuffer *out, int *status, hu_err *err)
{
	bool keep;
	return hu_response_head_conn(in, out, status, &keep, err);
}

int hu_response_head_conn(struct evbuffer *in, struct evbuffer *out, int *status, bool *keep_alive, hu_err *err)
{
	for (;;) {
		struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
		if (end.pos < 0) {
			if (evbuffer_get_length(in) > HU_RESPONSE_HEAD_MAX)
				return hu_err_set(err, EMSGSIZE, "the server's response head is over %u bytes",
						  HU_RESPONSE_HEAD_MAX);
			return 0;
		}
		size_t len = (size_t)end.pos + 4;
		if (len > HU_RESPONSE_HEAD_MAX)
			return hu_err_set(err, EMSGSIZE, "the server's response head is over %u bytes", HU_RESPONSE_HEAD_MAX);
		char *head = malloc(len);
		if (!head)
			return hu_err_set(err, ENOMEM, "response head");
		evbuffer_remove(in, head, len);
		/* a NUL has no place in a head (RFC 9110 5.5) and would cut it
		 * short for any client that reads it as a C string */
		if (memchr(head, '\0', len)) {
			free(head);
			return hu_err_set(err, EPROTO, "the server's response head contains a NUL byte");
		}
		size_t first = strcspn(head, "\r\n");
		int code = status_of(head, first);
		if (code < 0) {
			free(head);
			return hu_err_set(err, EPROTO, "the server did not answer with HTTP/1.x");
		}
		/* HTTP/1.1 keeps its connection unless it says otherwise (RFC 9112 9.3) */
		*keep_alive = head[7] == '1';
		int rc = emit(head, len, code, out, keep_alive);
		free(head);
		if (rc == -2)
			return hu_err_set(err, EPROTO, "the server's response head has a CR inside a line");
		if (rc < 0)
			return hu_err_set(err, ENOMEM, "response head");
		if (code >= 200 || code == 101) {
			*status = code;
			return 1;
		}
	}
}

int hu_response_fields(struct evbuffer *heads, int *status, char *reason, size_t cap, struct evkeyvalq *headers,
		       hu_err *err)
{
	size_t len = evbuffer_get_length(heads);
	char *text = malloc(len + 1);
	int rc = 0;

	if (!text)
		return hu_err_set(err, ENOMEM, "response head");
	evbuffer_copyout(heads, text, len);
	text[len] = '\0';
	/* the final head is the last one: every head ends in an empty line */
	char *head = text;
	for (char *next; (next = strstr(head, "\r\n\r\n")) && next + 4 < text + len;)
		head = next + 4;
	char *line = head, *eol = strstr(line, "\r\n");
	*status = status_of(line, eol ? (size_t)(eol - line) : strlen(line));
	if (!eol || *status < 0) {
		free(text);
		return hu_err_set(err, EPROTO, "the server did not answer with HTTP/1.x");
	}
	*eol = '\0';
	snprintf(reason, cap, "%s", strlen(line) > 13 ? line + 13 : "");
	for (line = eol + 2; (eol = strstr(line, "\r\n")) && eol != line; line = eol + 2) {
		*eol = '\0';
		char *colon = strchr(line, ':');
		if (!colon || colon == line || line[0] == ' ' || line[0] == '\t' || colon[-1] == ' ' || colon[-1] == '\t') {
			rc = hu_err_set(err, EPROTO, "the server sent a malformed header line");
			break;
		}
		*colon = '\0';
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		size_t vl = strlen(v);
		while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			v[--vl] = '\0';
		if (!strcasecmp(line, "Connection") && !strcmp(v, "close") && eol + 4 <= text + len && !strcmp(eol + 2, "\r\n"))
			continue; /* the one hu_response_head added */
		if (evhttp_add_header(headers, line, v) < 0) {
			rc = hu_err_set(err, EPROTO, "the server sent a header that cannot be passed on");
			break;
		}
	}
	free(text);
	return rc;
}

int hu_response_framing(const struct evkeyvalq *headers, int status, bool head_request, uint64_t limit,
			struct hu_framing *f, hu_err *err)
{
	struct evkeyvalq *h = (struct evkeyvalq *)headers; /* evhttp_find_header only reads */
	const char *te = evhttp_find_header(h, "Transfer-Encoding");
	const char *cl = evhttp_find_header(h, "Content-Length");
	size_t digits = cl ? strspn(cl, "0123456789") : 0;

	if (head_request || status == 204 || status == 304 || status < 200) {
		hu_framing_init(f, HU_FRAMING_LENGTH, 0, limit);
		return 0;
	}
	if (te && strcasecmp(te, "chunked"))
		return hu_err_set(err, EPROTO, "the server's Transfer-Encoding is not chunked");
	if (te) {
		hu_framing_init(f, HU_FRAMING_CHUNKED, 0, limit);
		return 0;
	}
	if (cl && (digits == 0 || cl[digits] || digits > 18))
		return hu_err_set(err, EPROTO, "the server's Content-Length is not a number");
	if (cl)
		hu_framing_init(f, HU_FRAMING_LENGTH, strtoull(cl, NULL, 10), limit);
	else
		hu_framing_init(f, HU_FRAMING_CLOSE, 0, limit);
	return 0;
}
