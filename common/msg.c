/*
 * msg.c: diagnostics. The only process-wide state of common/ lives here:
 * the program name and the verbosity level.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"

static const char *progname = "qb";
int qb_verbose;

void
qb_setprog(const char *argv0)
{
	const char *s;

	if (argv0 == NULL || *argv0 == '\0')
		return;
	s = strrchr(argv0, '/');
	progname = s ? s + 1 : argv0;
}

const char *
qb_prog(void)
{
	return progname;
}

static void
vmsg(const char *loc, unsigned long line, int err, const char *fmt, va_list ap)
{
	/* One fprintf per part, then one flush: stderr is unbuffered anyway. */
	fprintf(stderr, "%s: ", progname);
	if (loc != NULL)
		fprintf(stderr, "%s:%lu: ", loc, line);
	vfprintf(stderr, fmt, ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
}

void
qb_warn(const char *fmt, ...)
{
	va_list ap;

	if (qb_verbose < 0)
		return;
	va_start(ap, fmt);
	vmsg(NULL, 0, 0, fmt, ap);
	va_end(ap);
}

void
qb_warnsys(const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	if (qb_verbose < 0)
		return;
	va_start(ap, fmt);
	vmsg(NULL, 0, e, fmt, ap);
	va_end(ap);
}

void
qb_lwarn(const char *file, unsigned long line, const char *fmt, ...)
{
	va_list ap;

	if (qb_verbose < 0)
		return;
	va_start(ap, fmt);
	vmsg(file, line, 0, fmt, ap);
	va_end(ap);
}

void
qb_note(int level, const char *fmt, ...)
{
	va_list ap;

	if (qb_verbose < level)
		return;
	va_start(ap, fmt);
	vmsg(NULL, 0, 0, fmt, ap);
	va_end(ap);
}

void
qb_die(int code, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	va_start(ap, fmt);
	vmsg(NULL, 0, 0, fmt, ap);
	va_end(ap);
	exit(code);
}

void
qb_diesys(int code, const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	fflush(stdout);
	va_start(ap, fmt);
	vmsg(NULL, 0, e, fmt, ap);
	va_end(ap);
	exit(code);
}
