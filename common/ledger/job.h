/*
 * job.h: job_emit, which writes a job record (qb(7) RECORD FORMATS) from
 * a pack or job record and what a provider says of its batch.
 * SPDX-License-Identifier: ISC
 */
#ifndef QB_JOB_H
#define QB_JOB_H

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "provider/provider.h"

/* What job_emit changes in a record; a NULL or -1 member keeps the old value. */
struct job_set {
	const char	*provider;	/* "provider" */
	const struct provider_job *pj;	/* batch_id, status, times, counts, errors */
	int		 ended;		/* "ended": 0, 1, or -1 to keep */
	const char *const *results;	/* "results": nresults paths */
	int		 nresults;
	const char	*error;		/* "error": {"message":..., "http_status":...} */
	long		 error_status;	/* its HTTP status, 0 for none */
	const char	*cancel_at;	/* "cancel_requested_at": RFC 3339 (qb-reap) */
	const char	*reaped_at;	/* "reaped": {"at":reaped_at, */
	const char	*reaped_why;	/*   "reason":reaped_why} (qb-reap) */
};

/*
 * Whether a job record written from s may say "ended": true. A batch
 * that has ended is done with only once every result file the provider
 * lists for it (s->pj->nresult) is on disk and named in s->results, or
 * once qb-reap has ended it (s->reaped_at: its files are gone). Every
 * writer of job records holds this rule through job_emit; see CUSTODY
 * in qb(7).
 */
int job_may_end(const struct job_set *s);
/*
 * Write into g (at the top level) the job record rec (a pack or job
 * record, or NULL) with the members s sets replaced where they stand and
 * the others appended; every other member is carried unchanged. An old
 * "error" member is dropped when s->pj is set and s->error is not.
 * s->ended 1 is written as false unless job_may_end(s).
 */
void job_emit(yajl_gen g, yajl_val rec, const struct job_set *s);

#endif
