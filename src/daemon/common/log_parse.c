/* Parsing the daemon's log lines (log_parse.h). */
#include "daemon/common/log_parse.h"

#include <string.h>
#include <time.h>

/* "2026-11-29T10:00:00.123Z" -> unix ms; -1 if it is not exactly that. */
static int64_t parse_time(const char *s, size_t n)
{
	struct tm tm = {0};
	int ms;

	if (n != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' ||
	    s[23] != 'Z')
		return -1;
	for (size_t i = 0; i < n; i++)
		if (i != 4 && i != 7 && i != 10 && i != 13 && i != 16 && i != 19 && i != 23 && (s[i] < '0' || s[i] > '9'))
			return -1;
	int v[6];
	static const int at[6] = {0, 5, 8, 11, 14, 17}, width[6] = {4, 2, 2, 2, 2, 2};
	for (int i = 0; i < 6; i++) {
		v[i] = 0;
		for (int j = 0; j < width[i]; j++)
			v[i] = v[i] * 10 + (s[at[i] + j] - '0');
	}
	ms = (s[20] - '0') * 100 + (s[21] - '0') * 10 + (s[22] - '0');
	if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60)
		return -1;
	tm.tm_year = v[0] - 1900;
	tm.tm_mon = v[1] - 1;
	tm.tm_mday = v[2];
	tm.tm_hour = v[3];
	tm.tm_min = v[4];
	tm.tm_sec = v[5];
	return (int64_t)timegm(&tm) * 1000 + ms;
}

/* "name=value " (value without spaces) at *p; copies value (truncation is
 * an error) and moves *p past the space. */
static int field(const char **p, const char *end, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);
	if ((size_t)(end - *p) < nl + 1 || memcmp(*p, name, nl) || (*p)[nl] != '=')
		return -1;
	const char *v = *p + nl + 1, *sp = memchr(v, ' ', (size_t)(end - v));
	if (!sp || (size_t)(sp - v) >= cap || sp == v)
		return -1;
	memcpy(out, v, (size_t)(sp - v));
	out[sp - v] = '\0';
	if (!strcmp(out, "-"))
		out[0] = '\0';
	*p = sp + 1;
	return 0;
}

/* msg="..." up to the end of the line, unescaped. */
static int message(const char *p, const char *end, char *out, size_t cap)
{
	size_t o = 0;

	if (end - p < 6 || memcmp(p, "msg=\"", 5) || end[-1] != '"')
		return -1;
	for (p += 5, end--; p < end; p++) {
		char c = *p;
		if (o + 1 >= cap)
			return -1;
		if (c == '"')
			return -1; /* unescaped quote: not ours */
		if (c != '\\') {
			out[o++] = c;
			continue;
		}
		if (++p >= end)
			return -1;
		switch (*p) {
		case '"': case '\\': out[o++] = *p; break;
		case 'n': out[o++] = '\n'; break;
		case 'r': out[o++] = '\r'; break;
		case 't': out[o++] = '\t'; break;
		case 'x': {
			if (end - p < 3)
				return -1;
			int v = 0;
			for (int i = 1; i <= 2; i++) {
				char h = p[i];
				int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
				if (d < 0)
					return -1;
				v = v * 16 + d;
			}
			if (v == 0)
				return -1; /* no NUL inside a C string */
			out[o++] = (char)v;
			p += 2;
			break;
		}
		default:
			return -1;
		}
	}
	out[o] = '\0';
	return 0;
}

int hu_log_parse_line(const char *line, size_t len, struct hu_log_entry *e)
{
	const char *end = line + len, *p = line;

	while (end > p && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	const char *sp = memchr(p, ' ', (size_t)(end - p));
	if (!sp || (size_t)(sp - p) >= sizeof(e->time))
		return -1;
	memcpy(e->time, p, (size_t)(sp - p));
	e->time[sp - p] = '\0';
	e->time_ms = parse_time(p, (size_t)(sp - p));
	if (e->time_ms < 0)
		return -1;
	p = sp + 1;
	if (field(&p, end, "level", e->level, sizeof(e->level)) < 0 ||
	    field(&p, end, "sandbox", e->sandbox, sizeof(e->sandbox)) < 0 || field(&p, end, "req", e->req, sizeof(e->req)) < 0)
		return -1;
	if (strcmp(e->level, "debug") && strcmp(e->level, "info") && strcmp(e->level, "warn") && strcmp(e->level, "error"))
		return -1;
	return message(p, end, e->msg, sizeof(e->msg));
}
