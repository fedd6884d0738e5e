/*
 * num.h: checked number parsing for options and environment values,
 * in the manner of OpenBSD strtonum(3); never atoi.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_NUM_H
#define QB_NUM_H

/*
 * Parse a decimal integer in [min, max]. On success returns it and sets
 * *errstr to NULL; on failure returns 0 and sets *errstr to "invalid",
 * "too small" or "too large" (static strings).
 */
long long num_strtonum(const char *s, long long min, long long max,
    const char **errstr);

/*
 * Parse a byte count in [1, max]: digits with an optional suffix k, M or G
 * (powers of 1000, as providers state their limits: 200 MB = 200000000).
 * Errors as num_strtonum.
 */
long long num_bytes(const char *s, long long max, const char **errstr);

/*
 * Parse a duration in seconds: a non-negative decimal, optionally with a
 * fraction and a suffix s, m or h. Returns seconds; errors as num_strtonum.
 */
double num_seconds(const char *s, const char **errstr);

#endif
