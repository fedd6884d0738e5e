/*
 * recon.h: the join of qb-reconcile: requests (reqindex.h) and the
 * results and job records read for them, to one outcome record per
 * request: done, retry (an item again) or dead (qb(7) RECORD FORMATS).
 * Every request gets one outcome, once, or stays pending (qb(7) CUSTODY).
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_RECON_H
#define QB_RECON_H

#include <stdint.h>
#include <stdio.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "base/idmap.h"
#include "json/jscan.h"
#include "json/jsonl.h"
#include "record/jobend.h"
#include "record/price.h"
#include "record/reqindex.h"
#include "record/result.h"

/* A job record read: what its requests without a result become. */
struct recon_job {
	char		*batch_id;	/* owned */
	int		 ended;		/* its batch ended */
	int		 unread;	/* a file of it could not be read whole */
	struct jobend	 end;
};

struct recon {
	FILE			*out;		/* outcomes go here: stdout unless set */
	int			 strict;	/* the first rejected line stops */
	int			 unbuffered;	/* flush stdout after each outcome */
	const struct prices	*prices;	/* by reference */
	/* req.tag: 1 + the last job naming its file, or 0; req.state: 0
	 * until its outcome is written, then 1 + outcome. */
	struct reqindex		 ri;
	struct result_parser	 rp;		/* the caller's lines go through it */
	struct recon_job	*jobs;
	size_t			 njobs;
	struct idmap		 self;		/* ids of results joined to themselves */
	/* What was done, for the summary: */
	unsigned long		 nout[3], npending, nunclaimed, nunknown, ndup;
	unsigned long		 nsuper;	/* retries a later done or dead stood over */
	unsigned long		 nbad;		/* lines rejected, each reported */
	unsigned long		 nreq;		/* recon_add: requests of the jobs added */
	unsigned long		 nraw;		/* result lines read outside any job */
	unsigned long		 naccount;	/* results failed for the account */
	unsigned long long	 tin, tout;	/* tokens in and out */
	double			 cost;		/* USD, of the outcomes with a price */
	int			 ioerr;		/* a write to out (not stdout) failed */
	int			 unread;	/* results of some job not read whole */
	/* Private: */
	uint8_t			*selfout;	/* the outcome each self-join was given */
	struct jscan		 sscan;
	int			*mprice;
	size_t			 nmprice;
	yajl_gen		 g;
};

/* The members of a job record that recon_job reads (NULL-terminated). */
extern const char *const recon_jobkeys[];

/*
 * Start a join (rc need not be initialised) whose requests are the files
 * req[0..nreq-1], indexed now; outcomes are priced by prices (kept by
 * reference). Returns 0; or, reported, QB_EX_NOINPUT ("FILE: reason")
 * when a file cannot be opened, or what reqindex_file returned. rc is to
 * be freed with recon_free in every case.
 */
int recon_init(struct recon *rc, char *const *req, int nreq,
    const struct prices *prices, int strict);
/* Free what rc holds. */
void recon_free(struct recon *rc);
/* Add what join j counted to all's, j's requests to all->nreq. */
void recon_add(struct recon *all, const struct recon *j);

/*
 * A line refused (reported already): counted in rc->nbad. Returns 0, or
 * under rc->strict QB_EX_DATAERR after saying "stopped at the first
 * rejected line (--strict)".
 */
int recon_reject(struct recon *rc);

/*
 * Result res, read outside any job at the line of r (line, len: its
 * bytes), parsed from it by result_parse with rc->rp, whose scan is used
 * again: its outcome is written, joined to its request by id; or, for a
 * qb result record that carries its own request (qb-submit --sync) and
 * whose id no request claims, to itself, with its other members. A
 * result for no request, or for one that has an outcome, is reported and
 * refused (a done or dead stands over a retry whatever the order).
 * Returns 0, or a status to stop with, reported: QB_EX_DATAERR (strict),
 * QB_EX_IOERR (standard output cannot be written, or a request not read
 * again).
 */
int recon_result(struct recon *rc, const struct jsonl_reader *r,
    const struct result *res, const char *line, size_t len);

/*
 * Job record v (its line is that of r; v stays the caller's and needs
 * only the members recon_jobkeys names): its file's requests are claimed
 * by it (the file is indexed first when no request file is the same
 * file), then its results files are read. "ended" false (or absent with
 * a status that can still change) leaves its requests without results
 * pending; an ended batch failed for errors that name lines of its file
 * makes those requests dead. Returns as recon_result.
 */
int recon_job(struct recon *rc, const struct jsonl_reader *r, yajl_val v);

/*
 * At the end: a retry for each request without an outcome, in request
 * order, unless its job has not ended or its results could not be read
 * (pending), or no job read claims it while some job was read
 * (unclaimed). Returns 0, or QB_EX_IOERR, reported.
 */
int recon_finish(struct recon *rc);

#endif
