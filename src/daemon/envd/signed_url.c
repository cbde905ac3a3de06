/*
 * Signed /files URLs (signed_url.h).
 *
 * Finding the sandbox. A signed URL made with one shared E2B_SANDBOX_URL
 * carries path, operation, user, expiration and a signature, and nothing
 * else: the sandbox is named only implicitly, through the secret token
 * inside the hash. So hutch looks, in this order:
 *
 *  1. E2b-Sandbox-Id, when a client sends it: one hash, one compare.
 *  2. The Host name, when it has E2B's per-sandbox form
 *     `<port>-<sandboxID>.<domain>` (deployments with wildcard DNS, the way
 *     E2B itself routes): one hash, one compare.
 *  3. The signature index in the registry (hu_registry_sig_hint): a hash
 *     map from the signature to the sandbox that verified it before, so a
 *     URL that is fetched again (the usual case: a link handed out once and
 *     used many times) costs one hash map lookup, one hash and one compare.
 *     The entry is only a hint and is verified like a fresh signature.
 *  4. A signature seen for the first time with no name at all: it is tried
 *     against the tokens of the running sandboxes, with the hash state of
 *     the common prefix "path:op:user:" computed once (each candidate then
 *     costs one or two SHA-256 blocks, about a microsecond). This cannot be
 *     avoided: the request holds no data that depends on the sandbox except
 *     the keyed hash itself, so any index would have to be keyed by a value
 *     that only a token can compute. The scan is what an unauthenticated
 *     client with random signatures can make the daemon do, so it is rate
 *     limited for the whole daemon (SCAN_RATE a second, bursts of
 *     SCAN_BURST): above it such a request is a 429 at the cost of a table
 *     lookup, and steps 1-3 keep working for every link seen before.
 *     docs/security.md discusses the cost (bounded by max_sandboxes) and how
 *     to avoid it (step 2).
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

bool hu_signed_check(struct hu_req *r, const struct hu_sbx *s)
{
	struct signed_ctx c;
	if (!prepare(r, &c))
		return false;
	if (!verify_one(&c, s)) {
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

struct hu_sbx *hu_signed_resolve(struct hu_req *r)
{
	struct hu_registry *reg = hu_req_daemon(r)->reg;
	struct signed_ctx c;
	struct hu_sbx *s = NULL;
	char id[HU_ID_MAX];

	if (!prepare(r, &c))
		return NULL;
	if (!reg) {
		reply_401(r, "invalid signature");
		return NULL;
	}
	const char *how = "host name";
	if (hu_signed_host_id(hu_req_header(r, "Host"), id, sizeof(id))) {
		s = hu_registry_get(reg, id);
		if (s && !verify_one(&c, s))
			s = NULL;
	} else {
		const char *hint = hu_registry_sig_hint(reg, c.sig.digest);
		how = "signature index";
		if (hint && (s = hu_registry_get(reg, hint)) && !verify_one(&c, s))
			s = NULL;
		if (!s && !hu_ratelimit_take(&scan_budget, hu_mono_ms())) {
			hu_reply_error(r, 429, "too many signed URLs not seen before: retry later, or send "
					       "E2b-Sandbox-Id (or use per-sandbox host names)");
			return NULL;
		}
		if (!s && (s = scan_tokens(reg, &c))) {
			how = "token scan";
			hu_registry_sig_remember(reg, c.sig.digest, s->id);
		}
	}
	if (!s) {
		reply_401(r, "invalid signature");
		return NULL;
	}
	/* the e2e tests read this line to check which way was taken */
	hu_log(HU_LOG_DEBUG, s->id, r->id, "signed URL: sandbox found by %s", how);
	return s;
}
