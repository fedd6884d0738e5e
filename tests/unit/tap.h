/*
 * tap.h: the few TAP helpers the C unit tests share.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_TAP_H
#define QB_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_n, tap_fail;

#define TAP_OK(cond, desc) tap_ok((cond) != 0, (desc))
static void
tap_ok(int good, const char *desc)
{
	printf("%sok %d - %s\n", good ? "" : "not ", ++tap_n, desc);
	if (!good)
		tap_fail = 1;
}

static void
tap_is(const char *got, const char *want, const char *desc)
{
	int good = got != NULL && strcmp(got, want) == 0;

	tap_ok(good, desc);
	if (!good)
		printf("# got:  %s\n# want: %s\n", got ? got : "(null)", want);
}

static int
tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_fail;
}

#endif
