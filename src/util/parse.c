#include "util/parse.h"

#include <ctype.h>
#include <string.h>

/* Leading decimal digits into *v; returns the number of digits or -1 on overflow. */
static int digits(const char **s, uint64_t *v)
{
	int n = 0;
	*v = 0;
	while (isdigit((unsigned char)**s)) {
		uint64_t d = (uint64_t)(**s - '0');
		if (*v > (UINT64_MAX - d) / 10)
			return -1;
		*v = *v * 10 + d;
		(*s)++;
		n++;
	}
	return n;
}

int hu_parse_u64(const char *s, uint64_t *out, hu_err *err)
{
	const char *p = s;
	int n = digits(&p, out);
	if (n < 0)
		return hu_err_set(err, ERANGE, "'%s' is too large", s);
	if (n == 0 || *p)
		return hu_err_set(err, EINVAL, "'%s' is not a whole number", s);
	return 0;
}

static int mul_check(uint64_t v, uint64_t m, uint64_t *out)
{
	if (m && v > UINT64_MAX / m)
		return -1;
	*out = v * m;
	return 0;
}

int hu_parse_size(const char *s, uint64_t *out, hu_err *err)
{
	const char *p = s;
	uint64_t v, mult = 1;
	int n = digits(&p, &v);

	if (n <= 0)
		return hu_err_set(err, EINVAL, "'%s' is not a size (examples: 512M, 1G, 65536)", s);
	switch (toupper((unsigned char)*p)) {
	case 'K': mult = 1ull << 10; p++; break;
	case 'M': mult = 1ull << 20; p++; break;
	case 'G': mult = 1ull << 30; p++; break;
	case 'T': mult = 1ull << 40; p++; break;
	case 'B': case '\0': break;
	default: return hu_err_set(err, EINVAL, "'%s' is not a size (examples: 512M, 1G, 65536)", s);
	}
	if (mult > 1 && *p == 'i')
		p++;
	if (*p == 'B' || *p == 'b')
		p++;
	if (*p)
		return hu_err_set(err, EINVAL, "'%s' is not a size (examples: 512M, 1G, 65536)", s);
	if (mul_check(v, mult, out) < 0)
		return hu_err_set(err, ERANGE, "size '%s' is too large", s);
	return 0;
}

int hu_parse_duration_ms(const char *s, uint64_t *out, hu_err *err)
{
	const char *p = s;
	uint64_t v, mult;
	int n = digits(&p, &v);

	if (n <= 0)
		return hu_err_set(err, EINVAL, "'%s' is not a duration (examples: 30s, 500ms, 5m, 1h)", s);
	if (!strcmp(p, "ms"))
		mult = 1;
	else if (!strcmp(p, "s") || !*p)
		mult = 1000;
	else if (!strcmp(p, "m"))
		mult = 60000;
	else if (!strcmp(p, "h"))
		mult = 3600000;
	else
		return hu_err_set(err, EINVAL, "'%s' is not a duration (examples: 30s, 500ms, 5m, 1h)", s);
	if (mul_check(v, mult, out) < 0)
		return hu_err_set(err, ERANGE, "duration '%s' is too large", s);
	return 0;
}

int hu_parse_cpus(const char *s, uint32_t *out, hu_err *err)
{
	const char *p = s;
	uint64_t whole, frac = 0;
	int n = digits(&p, &whole);

	if (n < 0 || (n == 0 && *p != '.'))
		return hu_err_set(err, EINVAL, "'%s' is not a CPU count (examples: 1, 0.5, 2)", s);
	if (*p == '.') {
		p++;
		int places = 0;
		while (isdigit((unsigned char)*p)) {
			if (places < 3) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				places++;
			}
			p++;
		}
		while (places++ < 3)
			frac *= 10;
	}
	if (*p)
		return hu_err_set(err, EINVAL, "'%s' is not a CPU count (examples: 1, 0.5, 2)", s);
	if (whole > 1024)
		return hu_err_set(err, ERANGE, "CPU count '%s' is too large", s);
	*out = (uint32_t)(whole * 1000 + frac);
	if (*out == 0)
		return hu_err_set(err, EINVAL, "CPU count must be above 0");
	return 0;
}

int hu_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
