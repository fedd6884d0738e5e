/*
 * qtime.c: clocks and sleeping.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <time.h>

#include "base/qtime.h"

static double
now(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double
qtime_mono(void)
{
	return now(CLOCK_MONOTONIC);
}

double
qtime_wall(void)
{
	return now(CLOCK_REALTIME);
}

void
qtime_sleep(double s)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		continue;
}
