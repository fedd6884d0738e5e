/*
 * ledger.h: the job ledger (qb(7) RECORD FORMATS, CUSTODY), a JSONL file
 * of job records that qb-submit appends to and qb-poll -i and qb-reap -i
 * rewrite, each under an exclusive flock(2); the run locks that keep two
 * runs of one tool off a ledger.
 *
 * Besides jobs, qb-submit appends an intent line just before it creates
 * a batch: {"intent":SHA256,"file":...,"at":RFC3339,"provider":...}. An
 * intent with no job after it for the same digest means a create whose
 * outcome was never recorded, unless a line {"intent":SHA256,
 * "withdrawn":true,"at":...} says the create was refused. Readers of jobs
 * skip intent lines (ledger_is_intent); what they mean for a digest is
 * custody's (custody.h).
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_LEDGER_H
#define QB_LEDGER_H

#include <stdio.h>
#include <sys/types.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "base/idmap.h"
#include "json/jscan.h"

struct ledger {
	char		*path;		/* owned */
	int		 fd;		/* open and locked, or -1 */
	double		 wait;		/* seconds to wait for the lock (QB_LOCK_WAIT, 30) */
	dev_t		 dev;		/* the file ledger_refresh read ... */
	ino_t		 ino;
	off_t		 off;		/* ... and how far */
	unsigned long	 lineno;	/* lines read so far, for messages */
	struct idmap	 sha;		/* sha256 of every job or intent seen */
	char		**batch;	/* batch_id of sha member i, or NULL; owned */
	char		**intent;	/* "at" of its intent with no job after it, or NULL; owned */
	unsigned char	*reaped;	/* its latest job was ended by qb-reap; owned */
	char		***results;	/* its latest job's "results" paths,
					   NULL-terminated, or NULL; owned */
	struct idmap	 ids;		/* every batch_id seen */
	int		 runfd;		/* the run lock (ledger_runlock), or -1 */
	/* If set, ledger_refresh also hands each job record it reads (not
	   intents) to each(each_arg, job); the tree is freed after. */
	void		(*each)(void *arg, yajl_val job);
	void		*each_arg;
};

/* Lock modes for ledger_lock. */
#define LEDGER_READ	0	/* shared; a missing file is QB_EX_NOINPUT */
#define LEDGER_APPEND	1	/* exclusive; the file is made if missing */
#define LEDGER_WRITE	2	/* exclusive; a missing file is QB_EX_NOINPUT */

/*
 * An empty ledger for path, waiting QB_LOCK_WAIT seconds for its locks.
 * Returns 0, or QB_EX_CONFIG, reported, for a bad QB_LOCK_WAIT; ledger_free
 * is harmless on l either way.
 */
int ledger_init(struct ledger *l, const char *path);
/* Unlock if locked and free what l holds. */
void ledger_free(struct ledger *l);

/*
 * Open and lock the ledger file. A rename over the file (a rewrite) while
 * waiting is noticed and the new file locked instead. Returns 0; or
 * QB_EX_NOINPUT (missing, not reported); QB_EX_TEMPFAIL when another
 * process held the lock for more than l->wait seconds; QB_EX_IOERR. All
 * but the first are reported on stderr.
 */
int ledger_lock(struct ledger *l, int mode);
/* Release the lock and close the file; harmless when not locked. */
void ledger_unlock(struct ledger *l);

/*
 * Take the run lock of tool ("submit", "poll", "reap"): an exclusive
 * flock(2) on PATH.submit.lock, or for qb-poll and qb-reap, which both
 * rewrite jobs, on the one PATH.poll.lock, beside the ledger (made if
 * missing), held until ledger_free. Waits up to l->wait seconds. Returns
 * 0; or, reported, QB_EX_TEMPFAIL ("another qb-submit holds PATH"),
 * QB_EX_NOINPUT when the ledger's directory is missing, QB_EX_IOERR.
 */
int ledger_runlock(struct ledger *l, const char *tool);
/*
 * Start a run of tool: check that the ledger exists (create set: make it
 * if missing), then take the run lock. Returns 0 or a QB_EX_* status,
 * reported (a missing ledger or directory is QB_EX_NOINPUT).
 */
int ledger_start(struct ledger *l, const char *tool, int create);

/*
 * Read the job records added since the last call (all of them the first
 * time, or after a rewrite) into l->sha and l->ids, under a shared lock.
 * A missing file reads as empty; lines that are not JSON objects are
 * reported (PATH:LINE) and ignored. Returns 0 or a QB_EX_* status.
 */
int ledger_refresh(struct ledger *l);
/* The batch_id of the latest job for sha256 ("" for a job record without
 * one), or NULL when no job holds it (none, or only an intent). */
const char *ledger_sha(const struct ledger *l, const char *sha256);
/* The "at" of sha256's intent if no job came after it, else NULL. */
const char *ledger_intent(const struct ledger *l, const char *sha256);
/* 1 if some job in the ledger has batch_id id, else 0. */
int ledger_known(const struct ledger *l, const char *id);

/*
 * 1 if the record rec (a tree), or the one scanned in s, is an intent
 * line: it has an "intent" member and no "batch_id". Else 0: a job, or
 * not a ledger's line at all.
 */
int ledger_is_intent(yajl_val rec);
int ledger_is_intent_scan(const struct jscan *s);

/*
 * Append an intent line for sha256 (file and provider as in the pack
 * record, "at" now) as ledger_append does. Returns 0 or a QB_EX_* status.
 */
int ledger_intend(struct ledger *l, const char *sha256, const char *file,
    const char *provider);

/*
 * Append a line withdrawing sha256's intent: its create was refused and
 * made nothing. Returns 0 or a QB_EX_* status, reported.
 */
int ledger_withdraw(struct ledger *l, const char *sha256);
/* 1 if the latest job for sha256 has a "reaped" member (qb-reap), else 0. */
int ledger_reaped(const struct ledger *l, const char *sha256);
/*
 * The result files qb-poll listed in the latest job for sha256, as a
 * NULL-terminated array owned by l (valid until its next refresh), or
 * NULL when it lists none or no job holds sha256.
 */
char *const *ledger_results(const struct ledger *l, const char *sha256);

/*
 * Append the len bytes of one job record at line (no newline) under an
 * exclusive lock, then a newline, then fsync; remember sha256 and
 * batch_id (either may be NULL). Returns 0 or a QB_EX_* status, reported.
 */
int ledger_append(struct ledger *l, const char *sha256, const char *batch_id,
    const char *line, size_t len);

/*
 * Called by ledger_rewrite for each non-blank line (len bytes, no line
 * ending; rec is its parse when it is a JSON object, else NULL): write
 * what replaces it, with its newline, to out (nothing drops it). Return 0,
 * or -1 to abandon the rewrite.
 */
typedef int (*ledger_fn)(void *arg, const char *line, size_t len,
    yajl_val rec, FILE *out);
/*
 * Replace the ledger, under an exclusive lock, by what fn makes of each
 * line: written to a temporary file, fsync'd and renamed over it
 * (base/afile.h). Returns 0 or a QB_EX_* status, reported; on failure the
 * old ledger is left as it was.
 */
int ledger_rewrite(struct ledger *l, ledger_fn fn, void *arg);

#endif
