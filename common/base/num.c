/*
 * num.c: checked number parsing.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "base/num.h"

long long
num_strtonum(const char *s, long long min, long long max, const char **errstr)
{
	char *end;
	long long v;

	*errstr = "invalid";
	if (s == NULL || *s == '\0' || min > max)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0')
		return 0;
	if ((v == LLONG_MIN && errno == ERANGE) || v < min) {
		*errstr = "too small";
		return 0;
	}
	if ((v == LLONG_MAX && errno == ERANGE) || v > max) {
		*errstr = "too large";
		return 0;
	}
	*errstr = NULL;
	return v;
}

long long
num_bytes(const char *s, long long max, const char **errstr)
{
	char *end;
	long long v, mul = 1;

	*errstr = "invalid";
	if (s == NULL || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno == ERANGE) {
		*errstr = "too large";
		return 0;
	}
	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		mul = 1000;
		end++;
		break;
	case 'm': case 'M':
		mul = 1000 * 1000;
		end++;
		break;
	case 'g': case 'G':
		mul = 1000 * 1000 * 1000;
		end++;
		break;
	default:
		return 0;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0')
		return 0;
	if (v > max / mul) {
		*errstr = "too large";
		return 0;
	}
	v *= mul;
	if (v < 1) {
		*errstr = "too small";
		return 0;
	}
	*errstr = NULL;
	return v;
}

double
num_seconds(const char *s, const char **errstr)
{
	char *end;
	double v;

	*errstr = "invalid";
	if (s == NULL || ((*s < '0' || *s > '9') && *s != '.'))
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (errno == ERANGE || !isfinite(v)) {
		*errstr = "too large";
		return 0;
	}
	switch (*end) {
	case 'h':
		v *= 3600;
		end++;
		break;
	case 'm':
		v *= 60;
		end++;
		break;
	case 's':
		end++;
		break;
	}
	if (*end != '\0')
		return 0;
	*errstr = NULL;
	return v;
}
