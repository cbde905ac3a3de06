/*
 * The state of each client connection, below evhttp (server_internal.h).
 *
 * evhttp 2.1 reads a request's body whole before any callback runs, and has
 * no hook between the head and the body. So the HTTP layer reads bodies
 * itself: every request head is scanned here as its bytes arrive (an
 * evbuffer callback on the connection's input, which runs before evhttp's
 * read callback sees them), and its framing headers (Content-Length,
 * Transfer-Encoding) are renamed in place, byte for byte, so that evhttp
 * parses a head without a body and calls the server at once. The framing
 * seen here then decides how body.c reads the bytes that follow the head.
 * Renaming instead of removing keeps every offset evhttp relies on, and
 * since only this file interprets framing, no two parsers can disagree on
 * where a request ends (request smuggling).
 *
 * Also here: the head size limit (431 with a JSON body, before evhttp's own
 * limit would answer 400), and the connection's close callback, which the
 * state keeps for itself and passes on to whoever set one through
 * hu_inconn_set_closecb (streams, connect.c).
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_struct.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "daemon/common/log.h"
#include "daemon/http/server_internal.h"

#define LINE_PEEK 512 /* a framing header line longer than this is refused */

enum inconn_state {
	IC_HEAD,      /* a head is arriving: scan it */
	IC_HEAD_DONE, /* the head ended: evhttp parses it, the server gets it next */
	IC_REQUEST,   /* a request is in the application's hands */
	IC_TAKEN,     /* the connection left HTTP (takeover.c) */
	IC_REJECTED,  /* answered 431, closing */
};

struct hu_inconn {
	struct hu_http *http;
	struct bufferevent *bev;
	struct evhttp_connection *evcon; /* known once evhttp set the connection up */
	struct event *setup;
	int fd; /* its slot in http->conn_by_fd, or -1 before it has one */
	/* every state made and not yet freed, never searched: what evhttp_free
	 * does not close (a connection accepted just before the daemon stops,
	 * whose set-up never ran, has no close callback) is freed from here */
	struct hu_inconn *prev, *next;
	enum inconn_state st;
	/* the head being scanned: offsets from the front of the input */
	size_t scanned;    /* bytes examined */
	size_t line_start; /* where the current line starts */
	size_t head_len;   /* bytes of the head in complete lines */
	bool first_line_seen;
	bool last_was_framing; /* the previous line was a framing header */
	/* what the finished head said */
	bool has_length, chunked;
	uint64_t length;
	int bad_status;
	char bad_msg[160];
	struct req_priv *req;
	void (*close_cb)(struct evhttp_connection *, void *);
	void *close_arg;
	/* evhttp's own bufferevent callbacks, while the body reader has them */
	bufferevent_data_cb ev_read, ev_write;
	bufferevent_event_cb ev_event;
	void *ev_arg;
	bool reads_owned;
	bool no_delay;     /* TCP_NODELAY is set on its socket */
};

static void reset_head(struct hu_inconn *c)
{
	c->st = IC_HEAD;
	c->scanned = c->line_start = c->head_len = 0;
	c->first_line_seen = c->last_was_framing = false;
	c->has_length = c->chunked = false;
	c->length = 0;
	c->bad_status = 0;
	c->bad_msg[0] = '\0';
}

static void mark_bad(struct hu_inconn *c, int status, const char *msg)
{
	if (c->bad_status)
		return;
	c->bad_status = status;
	snprintf(c->bad_msg, sizeof(c->bad_msg), "%s", msg);
}

/* Overwrite n bytes at offset off of the input in place (same length: no
 * offset moves and no buffer callback runs). */
static void overwrite(struct evbuffer *in, size_t off, const char *with, size_t n)
{
	struct evbuffer_ptr ptr;
	struct evbuffer_iovec vec[4];

	if (evbuffer_ptr_set(in, &ptr, off, EVBUFFER_PTR_SET) < 0)
		return;
	int nvec = evbuffer_peek(in, (ev_ssize_t)n, &ptr, vec, 4);
	size_t done = 0;
	for (int i = 0; i < nvec && i < 4 && done < n; i++) {
		size_t k = vec[i].iov_len < n - done ? vec[i].iov_len : n - done;
		memcpy(vec[i].iov_base, with + done, k);
		done += k;
	}
}

