#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int vset(hu_err *err, int code, const char *fmt, va_list ap)
{
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (n < 0)
		n = 0;
	if (code > 0 && (size_t)n < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", strerror(code));
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
