/*
 * queue.c: the three queues behind struct queue: dir: (spool.c), SQS
 * (sqs.c) and standard input. Standard input is read with read(2) and
 * poll(2), not through jsonl.c, because a window must close on time
 * while a pipe is quiet, and gzread(3) blocks until its buffer is full.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/exits.h"
#include "base/msg.h"
#include "base/qtime.h"
#include "base/xmem.h"
#include "json/jsonl.h"
#include "queue/queue.h"
#include "queue/spool.h"
#include "queue/sqs.h"

#define SPOOL_NAP 0.05		/* seconds between looks at an empty spool */

static void
qfree(struct queue *q)
{
	free(q->name);
	free(q->priv);
	free(q);
}

/* dir: */

static int
sp_receive(struct queue *q, struct qbatch *b, size_t max, double wait,
    double lease)
{
	struct spool *s = q->priv;
	double end = qtime_wall() + wait;
	long got;

	for (;;) {
		if (spool_reclaim(s, qtime_wall()) == -1 ||
		    (got = spool_take(s, b, max, lease)) == -1) {
			qb_warnsys("%s", q->name);
			return QB_EX_IOERR;
		}
		if (got > 0 || qtime_wall() >= end)
			return 0;
		qtime_sleep(fmin(SPOOL_NAP, end - qtime_wall()));
	}
}

static int
sp_extend(struct queue *q, struct qmsg *m, size_t n, double lease)
{
	double until = qtime_wall() + lease;
	char *nr;
	size_t i;
	int rc = 0;

	for (i = 0; i < n; i++) {
		if (spool_relet(q->priv, m[i].receipt, until, &nr) == -1) {
			qb_warnsys("%s: cannot extend the lease %s", q->name,
			    m[i].receipt);
			rc = QB_EX_PARTIAL;
			continue;
		}
		free(m[i].receipt);
		m[i].receipt = nr;
		m[i].until = ceil(until * 1000) / 1000;
	}
	return rc;
}

static int
sp_settle(struct queue *q, struct qsettle *s, size_t n)
{
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		s[i].expired = 0;
		s[i].why[0] = '\0';
		if (s[i].act == QA_DELETE)
			r = spool_delete(q->priv, s[i].receipt);
		else
			r = spool_relet(q->priv, s[i].receipt, s[i].delay > 0 ?
			    qtime_wall() + s[i].delay : 0, NULL);
		s[i].rc = r == 0 ? 0 : errno == EINVAL ? QB_EX_DATAERR :
		    errno == ENOENT ? QB_EX_UNAVAILABLE : QB_EX_IOERR;
		if (r == 0)
			continue;
		s[i].expired = errno == ENOENT;
		snprintf(s[i].why, sizeof(s[i].why), "%s", errno == ENOENT ?
		    "the lease has expired" : errno == EINVAL ?
		    "not a spool receipt" : strerror(errno));
	}
	return 0;
}

static int
sp_send(struct queue *q, const char *p, size_t len)
{
	if (spool_put(q->priv, p, len) == -1) {
		qb_warnsys("%s: cannot enqueue", q->name);
		return QB_EX_IOERR;
	}
	return 0;
}

static int
sp_flush(struct queue *q)
{
	if (spool_commit(q->priv) == -1) {
		qb_warnsys("%s: cannot enqueue", q->name);
		return QB_EX_IOERR;
	}
	return 0;
}

static void
sp_discard(struct queue *q)
{
	spool_discard(q->priv);
}

static int
sp_queued(struct queue *q, struct idmap *ids)
{
	if (spool_ids(q->priv, ids) == -1) {
		qb_warnsys("%s: cannot read the queued messages", q->name);
		return QB_EX_IOERR;
	}
	return 0;
}

static void
sp_close(struct queue *q)
{
	spool_close(q->priv);
	qfree(q);
}

/* SQS */

struct sq {
	struct sqs	 s;
	char		**body;		/* sends not yet made; owned */
	size_t		*len, n;
};

static int
sq_receive(struct queue *q, struct qbatch *b, size_t max, double wait,
    double lease)
{
	struct sq *x = q->priv;
	int rc;

	x->s.nrecv = q->receivers;
	rc = sqs_receive(&x->s, b, max, (int)fmin(floor(q->poll), SQS_WAIT_MAX),
	    wait, lease);
	if (rc != 0)
		qb_warn("%s", x->s.err);
	return rc;
}

