/*
 * hwrite.h: write a stream of bytes to a file descriptor while computing
 * its SHA-256, with the hashing and the write(2)s done by a second thread
 * so that they overlap the caller's parsing (batch files are hundreds of
 * megabytes and every byte is hashed).
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_HWRITE_H
#define QB_HWRITE_H

#include <pthread.h>
#include <stddef.h>

#include "base/sha256.h"

struct hwrite {
	int		 fd;		/* not owned: the caller closes it */
	struct sha256	 sha;
	char		*buf[2];	/* double buffer, owned */
	size_t		 len[2], cap;
	int		 cur;		/* buffer the caller fills */
	int		 pending;	/* buffer handed to the thread, or -1 */
	int		 stop, err;	/* err: errno of a failed write, or 0 */
	pthread_t	 th;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
};

/* Start writing to fd. Returns 0, or -1 with errno set. */
int hwrite_open(struct hwrite *w, int fd);
/* Queue n bytes. Returns 0, or -1 with errno set after a write failed. */
int hwrite_put(struct hwrite *w, const void *p, size_t n);
/*
 * Write what is queued, stop the thread, and give the digest of every byte
 * put, as 64 hex digits and a NUL. Returns 0, or -1 with errno set if any
 * write failed. Frees the buffers in either case; fsync is the caller's.
 */
int hwrite_close(struct hwrite *w, char hex[65]);

#endif
