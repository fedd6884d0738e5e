/*
 * qmsg.h: what every queue of qb-drain hands around: a leased message, a
 * batch of them, and the settlement of one. A leaf: spool (spool.h), SQS
 * (sqs.h) and the queue switch (queue.h) all build on it. Times are
 * wall-clock seconds (time(2) with fractions) unless named otherwise.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_QMSG_H
#define QB_QMSG_H

#include <stddef.h>

struct qmsg {
	char	*id;		/* message id (SQS MessageId, spool name); owned; may be NULL */
	char	*receipt;	/* lease handle; owned; NULL when there is none (stdin) */
	char	*body;		/* message text, NUL-terminated; owned */
	size_t	 len;		/* bytes in body */
	long	 receives;	/* receives so far, this one included; 0 unknown */
	double	 until;		/* when the lease ends; 0 none */
	unsigned long lineno;	/* stdin: the line it came from */
};

/* Messages m[0..n-1] in an array of cap; empty is { NULL, 0, 0 }. */
struct qbatch {
	struct qmsg *m;		/* owned */
	size_t	 n, cap;
};

/* Append a zeroed message to b and return it (out of memory: qb_oom). */
struct qmsg *qmsg_add(struct qbatch *b);
/* Free what m owns (id, receipt, body) and zero them. */
void qmsg_free(struct qmsg *m);
/* Drop all but the last of the messages with the same id (a message
 * received twice: the last receipt is the one that holds); returns how
 * many were dropped. */
size_t qmsg_dedupe(struct qbatch *b);
/* Free the messages of b; b is empty and reusable (b->m is kept). */
void qmsg_clear(struct qbatch *b);

enum qact { QA_DELETE, QA_RELEASE };

/* One settlement: what to do with the message under receipt. */
struct qsettle {
	const char *receipt;	/* in; owned by the caller */
	enum qact act;		/* in */
	double	 delay;		/* in, QA_RELEASE: seconds before it can be received again */
	int	 rc;		/* out: 0 done, else a QB_EX_* status */
	int	 expired;	/* out: the lease had ended (reported, not fatal) */
	char	 why[200];	/* out: the reason when rc != 0 */
};

#endif
