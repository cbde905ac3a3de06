// fuzz-sources: src/daemon/sandboxes/provision_line.c
/*
 * libFuzzer driver for the code interpreter recipe's progress lines
 * (daemon/sandboxes/provision.h): the input is one line of the recipe
 * script's output, which a recipe of an operator's (or a mirror's message
 * repeated by apt) may shape at will. Whatever parses must give a step
 * within its count, and both texts printable C strings within their buffers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/provision.h"

static void printable(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);
	if (n == cap)
		abort();
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] >= 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hu_provision_progress p;

	memset(&p, 0, sizeof(p));
	int step = hu_provision_parse_line(&p, (const char *)data, size);
	if (step && (p.step == 0 || p.step > p.steps || p.steps > 99))
		abort();
	if (!step && (p.step || p.steps || p.what[0]))
		abort();
	printable(p.last, sizeof(p.last));
	printable(p.what, sizeof(p.what));
	return 0;
}
