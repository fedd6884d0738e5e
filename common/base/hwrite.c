/*
 * hwrite.c: hash-and-write in a second thread, double-buffered.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hwrite.h"
#include "base/xmem.h"

#define HW_BUF (1 << 20)

static int
writeall(int fd, const char *p, size_t n)
{
	ssize_t k;

	while (n > 0) {
		k = write(fd, p, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void *
worker(void *arg)
{
	struct hwrite *w = arg;
	int b;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->pending < 0 && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->pending < 0)
			break;
		b = w->pending;
		pthread_mutex_unlock(&w->mu);
		sha256_update(&w->sha, w->buf[b], w->len[b]);
		if (w->err == 0 && writeall(w->fd, w->buf[b], w->len[b]) == -1)
			w->err = errno ? errno : EIO;
		pthread_mutex_lock(&w->mu);
		w->pending = -1;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int
hwrite_open(struct hwrite *w, int fd)
{
	int e;

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->pending = -1;
	w->cap = HW_BUF;
	w->buf[0] = xmalloc(w->cap);
	w->buf[1] = xmalloc(w->cap);
	sha256_init(&w->sha);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if ((e = pthread_create(&w->th, NULL, worker, w)) != 0) {
		free(w->buf[0]);
		free(w->buf[1]);
		errno = e;
		return -1;
	}
	return 0;
}

/* Hand the current buffer to the thread once it has finished the other. */
static void
handoff(struct hwrite *w)
{
	pthread_mutex_lock(&w->mu);
	while (w->pending >= 0)
		pthread_cond_wait(&w->cv, &w->mu);
	w->pending = w->cur;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	w->cur ^= 1;
	w->len[w->cur] = 0;
}

int
hwrite_put(struct hwrite *w, const void *vp, size_t n)
{
	const char *p = vp;
	size_t k;

	while (n > 0) {
		k = w->cap - w->len[w->cur];
		if (k > n)
			k = n;
		memcpy(w->buf[w->cur] + w->len[w->cur], p, k);
		w->len[w->cur] += k;
		p += k;
		n -= k;
		if (w->len[w->cur] == w->cap)
			handoff(w);
	}
	if (w->err != 0) {
		errno = w->err;
		return -1;
	}
	return 0;
}

int
hwrite_close(struct hwrite *w, char hex[65])
{
	if (w->len[w->cur] > 0)
		handoff(w);
	pthread_mutex_lock(&w->mu);
	while (w->pending >= 0)
		pthread_cond_wait(&w->cv, &w->mu);
	w->stop = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	sha256_hex(&w->sha, hex);
	free(w->buf[0]);
	free(w->buf[1]);
	w->buf[0] = w->buf[1] = NULL;
	if (w->err != 0) {
		errno = w->err;
		return -1;
	}
	return 0;
}