static int
sq_extend(struct queue *q, struct qmsg *m, size_t n, double lease)
{
	struct sq *x = q->priv;
	struct qsettle *s = xcalloc(n ? n : 1, sizeof(*s));
	double now = qtime_wall();
	size_t i;
	int rc, bad = 0;

	for (i = 0; i < n; i++) {
		s[i].receipt = m[i].receipt;
		s[i].act = QA_RELEASE;
		s[i].delay = fmin(ceil(lease), SQS_VIS_MAX);
	}
	rc = sqs_settle(&x->s, s, n);
	for (i = 0; i < n; i++)
		if (s[i].rc == 0)
			m[i].until = now + s[i].delay;
		else if (rc == 0) {
			qb_warn("%s: cannot extend the visibility of message %s: %s",
			    q->name, m[i].id, s[i].why);
			bad = 1;
		}
	if (rc != 0)
		qb_warn("%s", x->s.err);
	free(s);
	return rc ? rc : bad ? QB_EX_PARTIAL : 0;
}

static int
sq_settle(struct queue *q, struct qsettle *s, size_t n)
{
	return sqs_settle(&((struct sq *)q->priv)->s, s, n);
}

/* Drop the sends not yet made. */
static void
sq_discard(struct queue *q)
{
	struct sq *x = q->priv;
	size_t i;

	for (i = 0; i < x->n; i++)
		free(x->body[i]);
	x->n = 0;
}

/* Make the sends held since the last flush, SQS_BATCH_MAX per call. */
static int
sq_flush(struct queue *q)
{
	struct sq *x = q->priv;
	size_t i, k;
	int rc = 0, r;

	for (i = 0; i < x->n; i += k) {
		k = x->n - i < SQS_BATCH_MAX ? x->n - i : SQS_BATCH_MAX;
		if ((r = sqs_send(&x->s, x->body + i, x->len + i, k)) != 0 &&
		    rc == 0)
			rc = r;
	}
	sq_discard(q);
	return rc;
}

/*
 * Sends are held until flush, so that qb-drain --enqueue sends nothing
 * of an input it could not read to its end.
 */
static int
sq_send(struct queue *q, const char *p, size_t len)
{
	struct sq *x = q->priv;

	if ((x->n & (x->n - 1)) == 0) {
		x->body = xreallocarray(x->body, x->n ? x->n * 2 : 1,
		    sizeof(*x->body));
		x->len = xreallocarray(x->len, x->n ? x->n * 2 : 1,
		    sizeof(*x->len));
	}
	x->body[x->n] = xstrndup(p, len);
	x->len[x->n++] = len;
	return 0;
}

static void
sq_close(struct queue *q)
{
	struct sq *x = q->priv;

	sq_flush(q);
	free(x->body);
	free(x->len);
	sqs_close(&x->s);
	qfree(q);
}

/* Standard input */

struct in {
	struct buf	 b;
	size_t		 off;		/* start of the unread bytes in b */
	unsigned long	 lineno;
	int		 first;		/* a BOM may still come */
};

