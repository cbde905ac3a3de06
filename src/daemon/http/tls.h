/*
 * Optional TLS on the listener: a certificate chain and a key from files
 * (a wildcard certificate for `*.<sandbox domain>` serves every sandbox host
 * name). The files are read again on hu_tls_reload (SIGHUP): connections
 * accepted afterwards get the new pair, open ones keep theirs, and a pair
 * that does not load leaves the old one in place.
 */
#ifndef HUTCH_DAEMON_HTTP_TLS_H
#define HUTCH_DAEMON_HTTP_TLS_H

#include "daemon/http/server.h"
#include "util/err.h"

struct hu_tls;

int hu_tls_new(const char *cert_path, const char *key_path, struct hu_tls **out, hu_err *err);
int hu_tls_reload(struct hu_tls *t, hu_err *err);
void hu_tls_free(struct hu_tls *t);
/* Serve h's connections over TLS from now on (before it listens); t must
 * outlive h. */
void hu_http_use_tls(struct hu_http *h, struct hu_tls *t);

#endif
