/*
 * redact.c: credentials out of shown text (redact.h). One left-to-right
 * pass; at each byte it tries, in turn, a URL's userinfo, a credential
 * query parameter, a credential header and a bearer token, and copies the
 * byte when none starts there.
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "redact.h"

static const char *const qnames[] = { "key", "api-key", "api_key", "apikey",
	"access_token", "token", "sig", "signature", "x-goog-api-key", NULL };
static const char *const hnames[] = { "authorization", "proxy-authorization",
	"api-key", "x-api-key", "x-goog-api-key", "x-amz-security-token",
	"cookie", "set-cookie", NULL };

static int
namech(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Does a value end at c (in a URL, or as a bare token)? */
static int
stop(char c)
{
	return c == '&' || c == '#' || c == ' ' || c == '\t' || c == '\r' ||
	    c == '\n' || c == '"' || c == '\'' || c == '<' || c == '>' ||
	    c == '\0';
}

/* Is the n bytes at p one of list, without regard to case? */
static int
inlist(const char *p, size_t n, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strlen(*list) == n && strncasecmp(p, *list, n) == 0)
			return 1;
	return 0;
}

/* A query parameter name that carries a credential. */
static int
qcred(const char *p, size_t n)
{
	if (n > 6 && strncasecmp(p, "x-amz-", 6) == 0)
		return !inlist(p, n, (const char *const[]){ "x-amz-date",
		    "x-amz-expires", NULL });
	return inlist(p, n, qnames);
}

void
redact(struct buf *out, const char *s, size_t len)
{
	size_t i = 0, j, k, n;

	while (i < len) {
		/* scheme://userinfo@host */
		if (len - i >= 3 && memcmp(s + i, "://", 3) == 0) {
			for (j = i + 3, k = 0; j < len && !stop(s[j]) &&
			    s[j] != '/' && s[j] != '?'; j++)
				if (s[j] == '@')
					k = j;
			buf_puts(out, "://");
			if (k > 0) {
				buf_puts(out, REDACT_MARK);
				i = k;
			} else
				i += 3;
			continue;
		}
		/* ?name=value, &name=value */
		if (s[i] == '?' || s[i] == '&' || s[i] == ';') {
			for (j = i + 1; j < len && namech(s[j]); j++)
				;
			n = j - i - 1;
			if (j < len && s[j] == '=' && n > 0 && qcred(s + i + 1, n)) {
				buf_append(out, s + i, n + 2);
				buf_puts(out, REDACT_MARK);
				for (i = j + 1; i < len && !stop(s[i]); i++)
					;
				continue;
			}
		}
		if (i == 0 || !namech(s[i - 1])) {
			/* Name: the rest of the line */
			for (j = i; j < len && namech(s[j]); j++)
				;
			n = j - i;
			if (j < len && s[j] == ':' && inlist(s + i, n, hnames)) {
				buf_append(out, s + i, n);
				buf_puts(out, ": " REDACT_MARK);
				for (i = j; i < len && s[i] != '\r' && s[i] != '\n';
				    i++)
					;
				continue;
			}
			/* Bearer token */
			if (len - i > 7 && strncasecmp(s + i, "bearer ", 7) == 0) {
				buf_append(out, s + i, 7);
				buf_puts(out, REDACT_MARK);
				for (i += 7; i < len && !stop(s[i]) && s[i] != ',' &&
				    s[i] != ';'; i++)
					;
				continue;
			}
		}
		buf_putc(out, s[i]);
		i++;
	}
	if (out->p == NULL)
		buf_grow(out, 1);
	out->p[out->len] = '\0';
}

void
redact_str(char *s, size_t size)
{
	struct buf b = BUF_INIT;

	if (size == 0)
		return;
	redact(&b, s, strlen(s));
	snprintf(s, size, "%s", b.p);
	buf_free(&b);
}