/* Move complete lines out of x into b, at most max; at eof the rest too. */
static size_t
lines(struct queue *q, struct in *x, struct qbatch *b, size_t max)
{
	char *p, *nl, *end;
	size_t got = 0, n;
	struct qmsg *m;

	while (got < max && x->off < x->b.len) {
		p = x->b.p + x->off;
		if (x->first && x->b.len - x->off >= 3 &&
		    memcmp(p, "\xef\xbb\xbf", 3) == 0) {
			x->off += 3;
			p += 3;
		}
		if (x->first && (x->b.len - x->off >= 3 || q->eof))
			x->first = 0;
		nl = memchr(p, '\n', x->b.len - x->off);
		if (nl == NULL && !q->eof)
			break;
		end = nl != NULL ? nl : x->b.p + x->b.len;
		x->off = (size_t)(end - x->b.p) + (nl != NULL);
		x->lineno++;
		n = (size_t)(end - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (n == strspn(p, " \t\r") || n == 0)
			continue;
		m = qmsg_add(b);
		m->body = xstrndup(p, n);
		m->len = n;
		m->lineno = x->lineno;
		got++;
	}
	if (x->off > 0 && x->off == x->b.len) {
		buf_reset(&x->b);
		x->off = 0;
	} else if (x->off > (1 << 20)) {
		memmove(x->b.p, x->b.p + x->off, x->b.len - x->off);
		x->b.len -= x->off;
		x->off = 0;
	}
	return got;
}

static int
in_receive(struct queue *q, struct qbatch *b, size_t max, double wait,
    double lease)
{
	struct in *x = q->priv;
	struct pollfd pfd;
	double end = qtime_wall() + wait;
	ssize_t r;
	size_t got;
	int ms;

	for (;;) {
		if ((got = lines(q, x, b, max)) > 0 || q->eof)
			return 0;
		if (x->b.len - x->off > JSONL_LINE_MAX) {
			qb_warn("<stdin>:%lu: line longer than %zu bytes",
			    x->lineno + 1, JSONL_LINE_MAX);
			return QB_EX_DATAERR;
		}
		ms = (int)ceil((end - qtime_wall()) * 1000);
		pfd.fd = 0;
		pfd.events = POLLIN;
		if (ms <= 0)
			return 0;
		if (poll(&pfd, 1, ms) == -1) {
			if (errno == EINTR)
				continue;
			qb_warnsys("poll");
			return QB_EX_OSERR;
		}
		if (pfd.revents == 0)
			return 0;
		buf_grow(&x->b, 65536);
		r = read(0, x->b.p + x->b.len, 65536);
		if (r == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r == -1) {
			qb_warnsys("read error on standard input");
			return QB_EX_IOERR;
		}
		if (r == 0)
			q->eof = 1;
		x->b.len += (size_t)r;
	}
}

static void
in_close(struct queue *q)
{
	buf_free(&((struct in *)q->priv)->b);
	qfree(q);
}

static void
open_stdin(struct queue *q)
{
	struct in *in;

	q->name = xstrdup("-");
	q->receive = in_receive;
	q->close = in_close;
	in = q->priv = xcalloc(1, sizeof(*in));
	in->first = 1;
}

static int
open_sqs(struct queue *q, const char *spec)
{
	struct sq *x;
	int rc;

	x = q->priv = xcalloc(1, sizeof(*x));
	if ((rc = sqs_open(&x->s, spec)) != 0)
		return rc;
	q->name = xstrdup(x->s.url);
	q->receive = sq_receive;
	q->extend = sq_extend;
	q->settle = sq_settle;
	q->send = sq_send;
	q->flush = sq_flush;
	q->discard = sq_discard;
	q->close = sq_close;
	return 0;
}

static int
open_spool(struct queue *q, const char *spec, int create)
{
	struct buf nm = BUF_INIT;
	struct spool *s;

	if (strncmp(spec, "dir:", 4) == 0)
		spec += 4;
	if (*spec == '\0' || strstr(spec, "://") != NULL)
		return qb_fail(QB_EX_USAGE, "queue \"%s\": expected dir:PATH, -, "
		    "sqs://REGION/ACCOUNT/NAME or a queue URL", spec);
	s = q->priv = xcalloc(1, sizeof(*s));
	if (spool_open(s, spec, create) == -1)
		return qb_failsys(QB_EX_NOINPUT, "spool %s", spec);
	buf_printf(&nm, "dir:%s", s->dir);
	q->name = nm.p;
	q->receive = sp_receive;
	q->extend = sp_extend;
	q->settle = sp_settle;
	q->send = sp_send;
	q->flush = sp_flush;
	q->discard = sp_discard;
	q->queued = sp_queued;
	q->close = sp_close;
	return 0;
}

int
queue_open(struct queue **qp, const char *spec, int create)
{
	struct queue *q = xcalloc(1, sizeof(*q));
	int rc;

	q->poll = 5;
	q->receivers = 1;
	*qp = NULL;
	rc = 0;
	if (strcmp(spec, "-") == 0)
		open_stdin(q);
	else if (strncmp(spec, "sqs://", 6) == 0 ||
	    strncmp(spec, "http://", 7) == 0 || strncmp(spec, "https://", 8) == 0)
		rc = open_sqs(q, spec);
	else
		rc = open_spool(q, spec, create);
	if (rc != 0) {
		qfree(q);
		return rc;
	}
	*qp = q;
	return 0;
}
