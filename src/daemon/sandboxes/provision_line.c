/* The code interpreter recipe's progress lines (provision.h), pure: no I/O. */
#include <stdio.h>
#include <string.h>

#include "daemon/sandboxes/provision.h"

#define PREFIX "code-interpreter: "
#define STEP "step "

const char *hu_provision_state_name(enum hu_provision_state s)
{
	switch (s) {
	case HU_PROV_OFF: return "off";
	case HU_PROV_CHECKING: return "checking";
	case HU_PROV_BUILDING: return "building";
	case HU_PROV_WAITING: return "waiting";
	case HU_PROV_READY: return "ready";
	case HU_PROV_FAILED: return "failed";
	}
	return "unknown";
}

/* A decimal number of 1 or 2 digits at *p, moved past it; -1 if none. */
static int small_number(const char **p, const char *end)
{
	int n = 0, digits = 0;
	while (*p < end && **p >= '0' && **p <= '9' && digits < 3) {
		n = n * 10 + (**p - '0');
		(*p)++;
		digits++;
	}
	return digits >= 1 && digits <= 2 ? n : -1;
}

/* Printable ASCII only, so what the log and the API show is one clean line. */
static void copy_clean(char *dst, size_t cap, const char *src, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 1 < cap; i++)
		dst[o++] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[o] = '\0';
}

int hu_provision_parse_line(struct hu_provision_progress *p, const char *line, size_t len)
{
	const char *end = line + len, *c = line;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		end = line + --len;
	/* the recipe's own prefix is left out of what the log and the API show */
	size_t skip = len >= strlen(PREFIX) && !memcmp(line, PREFIX, strlen(PREFIX)) ? strlen(PREFIX) : 0;
	copy_clean(p->last, sizeof(p->last), line + skip, len - skip);
	if (len < strlen(PREFIX STEP) || memcmp(c, PREFIX STEP, strlen(PREFIX STEP)))
		return 0;
	c += strlen(PREFIX STEP);
	int n = small_number(&c, end);
	if (n <= 0 || c >= end || *c != '/')
		return 0;
	c++;
	int m = small_number(&c, end);
	if (m < n || c + 1 >= end || c[0] != ':' || c[1] != ' ')
		return 0;
	c += 2;
	p->step = (unsigned)n;
	p->steps = (unsigned)m;
	copy_clean(p->what, sizeof(p->what), c, (size_t)(end - c));
	return 1;
}
