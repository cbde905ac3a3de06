// fuzz-sources: src/daemon/api/api_json.c src/daemon/api/metadata_filter.c src/daemon/api/mounts_json.c src/runtime/mount_target.c src/runtime/netaddr.c src/runtime/netaddr6.c src/runtime/netdomain.c src/daemon/sandboxes/net_rules_json.c
/*
 * libFuzzer driver for the control plane's input decoders. A JSON input is
 * fed to every body decoder (NewSandbox, timeout, refresh, connect, pause,
 * network update);
 * any input is also split at newlines into the list query parameters and
 * tried as an RFC 3339 time. Decoders must never crash or leak, must hand
 * out nothing on failure, and what they accept must be in range.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/rfc3339.h"
#include "daemon/api/api_json.h"
#include "daemon/sandboxes/registry.h"

static void bodies(const json_t *body)
{
	struct hu_new_sandbox ns;
	struct hu_connect_req c;
	int32_t secs;
	int present, memory;
	hu_err err;

	if (hu_api_decode_new_sandbox(body, &ns, &err) == 0) {
		/* -1 is "never"; reclaimAfter 0 means "not given" */
		if (ns.timeout_s < -1 || ns.timeout_s > HU_TIMEOUT_MAX_S || ns.reclaim_after_s < -1 ||
		    ns.reclaim_after_s > HU_RECLAIM_MAX_S || !json_is_object(ns.metadata) ||
		    !json_is_object(ns.env_vars) || strlen(ns.template_id) == 0)
			abort();
		hu_new_sandbox_clear(&ns);
	} else if (ns.metadata || ns.env_vars || ns.mounts) {
		abort();
	}
	if (hu_api_decode_timeout(body, &secs, &err) == 0 && (secs < -1 || secs > HU_TIMEOUT_MAX_S))
		abort();
	if (hu_api_decode_refresh(body, &present, &secs, &err) == 0 && present && (secs < -1 || secs > HU_TIMEOUT_MAX_S))
		abort();
	if (hu_api_decode_connect(body, &c, &err) == 0 && c.has_timeout && (c.timeout_s < -1 || c.timeout_s > HU_TIMEOUT_MAX_S))
		abort();
	hu_api_decode_pause(body, &memory, &err);
	struct hu_net_rules rules;
	int allow;
	if (hu_api_decode_network_update(body, &rules, &allow, &err) == 0 &&
	    (rules.n_allow > HU_NET_RULES_MAX || rules.n_deny > HU_NET_RULES_MAX || allow < -1 || allow > 1))
		abort();
	if (hu_api_decode_new_sandbox(body, &ns, &err) == 0) {
		for (unsigned i = 0; i < ns.net.n_allow; i++)
			if (ns.net.allow[i].len > 32)
				abort();
		hu_new_sandbox_clear(&ns);
	}
}

/* Up to seven newline-separated fields -> the list query parameters. */
static void list_query(char *text)
{
	const char *f[7] = {0};
	struct hu_list_params p;
	struct hu_list_query q;
	char token[HU_LIST_TOKEN_MAX];
	hu_err err;
	int n = 0;

	for (char *s = text; s && n < 7; n++) {
		f[n] = s;
		s = strchr(s, '\n');
		if (s)
			*s++ = '\0';
	}
	p = (struct hu_list_params){f[0], f[1], f[2], f[3], f[4], f[5], f[6]};
	if (hu_api_decode_list_query(&p, &q, &err) == 0) {
		if (q.limit < 1 || q.limit > HU_LIST_MAX_LIMIT || !q.states)
			abort();
		if (q.has_cursor) { /* a token must survive its own round trip */
			struct hu_list_params p2 = {.next_token = token};
			struct hu_list_query q2;
			hu_list_token_encode(q.cursor_started_ms, q.cursor_id, token);
			if (hu_api_decode_list_query(&p2, &q2, &err) < 0 || q2.cursor_started_ms != q.cursor_started_ms ||
			    strcmp(q2.cursor_id, q.cursor_id))
				abort();
		}
		hu_list_query_clear(&q);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	char buf[HU_TIME_STR_MAX];
	json_error_t jerr;
	json_t *body;
	int64_t ms;
	hu_err err;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	body = json_loadb((const char *)data, size, JSON_DECODE_ANY, &jerr);
	if (body) {
		bodies(body);
		json_decref(body);
	}
	if (hu_rfc3339_parse(text, &ms, &err) == 0)
		hu_rfc3339_format(ms, buf);
	list_query(text);
	free(text);
	return 0;
}
