/*
 * Signed /files URLs (signed_url.h).
 *
 * Finding the sandbox. A signed URL made with one shared E2B_SANDBOX_URL
 * carries path, operation, user, expiration and a signature, and nothing
 * else: the sandbox is named only implicitly, through the secret token
 * inside the hash, and no index keyed by request data can find it on first
 * sight (any key would have to be computed from a token). So an
 * unauthenticated request tries at most one token, whatever the number of
 * sandboxes:
 *
 *  1. E2b-Sandbox-Id, when a client sends it (dispatch.c, hu_signed_check).
 *  2. The Host name, when it has E2B's per-sandbox form
 *     `<port>-<sandboxID>.<domain>` (deployments with wildcard DNS, the way
 *     E2B itself routes).
 *  3. The signature index in the registry (hu_registry_sig_hint): a hash
 *     map from a signature to the sandbox a scan (below) found for it. The
 *     entry is only a hint and is verified like a fresh signature.
 *  Anything else is a 401 that cost no hash at all.
 *
 * On a node of a cluster, a host name or an index entry naming a sandbox
 * this node does not have, and a scan that finds none here, lead to
 * another node's: the scan asks the store, whose server hashes the other
 * nodes' tokens (within the same budget), and the request goes to the
 * owner, which verifies the signature as above (dispatch.c).
 *
 * Deployments that hand out links made with a shared URL and want them to
 * work on first sight without a name turn on signed_url.scan: such a link
 * is then tried against the tokens of the running sandboxes (from a hash
 * state of the common prefix "path:op:user:", one or two SHA-256 blocks per
 * sandbox), at most SCAN_RATE scans a second for the whole daemon (bursts of
 * SCAN_BURST; above it a 429 at the cost of a table lookup), and a link
 * found that way goes into the index for its later uses. The test build
 * reports the tokens each request hashed (X-Hutch-Test-Signature-Hashes).
 *
 * An expired signature is refused before any of this, so a flood of stale
 * links costs nothing per sandbox. Every comparison is constant-time.
 */
#include "daemon/envd/signed_url.h"

#include <event2/http.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon/sandboxes/registry.h"
#include "daemon/store/store.h"
#include "util/clock.h"
#include "util/ratelimit.h"

/* At most 1000 sandboxes at about a microsecond each: a full-rate flood of
 * unseen signatures costs at most about a tenth of a core. */
#define SCAN_RATE 100
#define SCAN_BURST 200

/* One budget for the process: scans are the daemon's work, whoever asks. */
static struct hu_ratelimit scan_budget = HU_RATELIMIT_INIT(SCAN_RATE, SCAN_BURST);

bool hu_signed_present(struct hu_req *r)
{
	return !strcmp(r->path, "/files") && hu_req_query(r, "signature") != NULL;
}

/* What every signature check needs from the request. */
struct signed_ctx {
	struct hu_signed_req sig;
	const char *path, *op, *user;
};

static void reply_401(struct hu_req *r, const char *msg)
{
	hu_reply_error(r, 401, "%s", msg);
}

/* Parse r's signature and refuse a bad or expired one (replying). */
static bool prepare(struct hu_req *r, struct signed_ctx *c)
{
	hu_err err;

	if (r->method != EVHTTP_REQ_GET && r->method != EVHTTP_REQ_POST) {
		hu_reply_error(r, 405, "signed URLs are for GET and POST /files");
		return false;
	}
	if (hu_signed_parse(hu_req_query(r, "signature"), hu_req_query(r, "signature_expiration"), &c->sig, &err) < 0) {
		reply_401(r, err.msg);
		return false;
	}
	/* envd's order and wording: the expiry is checked before the hash. */
	if (c->sig.has_expiration && c->sig.expiration < (int64_t)time(NULL)) {
		reply_401(r, "signature is already expired");
		return false;
	}
	c->op = r->method == EVHTTP_REQ_GET ? "read" : "write";
	c->path = hu_req_query(r, "path");
	c->user = hu_req_query(r, "username");
	if (!c->path)
		c->path = "";
	if (!c->user)
		c->user = "";
	return true;
}

