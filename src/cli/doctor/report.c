/*
 * The doctor's report: how a check words its finding and verdict, and the
 * two ways all results are printed (one line per check, or one JSON object).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/doctor/doctor.h"

static void vappendf(char *buf, size_t n, const char *fmt, va_list ap)
{
	size_t used = strnlen(buf, n);
	if (used + 1 < n)
		vsnprintf(buf + used, n - used, fmt, ap);
}

void doctor_appendf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vappendf(buf, n, fmt, ap);
	va_end(ap);
}

void doctor_found(struct doctor_result *r, const char *fmt, ...)
{
	va_list ap;
	if (r->finding[0])
		doctor_appendf(r->finding, sizeof(r->finding), "; ");
	va_start(ap, fmt);
	vappendf(r->finding, sizeof(r->finding), fmt, ap);
	va_end(ap);
}

void doctor_verdict(struct doctor_result *r, enum doctor_status st, const char *fmt, ...)
{
	va_list ap;
	if (st > r->status)
		r->status = st;
	if (r->disables[0])
		doctor_appendf(r->disables, sizeof(r->disables), "; ");
	va_start(ap, fmt);
	vappendf(r->disables, sizeof(r->disables), fmt, ap);
	va_end(ap);
}

static const char *status_word(enum doctor_status s, bool json)
{
	switch (s) {
	case DOCTOR_OK: return "ok";
	case DOCTOR_WARN: return "warn";
	default: return json ? "fail" : "FAIL";
	}
}

/* Length of the valid UTF-8 sequence at p, 0 if invalid: JSON must be UTF-8,
 * and findings quote kernel and file-system text the doctor does not control. */
static size_t utf8_seq(const unsigned char *p)
{
	size_t len;
	uint32_t cp;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

static void json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	while (*p) {
		if (*p == '"' || *p == '\\') {
			putchar('\\');
			putchar(*p++);
		} else if (*p < 0x20 || *p == 0x7f) {
			printf("\\u%04x", *p++);
		} else if (*p < 0x80) {
			putchar(*p++);
		} else {
			size_t len = utf8_seq(p);
			if (len == 0) {
				fputs("\\ufffd", stdout);
				p++;
			} else {
				fwrite(p, 1, len, stdout);
				p += len;
			}
		}
	}
	putchar('"');
}

void doctor_print_text(const struct doctor_result *res, size_t n, const int count[3])
{
	for (size_t i = 0; i < n; i++) {
		const struct doctor_result *r = &res[i];
		printf("%-4s %s: %s", status_word(r->status, false), r->name, r->finding);
		if (r->status != DOCTOR_OK && r->disables[0])
			printf(" \u2014 %s", r->disables);
		putchar('\n');
	}
	printf("\n%d ok, %d warn, %d FAIL: %s\n", count[DOCTOR_OK], count[DOCTOR_WARN], count[DOCTOR_FAIL],
	       count[DOCTOR_FAIL] ? "sandboxes cannot run on this host until every FAIL is fixed"
				  : "this host can run hutch sandboxes");
}

void doctor_print_json(const struct doctor_result *res, size_t n, const int count[3])
{
	printf("{\n  \"ok\": %s,\n  \"summary\": {\"ok\": %d, \"warn\": %d, \"fail\": %d},\n  \"checks\": [",
	       count[DOCTOR_FAIL] ? "false" : "true", count[DOCTOR_OK], count[DOCTOR_WARN], count[DOCTOR_FAIL]);
	for (size_t i = 0; i < n; i++) {
		const struct doctor_result *r = &res[i];
		printf("%s\n    {\"name\": ", i ? "," : "");
		json_str(r->name);
		printf(", \"status\": \"%s\", \"finding\": ", status_word(r->status, true));
		json_str(r->finding);
		fputs(", \"disables\": ", stdout);
		if (r->status != DOCTOR_OK && r->disables[0])
			json_str(r->disables);
		else
			fputs("null", stdout);
		putchar('}');
	}
	printf("\n  ]\n}\n");
}