static const char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

static void framing_length(struct hu_inconn *c, const char *v)
{
	size_t n = strspn(v, "0123456789");
	if (n == 0 || v[n] || n > 18) {
		mark_bad(c, 400, "Content-Length is not a decimal number of bytes");
		return;
	}
	uint64_t len = strtoull(v, NULL, 10);
	if (c->has_length && len != c->length)
		mark_bad(c, 400, "two different Content-Length headers");
	c->has_length = true;
	c->length = len;
}

static void framing_coding(struct hu_inconn *c, const char *v)
{
	if (c->chunked)
		mark_bad(c, 400, "two Transfer-Encoding headers");
	else if (strcasecmp(v, "chunked"))
		mark_bad(c, 501, "only Transfer-Encoding: chunked is supported");
	c->chunked = true;
}

/* One complete line of the head: [off, off + n) without its LF. */
static void head_line(struct hu_inconn *c, struct evbuffer *in, size_t off, size_t n)
{
	static const char cl[] = "Content-Length", te[] = "Transfer-Encoding";
	char line[LINE_PEEK + 1];
	size_t k = n < LINE_PEEK ? n : LINE_PEEK;
	struct evbuffer_ptr ptr;

	if (evbuffer_ptr_set(in, &ptr, off, EVBUFFER_PTR_SET) < 0 || evbuffer_copyout_from(in, &ptr, line, k) < 0)
		k = 0;
	line[k] = '\0';
	if (k && line[k - 1] == '\r' && k == n)
		line[--k] = '\0';
	if (!c->first_line_seen) {
		c->first_line_seen = true; /* the request line: evhttp's to judge */
		return;
	}
	if (k == 0 && (n == 0 || n == 1)) {
		c->st = IC_HEAD_DONE;
		if (c->chunked && c->has_length)
			mark_bad(c, 400, "both Content-Length and Transfer-Encoding");
		return;
	}
	if (line[0] == ' ' || line[0] == '\t') {
		if (c->last_was_framing)
			mark_bad(c, 400, "a folded Content-Length or Transfer-Encoding header");
		return;
	}
	c->last_was_framing = false;
	char *colon = strchr(line, ':');
	size_t name_len = colon ? (size_t)(colon - line) : strcspn(line, " \t");
	size_t bare = name_len;
	while (bare && (line[bare - 1] == ' ' || line[bare - 1] == '\t'))
		bare--;
	bool is_cl = bare == sizeof(cl) - 1 && !strncasecmp(line, cl, bare);
	bool is_te = bare == sizeof(te) - 1 && !strncasecmp(line, te, bare);
	if (!is_cl && !is_te)
		return;
	c->last_was_framing = true;
	if (!colon || bare != name_len) {
		mark_bad(c, 400, "whitespace between a framing header's name and its colon");
		return;
	}
	if (n > LINE_PEEK) {
		mark_bad(c, 400, "a Content-Length or Transfer-Encoding header that is too long");
		return;
	}
	/* same length as the names they replace; never read as framing */
	overwrite(in, off, is_cl ? "Hutch-Body-Len" : "Hutch-Body-Coding", name_len);
	const char *v = trim(colon + 1);
	if (is_cl)
		framing_length(c, v);
	else
		framing_coding(c, v);
}

static void reject_read(struct bufferevent *b, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(b);
	evbuffer_drain(in, evbuffer_get_length(in));
}

static void reject_done(struct bufferevent *b, void *arg)
{
	struct hu_inconn *c = arg;
	if (evbuffer_get_length(bufferevent_get_output(b)) == 0 && c->evcon)
		evhttp_connection_free(c->evcon); /* frees c through its close callback */
}

static void reject_event(struct bufferevent *b, short what, void *arg)
{
	struct hu_inconn *c = arg;
	if (c->evcon)
		evhttp_connection_free(c->evcon);
}

/* The head is over the limit: answer 431 as bytes (evhttp has no request
 * to answer yet) and close once it is out. */