static bool verify_one(const struct signed_ctx *c, const struct hu_sbx *s)
{
	uint8_t want[HU_SIG_DIGEST_LEN];
	if (!s->access_token[0])
		return false;
	hu_signed_digest(c->path, c->op, c->user, s->access_token, c->sig.has_expiration ? c->sig.expiration_text : NULL,
			 want);
	return CRYPTO_memcmp(want, c->sig.digest, HU_SIG_DIGEST_LEN) == 0;
}

/* Test build: tell the client how many tokens its request hashed. */
static void report_hashes(struct hu_req *r, unsigned long before)
{
#ifdef HU_TEST_HOOKS
	char n[24];
	snprintf(n, sizeof(n), "%lu", hu_signed_hash_count() - before);
	hu_reply_header(r, "X-Hutch-Test-Signature-Hashes", n);
#else
	(void)r;
	(void)before;
#endif
}

static unsigned long hashes_now(void)
{
#ifdef HU_TEST_HOOKS
	return hu_signed_hash_count();
#else
	return 0;
#endif
}

bool hu_signed_check(struct hu_req *r, const struct hu_sbx *s)
{
	struct signed_ctx c;
	unsigned long before = hashes_now();
	if (!prepare(r, &c))
		return false;
	bool ok = verify_one(&c, s);
	report_hashes(r, before);
	if (!ok) {
		reply_401(r, "invalid signature");
		return false;
	}
	return true;
}

struct scan {
	const struct signed_ctx *c;
	EVP_MD_CTX *prefix, *work;
	struct hu_sbx *found;
	bool failed;
};

/* Every candidate is hashed and compared, also after a match, so the time
 * taken does not tell where a sandbox sits in the table. */
static int scan_one(struct hu_sbx *s, void *arg)
{
	struct scan *sc = arg;
	uint8_t got[HU_SIG_DIGEST_LEN];

	if (!s->access_token[0])
		return 0;
	if (!hu_signed_finish(sc->prefix, sc->work, s->access_token,
			   sc->c->sig.has_expiration ? sc->c->sig.expiration_text : NULL, got)) {
		sc->failed = true;
		return 1;
	}
	if (CRYPTO_memcmp(got, sc->c->sig.digest, HU_SIG_DIGEST_LEN) == 0)
		sc->found = s;
	return 0;
}

static struct hu_sbx *scan_tokens(struct hu_registry *reg, const struct signed_ctx *c)
{
	struct scan sc = {.c = c};
	sc.prefix = hu_signed_prefix_state(c->path, c->op, c->user);
	sc.work = EVP_MD_CTX_new();
	if (sc.prefix && sc.work)
		hu_registry_each(reg, scan_one, &sc);
	EVP_MD_CTX_free(sc.prefix);
	EVP_MD_CTX_free(sc.work);
	return sc.failed ? NULL : sc.found;
}

/* Copy id into the caller's `elsewhere` when this node has no such sandbox
 * and belongs to a cluster: the dispatcher sends the request to the owner,
 * which verifies the signature itself. */
static void note_elsewhere(const struct hu_daemon *d, const char *id, char *elsewhere, size_t cap)
{
	if (d->cluster && strlen(id) < cap)
		snprintf(elsewhere, cap, "%s", id);
}

/* Steps 2 and 3: the one sandbox the request points at, verified; NULL when
 * it names none, the signature is not its, or it is another node's (then
 * `elsewhere` has its id). */
static struct hu_sbx *named_or_indexed(struct hu_req *r, struct hu_daemon *d, const struct signed_ctx *c,
				       const char **how, char *elsewhere, size_t cap)
{
	char id[HU_ID_MAX];
	const char *hint;
	struct hu_sbx *s;

	if (hu_signed_host_id(hu_req_header(r, "Host"), id, sizeof(id))) {
		*how = "host name";
		s = hu_registry_get(d->reg, id);
	} else if ((hint = hu_registry_sig_hint(d->reg, c->sig.digest))) {
		*how = "signature index";
		snprintf(id, sizeof(id), "%s", hint);
		s = hu_registry_get(d->reg, id);
	} else {
		return NULL;
	}
	if (!s)
		note_elsewhere(d, id, elsewhere, cap);
	return s && verify_one(c, s) ? s : NULL;
}

