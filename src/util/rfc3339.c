/* RFC 3339 times (rfc3339.h). */
#include "util/rfc3339.h"

#include <ctype.h>
#include <stdio.h>
#include <time.h>

void hu_rfc3339_format(int64_t unix_ms, char buf[HU_TIME_STR_MAX])
{
	time_t secs = (time_t)(unix_ms / 1000);
	int ms = (int)(unix_ms % 1000);
	struct tm tm;

	if (ms < 0) { /* floor division for times before 1970 */
		ms += 1000;
		secs--;
	}
	if (!gmtime_r(&secs, &tm)) {
		snprintf(buf, HU_TIME_STR_MAX, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(buf, HU_TIME_STR_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

/* Exactly `n` digits at *p, advancing it; -1 if not. */
static int digits(const char **p, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (!isdigit((unsigned char)**p))
			return -1;
		v = v * 10 + (**p - '0');
	}
	return v;
}

static int days_in_month(int y, int m)
{
	static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : dm[m - 1];
}

int hu_rfc3339_parse(const char *s, int64_t *unix_ms, hu_err *err)
{
	const char *p = s;
	int y, mo, d, h, mi, sec, ms = 0, off = 0;
	struct tm tm = {0};

	y = digits(&p, 4);
	if (y < 0 || *p++ != '-' || (mo = digits(&p, 2)) < 1 || mo > 12 || *p++ != '-' || (d = digits(&p, 2)) < 1 ||
	    d > days_in_month(y, mo) || (*p != 'T' && *p != 't' && *p != ' '))
		return hu_err_set(err, -EINVAL, "'%.64s' is not an RFC 3339 time (2026-01-31T10:00:00Z)", s);
	p++;
	if ((h = digits(&p, 2)) < 0 || h > 23 || *p++ != ':' || (mi = digits(&p, 2)) < 0 || mi > 59 ||
	    *p++ != ':' || (sec = digits(&p, 2)) < 0 || sec > 60)
		return hu_err_set(err, -EINVAL, "'%.64s' is not an RFC 3339 time (2026-01-31T10:00:00Z)", s);
	if (*p == '.') {
		int scale = 100, nd = 0;
		for (p++; isdigit((unsigned char)*p); p++, nd++) {
			ms += (*p - '0') * scale;
			scale /= 10;
		}
		if (nd == 0)
			return hu_err_set(err, -EINVAL, "'%.64s': empty fraction of a second", s);
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1, oh, om;
		if ((oh = digits(&p, 2)) < 0 || oh > 23 || *p++ != ':' || (om = digits(&p, 2)) < 0 || om > 59)
			return hu_err_set(err, -EINVAL, "'%.64s': bad UTC offset", s);
		off = sign * (oh * 60 + om);
	} else {
		return hu_err_set(err, -EINVAL, "'%.64s': missing time zone (Z or +hh:mm)", s);
	}
	if (*p)
		return hu_err_set(err, -EINVAL, "'%.64s': trailing characters", s);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	*unix_ms = ((int64_t)timegm(&tm) - (int64_t)off * 60) * 1000 + ms;
	return 0;
}
