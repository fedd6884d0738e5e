/*
 * custody.h: whether qb may pay for a batch file, the custody protocol of
 * qb-submit (qb(7) CUSTODY). A file is known by the SHA-256 digest of its
 * content. For one pack record custody_ask weighs what this run gave a
 * batch, what the ledger holds for the digest (a job, or an intent with no
 * job after it: a create whose outcome went unrecorded) and, where they
 * may hold a batch the ledger does not, the provider's batches; it says
 * create, adopt the batch found, or leave the file. The ledger then
 * gets an intent before each create (custody_intend), its withdrawal or a
 * warning when the create fails (custody_failed), and the job of each
 * batch made or adopted (custody_record).
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_CUSTODY_H
#define QB_CUSTODY_H

#include <yajl/yajl_tree.h>

#include "base/idmap.h"
#include "ledger/ledger.h"
#include "provider/provops.h"

struct custody {
	struct ledger	 led;		/* with useled: made, locked, read */
	int		 useled;
	struct idmap	 run;		/* digests given a batch in this run */
	struct provider_conns *conns;	/* to ask providers; not owned */
	double		 grace;		/* s after an intent in which its batch
					   may still appear (QB_CREATE_GRACE) */
	double		 lookback;	/* s of batches searched for a digest no
					   job holds; 0: none */
};

/* What custody_ask says of one file. */
enum custody_say {
	CUSTODY_CREATE,		/* pay for it: upload and create its batch */
	CUSTODY_ADOPT,		/* a batch exists for it: record that one */
	CUSTODY_SKIP,		/* the ledger's batch for it ran, or may */
	CUSTODY_REPEATED,	/* given a batch earlier in this run */
	CUSTODY_REJECT,		/* file changed, unreadable, or its batch unknown */
	CUSTODY_WAIT,		/* an unrecorded create may yet make its batch */
	CUSTODY_STOP		/* the ledger or the provider failed */
};

/* One pack record before custody. */
struct custody_file {
	/* In, set by the caller: */
	const char	*src;		/* its input's name, for messages */
	unsigned long	 lineno;	/* and its line there */
	yajl_val	 rec;		/* the pack record, checked */
	const char	*file, *sha;	/* its "file", "sha256" (64 hex digits) */
	const struct provider *p;	/* where it goes */
	/* Out, from custody_ask; custody_release frees them: */
	int		 status;	/* CUSTODY_STOP: a QB_EX_* status */
	int		 fatal;		/* CUSTODY_STOP: the provider's settings
					   are bad (reported): end the run now */
	yajl_val	 batch;		/* CUSTODY_ADOPT: the batch found ... */
	struct provider_job pj;		/* ... and what it says */
	char		*reuse;		/* CUSTODY_CREATE: the input file id of a
					   batch that ran nothing, for the new
					   create, or NULL */
};

/*
 * Start custody for a run, without a ledger: providers are asked over
 * conns (kept, not copied), with grace and lookback as in struct custody.
 */
void custody_init(struct custody *c, struct provider_conns *conns,
    double grace, double lookback);
/*
 * Keep the ledger at path: made if missing, its run lock taken and it
 * read, each job record also handed to each(arg, job) if each is not NULL
 * (then on every later read: ledger.h). Returns 0, or a QB_EX_* status,
 * reported; c is then still without a ledger.
 */
int custody_ledger(struct custody *c, const char *path,
    void (*each)(void *arg, yajl_val job), void *arg);
/* Unlock the ledger, if any, and free what c holds. */
void custody_free(struct custody *c);

/*
 * What to do with f (its "in" members set; the rest are cleared first).
 * In order: a digest given a batch in this run is REPEATED. With a
 * ledger, read again (another tool may have rewritten it): an intent with
 * no job after it is looked for among the provider's batches (ADOPT; or
 * WAIT within c->grace of the intent; or CREATE); a job holding the
 * digest means SKIP, unless the file is all retries and that batch was
 * reaped or ran nothing (CREATE, with f->reuse). Then the file must still
 * have its digest (else REJECT), and one that no job or intent holds is
 * looked for among the batches of the last c->lookback seconds where
 * batches carry the digest (ADOPT, or CREATE). Each answer but CREATE is
 * said on stderr at f->src:f->lineno (CREATE only with -v); STOP gives
 * f->status. Providers are asked over c->conns, opened on first use.
 */
enum custody_say custody_ask(struct custody *c, struct custody_file *f);
/* Free what custody_ask put in f. */
void custody_release(struct custody_file *f);

/*
 * Before the create of f's batch, with a ledger: append the intent, so
 * that a batch made by a create whose outcome is lost can be found.
 * Returns 0 or a QB_EX_* status, reported.
 */
int custody_intend(struct custody *c, const struct custody_file *f);
/*
 * The create of f's batch failed. With unknown set the provider may have
 * made it all the same (the request went, no answer came): say how the
 * batch can be found. Else nothing was made: withdraw the intent.
 * Returns 0, or QB_EX_IOERR when the withdrawal could not be appended
 * (reported).
 */
int custody_failed(struct custody *c, const struct custody_file *f,
    int unknown);
/*
 * The batch batch_id was made or adopted for f: it counts for this run,
 * and the job record (len bytes at line, no newline) goes into the
 * ledger. Returns 0 or a QB_EX_* status, reported with what to do about
 * the batch (print the job record all the same: it must not be lost).
 */
int custody_record(struct custody *c, const struct custody_file *f,
    const char *batch_id, const char *line, size_t len);

#endif
