/*
 * queue.h: one small interface over qb-drain's three queues: a spool
 * directory (spool.h), Amazon SQS (sqs.h) and standard input. A message
 * is held by a lease (its receipt) until it is deleted or released.
 * Times are wall-clock seconds (time(2) with fractions) unless named
 * otherwise, so that spool leases mean the same to every process.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_QUEUE_H
#define QB_QUEUE_H

#include <stddef.h>

#include "queue/qmsg.h"

struct idmap;

/*
 * Bytes an item record may grow by over its message's body when qb-drain
 * hands it on ("id", "queue", "receipt", "receives" added): --enqueue
 * refuses a line longer than JSONL_LINE_MAX less this, which the tools
 * after qb-drain would not read.
 */
#define QUEUE_ITEM_ROOM 16384

struct queue {
	char	*name;		/* canonical name for the "queue" member; owned */
	int	 eof;		/* stdin only: no more input */
	double	 poll;		/* SQS: long-poll seconds per call (default 5) */
	int	 receivers;	/* SQS: receive calls in flight (default 1) */
	/*
	 * Lease up to max messages into b, each for lease seconds, waiting
	 * at most wait seconds for the first (SQS: calling on until max
	 * came or wait passed). Returns 0 (also when none came) or a
	 * QB_EX_* status after reporting why.
	 */
	int	(*receive)(struct queue *, struct qbatch *b, size_t max,
		    double wait, double lease);
	/* Lease messages m[0..n-1] for lease more seconds from now,
	 * updating receipt and until. Returns 0 or a QB_EX_* status;
	 * messages that could not be extended are reported. */
	int	(*extend)(struct queue *, struct qmsg *m, size_t n, double lease);
	/* Carry out s[0..n-1], filling their rc/why; returns 0 or the
	 * QB_EX_* status of a failure that stopped every entry. */
	int	(*settle)(struct queue *, struct qsettle *s, size_t n);
	/* Stage the len bytes at p as one message, seen by no receiver
	 * until flush. Returns 0 or a QB_EX_* status after reporting why. */
	int	(*send)(struct queue *, const char *p, size_t len);
	/* Make every message staged since the last flush visible (spool:
	 * renamed into new/; SQS: sent). Returns 0 or a QB_EX_* status
	 * after reporting why. */
	int	(*flush)(struct queue *);
	/* Drop every message staged since the last flush. */
	void	(*discard)(struct queue *);
	/* If not NULL: add to ids the item id of every message queued, as
	 * qb-drain would name its item. Returns 0 or a QB_EX_* status
	 * after reporting why. */
	int	(*queued)(struct queue *, struct idmap *ids);
	void	(*close)(struct queue *);
	void	*priv;
};

/*
 * Open the queue named by spec: "dir:PATH" (or a bare path), "-" for
 * standard input, "sqs://REGION/ACCOUNT/NAME" or an SQS queue URL.
 * create makes a missing spool directory. Returns 0 with the queue in
 * *qp (free it with its close), or with *qp NULL, after saying why:
 * QB_EX_USAGE (a spec that is none of these), QB_EX_NOINPUT (a spool
 * that cannot be opened or made), QB_EX_CONFIG (SQS credentials, region
 * or endpoint) or QB_EX_OSERR (libcurl would not start).
 */
int queue_open(struct queue **qp, const char *spec, int create);

#endif