static void reject_head(struct hu_inconn *c)
{
	char body[160];
	int n = snprintf(body, sizeof(body),
			 "{\"code\":431,\"message\":\"the request head is larger than %u bytes\"}", HU_HTTP_MAX_HEAD);

	c->st = IC_REJECTED;
	hu_log(HU_LOG_INFO, NULL, 0, "request head over %u bytes: 431", HU_HTTP_MAX_HEAD);
	if (!c->evcon)
		return; /* cannot happen: evhttp set the connection up first */
	evbuffer_add_printf(bufferevent_get_output(c->bev),
			    "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\n"
			    "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
			    n, body);
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
	bufferevent_setcb(c->bev, reject_read, reject_done, reject_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static void learn_evcon(struct hu_inconn *c)
{
	void *arg = NULL;
	if (c->evcon)
		return;
	bufferevent_getcb(c->bev, NULL, NULL, NULL, &arg);
	c->evcon = arg;
	if (c->evcon)
		evhttp_connection_set_closecb(c->evcon, NULL, NULL);
}

static void on_conn_close(struct evhttp_connection *evcon, void *arg);

/* Put c in its socket's slot, so that each request finds its connection in
 * O(1). Fails only when the table cannot grow (then the connection's
 * requests are answered 500, "no state"). */
static void table_put(struct hu_inconn *c)
{
	struct hu_http *h = c->http;
	evutil_socket_t fd = bufferevent_getfd(c->bev);

	if (c->fd >= 0 || fd < 0)
		return;
	if ((size_t)fd >= h->conn_slots) {
		size_t n = h->conn_slots ? h->conn_slots : 64;
		while (n <= (size_t)fd)
			n *= 2;
		struct hu_inconn **t = realloc(h->conn_by_fd, n * sizeof(*t));
		if (!t)
			return;
		memset(t + h->conn_slots, 0, (n - h->conn_slots) * sizeof(*t));
		h->conn_by_fd = t;
		h->conn_slots = n;
	}
	h->conn_by_fd[fd] = c;
	c->fd = fd;
}

/* The state of the connection whose bufferevent is bev, or NULL. A slot
 * holds a connection until its close callback frees it, which is before
 * its socket closes and its number can be used again. */
static struct hu_inconn *table_get(struct hu_http *h, struct bufferevent *bev)
{
	evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
	struct hu_inconn *c = fd >= 0 && (size_t)fd < h->conn_slots ? h->conn_by_fd[fd] : NULL;
	return c && c->bev == bev ? c : NULL;
}

static void conn_free(struct hu_inconn *c);

void hu_inconn_table_free(struct hu_http *h)
{
	while (h->conns)
		conn_free(h->conns);
	free(h->conn_by_fd);
	h->conn_by_fd = NULL;
	h->conn_slots = 0;
}

static void set_own_closecb(struct hu_inconn *c)
{
	if (c->evcon)
		evhttp_connection_set_closecb(c->evcon, on_conn_close, c);
}

/* Scan what arrived of the head. */
static void scan(struct hu_inconn *c, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in);

	while (c->st == IC_HEAD && c->scanned < len) {
		struct evbuffer_ptr from, lf;
		if (evbuffer_ptr_set(in, &from, c->scanned, EVBUFFER_PTR_SET) < 0)
			break;
		lf = evbuffer_search(in, "\n", 1, &from);
		if (lf.pos < 0) {
			c->scanned = len;
			break;
		}
		size_t end = (size_t)lf.pos;
		head_line(c, in, c->line_start, end - c->line_start);
		c->head_len += end + 1 - c->line_start;
		c->line_start = c->scanned = end + 1;
	}
	if (c->st == IC_HEAD && c->head_len + (len - c->line_start) > HU_HTTP_MAX_HEAD)
		reject_head(c);
}

static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
	struct hu_inconn *c = arg;

	/* evhttp removes the lines it parsed, always from the front */
	size_t del = info->n_deleted;
	c->scanned = c->scanned > del ? c->scanned - del : 0;
	c->line_start = c->line_start > del ? c->line_start - del : 0;
	if (info->n_added && c->st == IC_HEAD) {
		table_put(c);
		learn_evcon(c);
		set_own_closecb(c);
		scan(c, in);
	}
}

/* Runs once evhttp has set the connection up (it was accepted in the
 * callback that made the bufferevent). */
/* The socket's write event at the loop's highest priority (server.h
 * answers_first), once evhttp has given the bufferevent its socket (setting
 * the socket assigns the events afresh, at the default). Without it a burst
 * of requests read in one poll is worked through whole before any answer
 * goes out: a write waits for the next poll, behind every request read. A
 * TLS bufferevent assigns its events again after the handshake, so its
 * connections keep the default. */
