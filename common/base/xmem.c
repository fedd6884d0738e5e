/*
 * xmem.c: allocation wrappers that end in qb_oom (msg.h) on failure.
 * SPDX-License-Identifier: ISC
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/msg.h"
#include "base/xmem.h"

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		qb_oom(n);
	return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (p == NULL)
		qb_oom(0);
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		qb_oom(n);
	return p;
}

void *
xreallocarray(void *p, size_t nmemb, size_t size)
{
	if (size != 0 && nmemb > SIZE_MAX / size)
		qb_oom(0);
	return xrealloc(p, nmemb * size);
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}
