/*
 * rfc3339.c: parse RFC 3339 date-times into unix seconds, strictly: every
 * field has its fixed width and range, and nothing may follow the offset.
 * SPDX-License-Identifier: ISC
 */
#include <string.h>
#include <time.h>

#include "base/rfc3339.h"

/* n decimal digits at *s, advancing it; -1 if they are not all digits. */
static int
digits(const char **s, int n)
{
	int v = 0;

	for (; n > 0; n--, (*s)++) {
		if (**s < '0' || **s > '9')
			return -1;
		v = v * 10 + (**s - '0');
	}
	return v;
}

static int
expect(const char **s, const char *any)
{
	if (**s == '\0' || strchr(any, **s) == NULL)
		return -1;
	(*s)++;
	return 0;
}

int
rfc3339_parse(const char *s, long long *t)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
	    30, 31 };
	struct tm tm;
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	time_t u;

	if ((y = digits(&s, 4)) < 0 || expect(&s, "-") ||
	    (mo = digits(&s, 2)) < 1 || mo > 12 || expect(&s, "-") ||
	    (d = digits(&s, 2)) < 1 || d > mdays[mo - 1] ||
	    expect(&s, "Tt ") || (h = digits(&s, 2)) < 0 || h > 23 ||
	    expect(&s, ":") || (mi = digits(&s, 2)) < 0 || mi > 59 ||
	    expect(&s, ":") || (sec = digits(&s, 2)) < 0 || sec > 60)
		return -1;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -1;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'Z' || *s == 'z')
		s++;
	else if (*s == '+' || *s == '-') {
		sign = *s++ == '-' ? -1 : 1;
		if ((oh = digits(&s, 2)) < 0 || oh > 23 || expect(&s, ":") ||
		    (om = digits(&s, 2)) < 0 || om > 59)
			return -1;
	} else
		return -1;
	if (*s != '\0')
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((u = timegm(&tm)) == (time_t)-1 && y != 1969)
		return -1;
	*t = (long long)u - sign * (oh * 3600LL + om * 60LL);
	return 0;
}
