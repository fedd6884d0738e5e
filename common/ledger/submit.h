/*
 * submit.h: the batch path of qb-submit: pack records in, one job record
 * per batch created or adopted out (qb(7) RECORD FORMATS), each file
 * weighed by custody first (custody.h, qb(7) CUSTODY).
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_SUBMIT_H
#define QB_SUBMIT_H

#include <yajl/yajl_gen.h>

#include "ledger/budget.h"
#include "ledger/custody.h"
#include "provider/provops.h"

struct submit_opts {
	const char	*base, *keyfile;	/* NULL: from the environment */
	const char	*prov;		/* -p, or NULL: each record's own */
	int		 strict;	/* a bad record ends the run (65) */
	long long	 budget;	/* enqueued tokens per model; 0: none */
	double		 wait;		/* s to wait for room under the budget */
	double		 grace;		/* s after an unrecorded create in which its
					   batch may still appear (QB_CREATE_GRACE) */
	double		 lookback;	/* s of the provider's batches searched for
					   a file no job holds; 0: none */
};

struct submit {
	const struct submit_opts *o;
	struct provider_conns conns;
	struct custody	 cus;		/* the run's digests, the ledger */
	yajl_gen	 g;
	unsigned long	 nsub, nadopt, nskip, nrep, nrej, nnot;
	int		 stop;		/* exit status that ended submitting, or 0 */
	int		 fatal;		/* exit status that ends the run at once
					   (--strict, standard output), or 0 */
	int		 refused;	/* the provider refused a file for good */
	struct budget	 bud;		/* --token-budget */
	double		 deadline;	/* of --wait-budget */
	unsigned long	 nheld;
	unsigned long	 ninflight;	/* creates that may still be under way */
};

/*
 * Start a run with o (kept, not copied) and, if ledger is not NULL, that
 * ledger: made if missing, its run lock taken and it read. Returns 0, or
 * the status of a failure, reported, with nothing left to free.
 */
int submit_init(struct submit *r, const struct submit_opts *o,
    const char *ledger);
/*
 * Submit the pack records of path ("-" for standard input), printing a
 * job record per batch made or adopted. Returns 0; QB_EX_NOINPUT or
 * QB_EX_IOERR when path could not be read to its end (reported; the run
 * may go on with another input); or r->fatal, once set: --strict stopped
 * at a bad line or record (QB_EX_DATAERR), or standard output failed
 * (QB_EX_IOERR), said; the run ends there.
 */
int submit_file(struct submit *r, const char *path);
/*
 * Say the summary on standard error (not after r->fatal), free what r
 * holds and return the run's exit status (qb(7)), rc being the worst
 * submit_file status.
 */
int submit_end(struct submit *r, int rc);

#endif
