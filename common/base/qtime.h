/*
 * qtime.h: clocks and sleeping, in seconds as doubles.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_QTIME_H
#define QB_QTIME_H

/* Seconds on a clock that never jumps (CLOCK_MONOTONIC): for deadlines. */
double qtime_mono(void);
/* Seconds since the Epoch (CLOCK_REALTIME): for leases other hosts read. */
double qtime_wall(void);
/* Sleep s seconds (nothing if s <= 0), resuming after signals. */
void qtime_sleep(double s);

#endif
