/* A sandbox's egress rules as JSON, both ways (net_rules_json.h). */
#include "daemon/sandboxes/net_rules_json.h"

#include <string.h>

/* A list's IPv4 entries, then its IPv6 ones. */
static json_t *cidr_array(const struct hu_cidr4 *list, unsigned n, const struct hu_cidr6 *list6, unsigned n6)
{
	json_t *a = json_array();
	char buf[HU_CIDR6_TEXT];

	for (unsigned i = 0; a && i < n + n6; i++) {
		if (i < n)
			hu_cidr4_format(&list[i], buf, sizeof(buf));
		else
			hu_cidr6_format(&list6[i - n], buf, sizeof(buf));
		if (json_array_append_new(a, json_string(buf)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

json_t *hu_net_rules_json(const struct hu_net_rules *r)
{
	json_t *allow = cidr_array(r->allow, r->n_allow, r->allow6, r->n_allow6);
	/* then the domain names, in their canonical form */
	for (unsigned i = 0; allow && i < r->n_allow_dom; i++)
		if (json_array_append_new(allow, json_string(hu_net_rules_domain(r, i))) < 0) {
			json_decref(allow);
			return NULL;
		}
	return json_pack("{s:o?, s:o?}", "allowOut", allow, "denyOut", cidr_array(r->deny, r->n_deny, r->deny6, r->n_deny6));
}

static int rule_list(const json_t *net, const char *name, struct hu_net_rules *rules, hu_err *err)
{
	const json_t *list = json_object_get(net, name), *v;
	size_t i;

	if (!list || json_is_null(list))
		return 0;
	if (!json_is_array(list))
		return hu_err_set(err, -EINVAL, "network.%s must be an array of IPs or CIDRs", name);
	json_array_foreach(list, i, v) {
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return hu_err_set(err, -EINVAL, "network.%s[%zu] must be a string", name, i);
		if (hu_net_rules_add(rules, name[0] == 'a' ? 'a' : 'd', json_string_value(v), err) < 0) {
			hu_err_prefix(err, "network");
			return -1;
		}
	}
	return 0;
}

int hu_net_rules_from_json(const json_t *net, struct hu_net_rules *rules, hu_err *err)
{
	memset(rules, 0, sizeof(*rules));
	if (!json_is_object(net))
		return hu_err_set(err, -EINVAL, "network must be an object");
	if (rule_list(net, "allowOut", rules, err) < 0 || rule_list(net, "denyOut", rules, err) < 0)
		return -1;
	if (hu_net_rules_check(rules, err) < 0) {
		hu_err_prefix(err, "network");
		return -1;
	}
	return 0;
}
