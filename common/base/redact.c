/*
 * redact.c: credentials out of shown text (redact.h). One left-to-right
 * pass; at each byte it tries, in turn, a URL's userinfo, a credential
 * query parameter, a credential header and a bearer token, and copies the
 * byte when none starts there.
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/redact.h"

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
redact_to(redact_put put, void *arg, const char *s, size_t len)
{
	size_t i = 0, j, k, n;

	while (i < len) {
		/* scheme://userinfo@host */
		if (len - i >= 3 && memcmp(s + i, "://", 3) == 0) {
			for (j = i + 3, k = 0; j < len && !stop(s[j]) &&
			    s[j] != '/' && s[j] != '?'; j++)
				if (s[j] == '@')
					k = j;
			put(arg, "://", 3);
			if (k > 0) {
				put(arg, REDACT_MARK, sizeof(REDACT_MARK) - 1);
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
				put(arg, s + i, n + 2);
				put(arg, REDACT_MARK, sizeof(REDACT_MARK) - 1);
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
				put(arg, s + i, n);
				put(arg, ": " REDACT_MARK, sizeof(": " REDACT_MARK) - 1);
				for (i = j; i < len && s[i] != '\r' && s[i] != '\n';
				    i++)
					;
				continue;
			}
			/* Bearer token */
			if (len - i > 7 && strncasecmp(s + i, "bearer ", 7) == 0) {
				put(arg, s + i, 7);
				put(arg, REDACT_MARK, sizeof(REDACT_MARK) - 1);
				for (i += 7; i < len && !stop(s[i]) && s[i] != ',' &&
				    s[i] != ';'; i++)
					;
				continue;
			}
		}
		put(arg, s + i, 1);
		i++;
	}
}

/* The bytes redact_str keeps: at most size - 1 of them, then a NUL. */
struct fixed {
	char	*p;
	size_t	 len, size;
};

static void
fixed_put(void *arg, const char *p, size_t n)
{
	struct fixed *f = arg;

	if (n > f->size - 1 - f->len)
		n = f->size - 1 - f->len;
	memcpy(f->p + f->len, p, n);
	f->len += n;
}

void
redact_str(char *s, size_t size)
{
	struct fixed f = { s, 0, size };
	char *in;

	if (size == 0)
		return;
	if ((in = strdup(s)) == NULL) {
		s[0] = '\0';	/* shown as nothing, not as it was */
		return;
	}
	redact_to(fixed_put, &f, in, strlen(in));
	s[f.len] = '\0';
	free(in);
}