static void answers_first(struct hu_inconn *c)
{
	if (c->http->set.answers_first && bufferevent_getfd(c->bev) >= 0)
		event_priority_set(&c->bev->ev_write, 0); /* fails harmlessly while a write is active */
}

static void on_setup(evutil_socket_t fd, short what, void *arg)
{
	struct hu_inconn *c = arg;
	table_put(c);
	learn_evcon(c);
	set_own_closecb(c);
	answers_first(c);
}

static void conn_free(struct hu_inconn *c)
{
	struct hu_http *h = c->http;
	if (c->fd >= 0 && (size_t)c->fd < h->conn_slots && h->conn_by_fd[c->fd] == c)
		h->conn_by_fd[c->fd] = NULL;
	if (c->prev)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->setup)
		event_free(c->setup);
	free(c);
}

static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
	struct hu_inconn *c = arg;
	void (*cb)(struct evhttp_connection *, void *) = c->close_cb;
	void *cb_arg = c->close_arg;

	c->close_cb = NULL;
	if (c->req) {
		struct req_priv *p = c->req;
		c->req = NULL;
		p->conn = NULL;
		hu_body_conn_gone(p);
	}
	if (cb)
		cb(evcon, cb_arg);
	/* the bufferevent is freed right after: its callbacks must not find c */
	conn_free(c);
}

struct bufferevent *hu_inconn_bev(struct event_base *base, void *arg)
{
	struct hu_http *h = arg;
	struct bufferevent *bev = h->make_bev ? h->make_bev(base, h->make_bev_arg) : bufferevent_socket_new(base, -1, 0);
	struct hu_inconn *c = bev ? calloc(1, sizeof(*c)) : NULL;

	if (!c) {
		if (bev)
			bufferevent_free(bev);
		return NULL;
	}
	c->http = h;
	c->bev = bev;
	c->fd = -1;
	reset_head(c);
	c->setup = event_new(base, -1, 0, on_setup, c);
	if (!c->setup || !evbuffer_add_cb(bufferevent_get_input(bev), on_input, c)) {
		if (c->setup)
			event_free(c->setup);
		free(c);
		bufferevent_free(bev);
		return NULL;
	}
	/* bounded read-ahead: a body reader that pauses stops the socket */
	bufferevent_setwatermark(bev, EV_READ, 0, HU_HTTP_INPUT_MAX);
	c->next = h->conns;
	if (c->next)
		c->next->prev = c;
	h->conns = c;
	/* active events run before the loop polls again, so before any byte of
	 * this connection is read */
	event_active(c->setup, EV_TIMEOUT, 0);
	return bev;
}

void hu_inconn_write_now(struct hu_http *h, int fd)
{
	struct hu_inconn *c = fd >= 0 && (size_t)fd < h->conn_slots ? h->conn_by_fd[fd] : NULL;

	/* a TLS bufferevent's output is plaintext; a taken connection and a
	 * bypassed one (EV_WRITE off, splice.c) are written by their owners */
	if (!c || h->tls || !h->set.answers_first || c->st == IC_TAKEN)
		return;
	if (!(bufferevent_get_enabled(c->bev) & EV_WRITE))
		return;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	if (evbuffer_get_length(out) == 0)
		return;
	/* a socket bufferevent's output is frozen at its start except while
	 * it writes itself: likewise here. A failure writes nothing; the
	 * bufferevent meets it again on its own write and reports it. */
	evbuffer_unfreeze(out, 1);
	evbuffer_write(out, fd);
	evbuffer_freeze(out, 1);
}

void hu_inconn_no_delay(struct hu_inconn *c)
{
	evutil_socket_t fd = bufferevent_getfd(c->bev);
	int one = 1;

	if (c->no_delay || fd < 0)
		return;
	c->no_delay = true; /* once a connection, not once a request */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* fails harmlessly on unix sockets */
}

struct hu_inconn *hu_inconn_of(struct hu_http *h, struct evhttp_request *ev)
{
	struct evhttp_connection *evcon = ev ? evhttp_request_get_connection(ev) : NULL;
	struct hu_inconn *c = evcon ? table_get(h, evhttp_connection_get_bufferevent(evcon)) : NULL;

