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

#include "buf.h"
#include "msg.h"
#include "redact.h"

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

/*
 * Every message is redacted (redact.h) before it is shown, so that a key
 * in a URL's userinfo, a query parameter or a header never reaches a log,
 * whichever module printed it. Re-entered (redact's allocation failed and
 * xmem dies), a message is shown as it is: xmem's own holds no key.
 */
static void
vmsg(const char *loc, unsigned long line, int err, const char *fmt, va_list ap)
{
	static int inside;
	struct buf b = BUF_INIT;
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
	if (inside)
		fputs(text, stderr);
	else {
		inside = 1;
		redact(&b, text, strlen(text));
		fputs(b.p, stderr);
		buf_free(&b);
		inside = 0;
	}
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
