#include "util/hex.h"

#include <stdint.h>
#include <sys/random.h>

#define HU_RANDOM_MAX 256

void hu_hex_encode(const void *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *b = in;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

int hu_random_hex(char *out, size_t n, hu_err *err)
{
	uint8_t rnd[HU_RANDOM_MAX];

	if (n > sizeof(rnd))
		return hu_err_set(err, EINVAL, "random: %zu bytes asked, at most %d", n, HU_RANDOM_MAX);
	if (getrandom(rnd, n, 0) != (ssize_t)n)
		return hu_err_sys(err, "getrandom");
	hu_hex_encode(rnd, n, out);
	return 0;
}