	if (c)
		c->evcon = evcon;
	return c;
}

/* The reply to the connection's request is out: the next head starts at
 * the front of the input (the body was read to its end, or the connection
 * is closing), and bytes of it may be there already. */
static void on_complete(struct evhttp_request *ev, void *arg)
{
	struct hu_inconn *c = arg;
	if (c->st != IC_REQUEST)
		return;
	if (c->req) {
		c->req->conn = NULL;
		c->req = NULL;
	}
	if (c->reads_owned)
		hu_inconn_own_reads(c, NULL, NULL, NULL);
	reset_head(c);
	scan(c, bufferevent_get_input(c->bev));
}

int hu_inconn_request(struct hu_inconn *c, struct req_priv *p, int *status, char *msg, size_t cap)
{
	struct hu_body *b = &p->body;

	if (c->st != IC_HEAD_DONE) {
		/* never happens: evhttp saw a head the scanner did not finish */
		*status = 400;
		snprintf(msg, cap, "the request head could not be read");
		return -1;
	}
	c->st = IC_REQUEST;
	c->req = p;
	p->conn = c;
	evhttp_request_set_on_complete_cb(p->pub.ev, on_complete, c);
	b->present = c->chunked || (c->has_length && c->length > 0);
	b->length = c->chunked ? -1 : (int64_t)c->length;
	b->done = !b->present;
	if (c->bad_status) {
		*status = c->bad_status;
		snprintf(msg, cap, "%s", c->bad_msg);
		return -1;
	}
	return 0;
}

void hu_inconn_set_closecb(struct hu_http *h, struct evhttp_connection *evcon,
			   void (*cb)(struct evhttp_connection *, void *), void *arg)
{
	struct hu_inconn *c = table_get(h, evhttp_connection_get_bufferevent(evcon));

	if (c) {
		c->close_cb = cb;
		c->close_arg = arg;
		return;
	}
	evhttp_connection_set_closecb(evcon, cb, arg);
}

void hu_inconn_taken(struct hu_inconn *c)
{
	if (c->reads_owned)
		hu_inconn_own_reads(c, NULL, NULL, NULL);
	c->st = IC_TAKEN;
	if (c->req) {
		c->req->conn = NULL;
		c->req = NULL;
	}
}

struct req_priv *hu_inconn_req(struct hu_inconn *c)
{
	return c->st == IC_REQUEST ? c->req : NULL;
}

void hu_inconn_forget_req(struct hu_inconn *c)
{
	c->req = NULL;
}

struct bufferevent *hu_inconn_bufferevent(struct hu_inconn *c)
{
	return c->bev;
}

static void parked_read(struct bufferevent *b, void *arg)
{
	/* a body is over and its reply not out yet: what follows waits */
	bufferevent_disable(b, EV_READ);
}

void hu_inconn_own_reads(struct hu_inconn *c, bufferevent_data_cb read, bufferevent_event_cb event, void *arg)
{
	if (read) {
		if (!c->reads_owned) {
			bufferevent_getcb(c->bev, &c->ev_read, &c->ev_write, &c->ev_event, &c->ev_arg);
			c->reads_owned = true;
		}
		/* no write callback: evhttp's would run its connection's stale
		 * "written" step when a 100 Continue drains */
		bufferevent_setcb(c->bev, read, NULL, event, arg);
		bufferevent_enable(c->bev, EV_READ);
		return;
	}
	if (!c->reads_owned)
		return;
	/* evhttp's callbacks may have been replaced already by its writer; the
	 * read side stays parked until evhttp takes the connection back */
	bufferevent_data_cb cur_read;
	void *cur_arg;
	bufferevent_getcb(c->bev, &cur_read, NULL, NULL, &cur_arg);
	if (cur_arg != c->ev_arg)
		bufferevent_setcb(c->bev, parked_read, NULL, c->ev_event, c->ev_arg);
	c->reads_owned = false;
}

void hu_inconn_pass_event(struct hu_inconn *c, short what)
{
	bufferevent_event_cb cb = c->ev_event;
	void *arg = c->ev_arg;
	struct bufferevent *bev = c->bev;
	if (cb)
		cb(bev, what, arg); /* evhttp: may free the connection, and c with it */
}
