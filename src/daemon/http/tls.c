#include "daemon/http/tls.h"

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/http/server_internal.h"

struct hu_tls {
	char cert[PATH_MAX];
	char key[PATH_MAX];
	SSL_CTX *ctx;
};

static int load(const char *cert, const char *key, SSL_CTX **out, hu_err *err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	char why[256] = "";

	if (!ctx)
		return hu_err_set(err, ENOMEM, "TLS context");
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* HTTP/1.1 only: evhttp speaks nothing else */
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
		ERR_error_string_n(ERR_get_error(), why, sizeof(why));
		ERR_clear_error();
		SSL_CTX_free(ctx);
		return hu_err_set(err, EINVAL, "TLS certificate %s with key %s: %s", cert, key, why);
	}
	*out = ctx;
	return 0;
}

int hu_tls_new(const char *cert_path, const char *key_path, struct hu_tls **out, hu_err *err)
{
	struct hu_tls *t = calloc(1, sizeof(*t));
	if (!t)
		return hu_err_set(err, ENOMEM, "TLS");
	snprintf(t->cert, sizeof(t->cert), "%s", cert_path);
	snprintf(t->key, sizeof(t->key), "%s", key_path);
	if (load(t->cert, t->key, &t->ctx, err) < 0) {
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

int hu_tls_reload(struct hu_tls *t, hu_err *err)
{
	SSL_CTX *ctx;
	if (load(t->cert, t->key, &ctx, err) < 0)
		return -1;
	/* open connections hold their own reference to the old context */
	SSL_CTX_free(t->ctx);
	t->ctx = ctx;
	return 0;
}

void hu_tls_free(struct hu_tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

/* evhttp asks for each accepted connection's bufferevent and sets its fd. */
static struct bufferevent *tls_bev(struct event_base *base, void *arg)
{
	struct hu_tls *t = arg;
	SSL *ssl = SSL_new(t->ctx);
	if (!ssl)
		return NULL;
	struct bufferevent *bev =
		bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (!bev)
		SSL_free(ssl);
	else /* a client that closes without close_notify is no error for HTTP */
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

void hu_http_use_tls(struct hu_http *h, struct hu_tls *t)
{
	h->tls = 1;
	h->make_bev = tls_bev; /* inconn.c asks it for each connection */
	h->make_bev_arg = t;
}
