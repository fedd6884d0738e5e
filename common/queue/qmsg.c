/*
 * qmsg.c: batches of leased messages (qmsg.h): growing one, emptying
 * one, and dropping the copies a queue delivered twice.
 * SPDX-License-Identifier: ISC
 */
#include <stdlib.h>
#include <string.h>

#include "base/xmem.h"
#include "queue/qmsg.h"

struct qmsg *
qmsg_add(struct qbatch *b)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 16;
		b->m = xreallocarray(b->m, b->cap, sizeof(*b->m));
	}
	memset(&b->m[b->n], 0, sizeof(b->m[0]));
	return &b->m[b->n++];
}

void
qmsg_free(struct qmsg *m)
{
	free(m->id);
	free(m->receipt);
	free(m->body);
	m->id = m->receipt = m->body = NULL;
}

void
qmsg_clear(struct qbatch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		qmsg_free(&b->m[i]);
	b->n = 0;
}

struct idx {
	const char	*id;
	size_t		 i;
};

static int
idxcmp(const void *a, const void *b)
{
	const struct idx *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	return c != 0 ? c : x->i < y->i ? -1 : x->i > y->i;
}

size_t
qmsg_dedupe(struct qbatch *b)
{
	struct idx *ix = xcalloc(b->n ? b->n : 1, sizeof(*ix));
	char *drop = xcalloc(b->n ? b->n : 1, 1);
	size_t i, k, n = 0;

	for (i = 0; i < b->n; i++)
		if (b->m[i].id != NULL && b->m[i].receipt != NULL) {
			ix[n].id = b->m[i].id;
			ix[n++].i = i;
		}
	qsort(ix, n, sizeof(*ix), idxcmp);
	for (i = 0; i + 1 < n; i++)
		if (strcmp(ix[i].id, ix[i + 1].id) == 0)
			drop[ix[i].i] = 1;	/* a later receive holds the lease */
	for (i = k = 0; i < b->n; i++) {
		if (!drop[i])
			b->m[k++] = b->m[i];
		else
			qmsg_free(&b->m[i]);
	}
	n = b->n - k;
	b->n = k;
	free(ix);
	free(drop);
	return n;
}
