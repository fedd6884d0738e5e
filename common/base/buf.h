/*
 * buf.h: a growable byte buffer (pointer, length, capacity), stralloc-like.
 * The bytes are always followed by a NUL that len does not count, so
 * b->p can be used as a C string when it holds no NUL itself.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_BUF_H
#define QB_BUF_H

#include <stddef.h>

struct buf {
	char	*p;	/* owned; NULL until the first append */
	size_t	 len;	/* bytes used */
	size_t	 cap;	/* bytes allocated */
};

#define BUF_INIT { NULL, 0, 0 }

/* Make room for n more bytes; dies with QB_EX_OSERR when out of memory. */
void buf_grow(struct buf *b, size_t n);
void buf_append(struct buf *b, const void *p, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_putc(struct buf *b, int c);
/* printf into the buffer, appending. */
void buf_printf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Forget the contents, keep the memory. */
void buf_reset(struct buf *b);
/* Free the memory; the buffer is BUF_INIT again. */
void buf_free(struct buf *b);

#endif
