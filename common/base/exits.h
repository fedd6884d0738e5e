/*
 * exits.h: the exit statuses of every qb tool (sysexits(3) numbers).
 * This is their only definition; qb.7 lists them for users.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_EXITS_H
#define QB_EXITS_H

#define QB_EX_OK          0   /* every record handled */
#define QB_EX_PARTIAL     1   /* finished; some records rejected or failed */
#define QB_EX_USAGE       64  /* bad options or operands */
#define QB_EX_DATAERR     65  /* bad input data under --strict */
#define QB_EX_NOINPUT     66  /* input file missing or unreadable */
#define QB_EX_UNAVAILABLE 69  /* service refused permanently (most 4xx) */
#define QB_EX_SOFTWARE    70  /* internal error */
#define QB_EX_OSERR       71  /* out of memory, syscall failure */
#define QB_EX_IOERR       74  /* read or write failure */
#define QB_EX_TEMPFAIL    75  /* timeout, 5xx, 429, lock held: re-run later */
#define QB_EX_PROTOCOL    76  /* the service answered something unparseable */
#define QB_EX_NOPERM      77  /* 401/403, bad signature */
#define QB_EX_CONFIG      78  /* no key, bad environment */

#endif
