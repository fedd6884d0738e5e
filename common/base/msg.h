/*
 * msg.h: program name, verbosity, diagnostics on stderr, and the end of
 * the process. Every message has the err(3) shape "prog: what: reason".
 * Libraries report a failure with qb_fail and return its status; only a
 * tool's main (cmd/) decides to end with qb_die. Two ends stay here for
 * every caller: out of memory (qb_oom) and a broken invariant (qb_bug).
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
/*
 * Print as qb_die does (even when quiet) but return code instead of
 * exiting: a library's "return qb_fail(QB_EX_CONFIG, ...)" leaves the
 * decision to end to its caller.
 */
int qb_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, with ": strerror(errno)" appended. */
int qb_failsys(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * Out of memory: print "out of memory (N bytes)" (N omitted when 0) and
 * exit QB_EX_OSERR. Allocation that cannot fail (xmem.h) ends here.
 */
void qb_oom(size_t n) __attribute__((noreturn));
/*
 * A broken invariant inside qb (a caller's bug, not bad input): print
 * "internal error: ..." and exit QB_EX_SOFTWARE.
 */
void qb_bug(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/*
 * Write the reason fmt into err (errlen bytes, cut to fit) for a caller
 * to report, and return -1: "return qb_reason(err, errlen, ...)".
 */
int qb_reason(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Run fn when the process ends by exit(3), from main or from qb_die. */
void qb_atend(void (*fn)(void));

#endif
