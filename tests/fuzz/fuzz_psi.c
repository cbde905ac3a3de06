/* PSI text (src/util/psi.c): any bytes give -1 or a share in 0..100. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/psi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	double v = hu_psi_some_avg10(text);
	assert(v == -1 || (v >= 0 && v <= 100));
	free(text);
	return 0;
}
