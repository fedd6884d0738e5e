/*
 * buf.c: growable byte buffer.
 * SPDX-License-Identifier: ISC
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xmem.h"

void
buf_grow(struct buf *b, size_t n)
{
	size_t cap;

	if (b->p != NULL && b->len + n + 1 <= b->cap)
		return;
	cap = b->cap ? b->cap : 64;
	while (cap < b->len + n + 1) {
		if (cap > (size_t)-1 / 2)
			cap = b->len + n + 1;
		else
			cap *= 2;
	}
	b->p = xrealloc(b->p, cap);
	b->cap = cap;
	b->p[b->len] = '\0';
}

void
buf_append(struct buf *b, const void *p, size_t n)
{
	buf_grow(b, n);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void
buf_puts(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

void
buf_putc(struct buf *b, int c)
{
	char ch = (char)c;

	buf_append(b, &ch, 1);
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p != NULL)
		b->p[0] = '\0';
}

void
buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}
