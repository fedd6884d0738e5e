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

#include "base/exits.h"
#include "base/msg.h"
#include "base/redact.h"

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
put_stderr(void *arg, const char *p, size_t n)
{
	fwrite(p, 1, n, stderr);
}

/*
 * Every message is redacted (redact.h) on its way to stderr, so that a
 * key in a URL's userinfo, a query parameter or a header never reaches a
 * log, whichever module printed it.
 */
static void
vmsg(const char *loc, unsigned long line, int err, const char *fmt, va_list ap)
{
	char stack[2048], *text = stack;
	va_list aq;
	int n;

	va_copy(aq, ap);
	n = vsnprintf(stack, sizeof(stack), fmt, ap);
	if (n >= (int)sizeof(stack) && (text = malloc((size_t)n + 1)) != NULL)
		vsnprintf(text, (size_t)n + 1, fmt, aq);
	else if (text == NULL)
		text = stack;
	va_end(aq);
	fprintf(stderr, "%s: ", progname);
	if (loc != NULL)
		fprintf(stderr, "%s:%lu: ", loc, line);
	redact_to(put_stderr, NULL, text, strlen(text));
	if (text != stack)
		free(text);
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

int
qb_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(NULL, 0, 0, fmt, ap);
	va_end(ap);
	return code;
}

int
qb_failsys(int code, const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	va_start(ap, fmt);
	vmsg(NULL, 0, e, fmt, ap);
	va_end(ap);
	return code;
}

void
qb_oom(size_t n)
{
	if (n > 0)
		qb_die(QB_EX_OSERR, "out of memory (%zu bytes)", n);
	qb_die(QB_EX_OSERR, "out of memory");
}

void
qb_bug(const char *fmt, ...)
{
	va_list ap;
	char text[512];

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	qb_die(QB_EX_SOFTWARE, "internal error: %s", text);
}

int
qb_reason(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

void
qb_atend(void (*fn)(void))
{
	atexit(fn);
}
