/* The command line's one way to report an error (cli.h). */
#include <stdarg.h>
#include <stdio.h>

#include "cli/cli.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;
	fputs("hutch: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
