/*
 * ledger.h: the job ledger (DESIGN.md §3, §4), a JSONL file of job
 * records that qb-submit appends to and qb-poll -i rewrites, each under
 * an exclusive flock(2); and job_emit, which writes a job record.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_LEDGER_H
#define QB_LEDGER_H

#include <stdio.h>
#include <sys/types.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "idmap.h"
#include "provider.h"

struct ledger {
	char		*path;		/* owned */
	int		 fd;		/* open and locked, or -1 */
	double		 wait;		/* seconds to wait for the lock (QB_LOCK_WAIT, 30) */
	dev_t		 dev;		/* the file ledger_refresh read ... */
	ino_t		 ino;
	off_t		 off;		/* ... and how far */
	unsigned long	 lineno;	/* lines read so far, for messages */
	struct idmap	 sha;		/* sha256 of every job seen */
	char		**batch;	/* batch_id of sha member i, or NULL; owned */
	struct idmap	 ids;		/* every batch_id seen */
};

/* Lock modes for ledger_lock. */
#define LEDGER_READ	0	/* shared; a missing file is QB_EX_NOINPUT */
#define LEDGER_APPEND	1	/* exclusive; the file is made if missing */
#define LEDGER_WRITE	2	/* exclusive; a missing file is QB_EX_NOINPUT */

/* An empty ledger for path; reads QB_LOCK_WAIT (bad value: exit 78). */
void ledger_init(struct ledger *l, const char *path);
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
 * Read the job records added since the last call (all of them the first
 * time, or after a rewrite) into l->sha and l->ids, under a shared lock.
 * A missing file reads as empty; lines that are not JSON objects are
 * reported (PATH:LINE) and ignored. Returns 0 or a QB_EX_* status.
 */
int ledger_refresh(struct ledger *l);
/* The batch_id recorded for sha256 ("" if none was recorded), or NULL. */
const char *ledger_sha(const struct ledger *l, const char *sha256);

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
 * (common/afile). Returns 0 or a QB_EX_* status, reported; on failure the
 * old ledger is left as it was.
 */
int ledger_rewrite(struct ledger *l, ledger_fn fn, void *arg);

/* What job_emit changes in a record; a NULL or -1 member keeps the old value. */
struct job_set {
	const char	*provider;	/* "provider" */
	const struct provider_job *pj;	/* batch_id, status, times, counts, errors */
	int		 ended;		/* "ended": 0, 1, or -1 to keep */
	const char *const *results;	/* "results": nresults paths */
	int		 nresults;
	const char	*error;		/* "error": {"message":..., "http_status":...} */
	long		 error_status;	/* its HTTP status, 0 for none */
};

/*
 * Write into g (at the top level) the job record rec (a pack or job
 * record, or NULL) with the members s sets replaced where they stand and
 * the others appended; every other member is carried unchanged. An old
 * "error" member is dropped when s->pj is set and s->error is not.
 */
void job_emit(yajl_gen g, yajl_val rec, const struct job_set *s);

#endif
