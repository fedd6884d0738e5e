/*
 * retryset.c: retries held for qb-pack until its input is read, spooled
 * to a temporary file (retryset.h).
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xmem.h"
#include "record/retryset.h"

struct retry {
	size_t		 group;
	char		*id;		/* owned */
	long long	 off;		/* of its line in the spool */
	size_t		 len;
	long		 ninputs;
	long long	 tokens;
};

void
retryset_init(struct retryset *rs)
{
	memset(rs, 0, sizeof(*rs));
	idmap_init(&rs->finals);
}

void
retryset_final(struct retryset *rs, const char *id, size_t n)
{
	int isnew;

	idmap_put(&rs->finals, id, n, &isnew);
}

int
retryset_add(struct retryset *rs, size_t group, const char *id,
    size_t idlen, const char *line, size_t len, long ninputs,
    long long tokens)
{
	struct retry *r;

	if (rs->spool == NULL && (rs->spool = tmpfile()) == NULL)
		return -1;
	if (fwrite(line, 1, len, rs->spool) != len)
		return -1;
	rs->e = xreallocarray(rs->e, rs->n + 1, sizeof(*rs->e));
	r = &rs->e[rs->n];
	r->group = group;
	r->id = xstrndup(id, idlen);
	r->off = rs->off;
	r->len = len;
	r->ninputs = ninputs;
	r->tokens = tokens;
	rs->off += (long long)len;
	rs->n++;
	return 0;
}

static int
cmp(const void *a, const void *b)
{
	const struct retry *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return strcmp(x->id, y->id);
}

int
retryset_each(struct retryset *rs, int (*fn)(void *arg, size_t group,
    const char *line, size_t len, long ninputs, long long tokens),
    void *arg)
{
	struct buf b = BUF_INIT;
	struct retry *r;
	size_t i;
	int rc = 0;

	if (rs->n == 0)
		return 0;
	if (fflush(rs->spool) == EOF)
		return -1;
	qsort(rs->e, rs->n, sizeof(*rs->e), cmp);
	for (i = 0; i < rs->n && rc == 0; i++) {
		r = &rs->e[i];
		if (idmap_get(&rs->finals, r->id, strlen(r->id)) != (size_t)-1)
			continue;
		buf_reset(&b);
		buf_grow(&b, r->len + 1);
		if (fseeko(rs->spool, (off_t)r->off, SEEK_SET) == -1 ||
		    fread(b.p, 1, r->len, rs->spool) != r->len) {
			if (!ferror(rs->spool))
				errno = EIO;
			rc = -1;
			break;
		}
		b.p[r->len] = '\0';
		rc = fn(arg, r->group, b.p, r->len, r->ninputs, r->tokens);
	}
	buf_free(&b);
	return rc;
}

void
retryset_free(struct retryset *rs)
{
	size_t i;

	if (rs->spool != NULL)
		fclose(rs->spool);
	for (i = 0; i < rs->n; i++)
		free(rs->e[i].id);
	free(rs->e);
	idmap_free(&rs->finals);
	memset(rs, 0, sizeof(*rs));
}
