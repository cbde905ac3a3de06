#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* strerror's text without strerror: strerror translates through gettext,
 * which takes glibc's locale locks (global writes). hutch never calls
 * setlocale, so the untranslated text is the same one, and this way a
 * CLONE_VM child of hutch-init (init/spawn.c) can fill a hu_err without
 * writing a byte of init's memory. */
static void put_errno_text(char *buf, size_t size, int code)
{
	const char *text = strerrordesc_np(code);
	if (text)
		snprintf(buf, size, ": %s", text);
	else
		snprintf(buf, size, ": Unknown error %d", code);
}

static int vset(hu_err *err, int code, const char *fmt, va_list ap)
{
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (n < 0)
		n = 0;
	if (code > 0 && (size_t)n < sizeof(err->msg))
		put_errno_text(err->msg + n, sizeof(err->msg) - (size_t)n, code);
	err->code = code > 0 ? code : (code < 0 ? -code : EIO);
	return -1;
}

int hu_err_set(hu_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(err, code, fmt, ap);
	va_end(ap);
	return -1;
}

int hu_err_sys(hu_err *err, const char *fmt, ...)
{
	int code = errno ? errno : EIO;
	va_list ap;
	va_start(ap, fmt);
	vset(err, code, fmt, ap);
	va_end(ap);
	return -1;
}

void hu_err_prefix(hu_err *err, const char *fmt, ...)
{
	char head[HU_ERR_MSG_MAX];
	char old[HU_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%s: %s", head, old);
}
