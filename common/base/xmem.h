/*
 * xmem.h: allocation that cannot fail: on exhaustion the tool exits with
 * QB_EX_OSERR and a message. Callers own what these return and free(3) it.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_XMEM_H
#define QB_XMEM_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/* n * size with overflow check, like reallocarray(3). */
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
/* Copy of the n bytes at s plus a NUL. */
char *xstrndup(const char *s, size_t n);

#endif
