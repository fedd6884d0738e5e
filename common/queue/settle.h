/*
 * settle.h: settling items on their queue once their outcome is known
 * (qb-drain --settle), and writing dead letters.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SETTLE_H
#define QB_SETTLE_H

#include <stdio.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "queue/queue.h"

/* Where dead items go: a file, a queue, both or neither. */
struct deadletter {
	FILE		*fp;		/* opened for appending, or NULL */
	const char	*path;		/* fp's name, for messages */
	struct queue	*q;		/* a dead-letter queue, or NULL */
};

/* Write the finished record in g as a dead letter, then clear g;
 * returns 0 or a QB_EX_* status after saying why. */
int settle_deadletter(struct deadletter *d, yajl_gen g);

/* Why the retry outcome v is not the item's fault ("account_error", or
 * an error code of the batch it was in), as a static phrase; NULL when
 * it may be. Such a retry is released, never made dead by --max-receives. */
const char *settle_excused(yajl_val v);

struct settler {
	struct queue	*q;		/* in/out: NULL opens the first record's "queue" */
	int		 named;		/* q was named (-Q): records' "queue" not checked */
	struct deadletter *dead;
	double		 rdelay;	/* backoff of a retry at its first receive */
	long		 maxr;		/* a retry received this often is dead; 0 never */
	int		 strict;	/* the first bad line stops with QB_EX_DATAERR */
	yajl_gen	 g;
	FILE		*out;		/* settled records */
	int		 rc;		/* out: QB_EX_PARTIAL once a record failed */
};

/*
 * Settle the outcome records in files[0..nfiles-1] (none: standard
 * input) in calls of up to SQS_BATCH_MAX, printing each record to s->out
 * with "settled". A bad record or a failed settlement is reported and
 * makes the status QB_EX_PARTIAL. Returns 0 or QB_EX_PARTIAL; or, after
 * reporting it, the status that stopped reading: QB_EX_NOINPUT (an input
 * that cannot be opened), QB_EX_IOERR (a read or write error),
 * QB_EX_DATAERR (a bad record under strict), or queue_open's. The
 * records read but not yet settled when it stopped stay leased and come
 * back when their leases end.
 */
int settle_files(struct settler *s, char **files, int nfiles);

#endif