/* A node of a cluster scans the other nodes' tokens too, in the store
 * (which hashes them there): 0 and their sandbox's id in elsewhere, or
 * -1 after replying (the store is out of reach: 503), or 0 and nothing. */
static int scan_elsewhere(struct hu_req *r, struct hu_daemon *d, const struct signed_ctx *c, char *elsewhere,
			  size_t cap)
{
	char prefix[3 * 4096], suffix[32], id[HU_ID_MAX];
	hu_err err;

	if (!d->cluster || !d->store)
		return 0;
	if ((size_t)snprintf(prefix, sizeof(prefix), "%s:%s:%s:", c->path, c->op, c->user) >= sizeof(prefix))
		return 0; /* longer than any path the request line can carry */
	snprintf(suffix, sizeof(suffix), "%s%s", c->sig.has_expiration ? ":" : "",
		 c->sig.has_expiration ? c->sig.expiration_text : "");
	if (hu_store_sandbox_by_signature(d->store, prefix, suffix, c->sig.digest, HU_SIG_DIGEST_LEN, id, sizeof(id),
					  &err) < 0) {
		if (err.code == ENOENT || err.code == ENOSYS)
			return 0;
		hu_err_prefix(&err, "signed URL: looking through the other nodes' sandboxes");
		hu_reply_err(r, &err);
		return -1;
	}
	hu_registry_sig_remember(d->reg, c->sig.digest, id);
	note_elsewhere(d, id, elsewhere, cap);
	return 0;
}

/* The opt-in step: every token, within the daemon's scan budget. NULL
 * after replying (429: over budget; 503: the store is out of reach), when
 * no token matches, or when the sandbox is another node's (its id in
 * elsewhere). */
static struct hu_sbx *scan_if_allowed(struct hu_req *r, struct hu_daemon *d, const struct signed_ctx *c,
				      bool *replied, char *elsewhere, size_t cap)
{
	struct hu_sbx *s;

	if (!hu_ratelimit_take(&scan_budget, hu_mono_ms())) {
		hu_reply_error(r, 429, "too many signed URLs not seen before: retry later, or send "
				       "E2b-Sandbox-Id (or use per-sandbox host names)");
		*replied = true;
		return NULL;
	}
	if ((s = scan_tokens(d->reg, c)))
		hu_registry_sig_remember(d->reg, c->sig.digest, s->id);
	else if (scan_elsewhere(r, d, c, elsewhere, cap) < 0)
		*replied = true;
	return s;
}

struct hu_sbx *hu_signed_resolve(struct hu_req *r, char *elsewhere, size_t cap)
{
	struct hu_daemon *d = hu_req_daemon(r);
	struct signed_ctx c;
	struct hu_sbx *s = NULL;
	const char *how = NULL;
	unsigned long before = hashes_now();
	bool replied = false;

	elsewhere[0] = '\0';
	if (!prepare(r, &c))
		return NULL;
	if (d->reg)
		s = named_or_indexed(r, d, &c, &how, elsewhere, cap);
	/* a Host naming a sandbox is checked against that one only */
	if (!s && !how && d->reg && d->cfg.signed_url_scan) {
		how = "token scan";
		s = scan_if_allowed(r, d, &c, &replied, elsewhere, cap);
	}
	report_hashes(r, before);
	if (replied)
		return NULL;
	if (!s && elsewhere[0]) {
		hu_log(HU_LOG_DEBUG, elsewhere, r->id, "signed URL: sandbox found by %s, on another node", how);
		return NULL;
	}
	if (!s) {
		if (!how && !d->cfg.signed_url_scan)
			reply_401(r, "invalid signature: a signed URL that names no sandbox is found only by "
				     "E2b-Sandbox-Id or a per-sandbox host name (signed_url.scan is off)");
		else
			reply_401(r, "invalid signature");
		return NULL;
	}
	/* the e2e tests read this line to check which way was taken */
	hu_log(HU_LOG_DEBUG, s->id, r->id, "signed URL: sandbox found by %s", how);
	return s;
}
