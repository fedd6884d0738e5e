/*
 * xmem.c: allocation wrappers that exit with QB_EX_OSERR on failure.
 * SPDX-License-Identifier: ISC
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exits.h"
#include "msg.h"
#include "xmem.h"

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		qb_die(QB_EX_OSERR, "out of memory (%zu bytes)", n);
	return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (p == NULL)
		qb_die(QB_EX_OSERR, "out of memory");
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		qb_die(QB_EX_OSERR, "out of memory (%zu bytes)", n);
	return p;
}

void *
xreallocarray(void *p, size_t nmemb, size_t size)
{
	if (size != 0 && nmemb > SIZE_MAX / size)
		qb_die(QB_EX_OSERR, "out of memory (overflow)");
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
