/*
 * msg.h: program name, verbosity and diagnostics on stderr.
 * Every message has the err(3) shape "prog: what: reason".
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_MSG_H
#define QB_MSG_H

#include <stddef.h>

/* Set the name used in messages from argv[0] (its basename); call first. */
void qb_setprog(const char *argv0);
const char *qb_prog(void);

/* Verbosity: -1 quiet (fatal errors only), 0 normal, 1 -v, 2 -vv. */
extern int qb_verbose;

/* Print "prog: fmt\n" to stderr (suppressed when quiet). */
void qb_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, with ": strerror(errno)" appended. */
void qb_warnsys(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "prog: FILE:LINE: fmt\n": a located diagnostic about one record. */
void qb_lwarn(const char *file, unsigned long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Print when qb_verbose >= level. */
void qb_note(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print (even when quiet) and exit with status code (a QB_EX_* value). */
void qb_die(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* Same, with ": strerror(errno)" appended. */
void qb_diesys(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

#endif
