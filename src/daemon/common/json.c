/* JSON helpers (json.h). */
#include "daemon/common/json.h"

#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"

json_t *hu_json_text(const char *s)
{
	json_t *j;

	if (!s)
		s = "";
	j = json_string(s);
	if (j)
		return j;
	_cleanup_free_ char *ascii = strdup(s);
	if (!ascii)
		return NULL;
	for (char *c = ascii; *c; c++)
		if ((unsigned char)*c >= 0x80)
			*c = '?';
	return json_string(ascii);
}

int hu_json_parse_object(const uint8_t *buf, size_t len, json_t **out, hu_err *err)
{
	json_error_t jerr;
	json_t *j = json_loadb((const char *)buf, len, JSON_DECODE_ANY, &jerr);

	if (!j)
		return hu_err_set(err, -EINVAL, "not valid JSON: %s (line %d, column %d)", jerr.text, jerr.line,
				  jerr.column);
	if (!json_is_object(j)) {
		json_decref(j);
		return hu_err_set(err, -EINVAL, "not a JSON object");
	}
	*out = j;
	return 0;
}
