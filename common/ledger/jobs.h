/*
 * jobs.h: the job records a run of qb-poll, qb-reap or qb-reconcile reads
 * (qb(7) RECORD FORMATS), kept with their text, parse and place, found by
 * batch id, and put back into a ledger rewrite.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_JOBS_H
#define QB_JOBS_H

#include <stdio.h>
#include <yajl/yajl_tree.h>

#include "base/idmap.h"
#include "ledger/ledger.h"

/* One job record as read. A tool's own job struct begins with one. */
struct jobrec {
	char		*line;		/* the record as read, no newline; owned */
	size_t		 len;		/* its bytes */
	yajl_val	 rec;		/* its parse; owned */
	const char	*src;		/* input name, for messages; owned by the list */
	unsigned long	 lineno;	/* its line there */
	char		*out;		/* the changed record, or NULL; owned */
};

struct jobs {
	void		*v;		/* n elements of size bytes; owned */
	size_t		 n, size;
	struct idmap	 ids;		/* batch ids; member i is element ix[i] */
	size_t		*ix;
	char		**names;	/* input names; owned */
	size_t		 nnames;
	int		 strict;	/* a bad line stops the reading (65) */
	unsigned long	 nbad;		/* lines rejected, each reported */
};

/*
 * An empty list of elements of size bytes (at least sizeof(struct
 * jobrec), the struct jobrec first), zeroed when added.
 */
void jobs_init(struct jobs *js, size_t size, int strict);
/*
 * Add the job records of path ("-" for standard input): intent lines of a
 * ledger are skipped; a line that is not an object or has no string
 * "batch_id" is reported (FILE:LINE) and counted in js->nbad. A batch id
 * given twice finds its last record. Returns 0; QB_EX_NOINPUT or
 * QB_EX_IOERR, reported; or, if js->strict, QB_EX_DATAERR at the first
 * bad line ("stopped at the first bad line (--strict)" said), the lines
 * after it unread.
 */
int jobs_read(struct jobs *js, const char *path);
/*
 * Read the jobs of a run: from ledger led if it is not NULL (initialised;
 * the run lock of tool runlock taken first unless runlock is NULL, then
 * read under a shared lock), else from files[0..nfiles-1], else from
 * standard input. Returns 0, or the status of the first failure, reported
 * (ledger_start, ledger_lock, jobs_read); the caller ends the run with it.
 */
int jobs_load(struct jobs *js, struct ledger *led, const char *runlock,
    char **files, int nfiles);
/* Element i (i < js->n). */
void *jobs_at(const struct jobs *js, size_t i);
/* The element whose record has batch_id id, or NULL. */
void *jobs_find(const struct jobs *js, const char *id);
/*
 * ledger_rewrite callback (ledger.h), arg a struct jobs: a line whose
 * batch_id names an element with an out is replaced by it; every other
 * line is written as it is.
 */
int jobs_replace(void *arg, const char *line, size_t len, yajl_val rec,
    FILE *out);
/*
 * After a ledger rewrite by jobs_replace: each element's out becomes its
 * line (the old line is freed), so that a later rewrite in the run puts
 * back only what changed after it.
 */
void jobs_written(struct jobs *js);
/* Free the list and each element's struct jobrec members. */
void jobs_free(struct jobs *js);

#endif
