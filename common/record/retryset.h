/*
 * retryset.h: the retry outcomes qb-pack packs again, held until its
 * input is read. Each comes from the batch named in its "batch_id" (its
 * source); the retries of one source are written sorted by id, and an id
 * the input also gives a final outcome (done or dead) is left out. So the
 * retries of a batch, packed again from all outcome files, make the same
 * files each time: the same as those its own retry batch's retries make
 * once it ends, and never a file holding an id that has its answer.
 * The lines are spooled to an unlinked temporary file, not memory.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_RETRYSET_H
#define QB_RETRYSET_H

#include <stdio.h>

#include "base/idmap.h"

struct retryset {
	FILE		*spool;		/* the lines, back to back; or NULL */
	long long	 off;		/* bytes written to it */
	struct idmap	 finals;	/* ids with a final outcome */
	struct retry	*e;		/* n of them; owned */
	size_t		 n;
};

/* An empty set; release it with retryset_free. */
void retryset_init(struct retryset *rs);
/* Note that id (n bytes) has a final outcome in the input. */
void retryset_final(struct retryset *rs, const char *id, size_t n);
/*
 * Hold the len bytes at line, the batch line of retry id (idlen bytes)
 * for group (the caller's number for its file group), with its
 * embedding inputs and estimated tokens. Returns 0, or -1 with errno set
 * when the spool cannot be made or written.
 */
int retryset_add(struct retryset *rs, size_t group, const char *id,
    size_t idlen, const char *line, size_t len, long ninputs,
    long long tokens);
/*
 * Call fn(arg, group, line, len, ninputs, tokens) for each retry held
 * whose id has no final outcome, by group number, then by id; line is
 * valid during the call. Stops at the first
 * nonzero fn return and returns it; returns -1 with errno set on a read
 * error, else 0.
 */
int retryset_each(struct retryset *rs, int (*fn)(void *arg, size_t group,
    const char *line, size_t len, long ninputs, long long tokens),
    void *arg);
/* Close the spool and free what rs holds. */
void retryset_free(struct retryset *rs);

#endif
