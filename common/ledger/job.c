/*
 * job.c: the job record writer. Members it sets are replaced where they
 * stand and new ones appended in a fixed order, so that a job record keeps
 * the shape of the pack record it grew from.
 * SPDX-License-Identifier: ISC
 */
#include <string.h>

#include "json/jout.h"
#include "ledger/job.h"

/* The members job_emit may set, in the order new ones are appended. */
enum { S_PROVIDER, S_BATCH, S_INPUT, S_STATUS, S_ENDED, S_TIME, S_COUNTS,
    S_ERRORS, S_RESULTS, S_ERROR, S_CANCEL, S_REAPED };

struct slot {
	const char	*key;
	int		 what, i, done;
};

static void
emit(yajl_gen g, const struct job_set *s, const struct slot *sl)
{
	const struct provider_job *pj = s->pj;
	int i;

	jout_key(g, sl->key);
	switch (sl->what) {
	case S_PROVIDER:
		jout_str(g, s->provider);
		break;
	case S_BATCH:
		jout_str(g, pj->id);
		break;
	case S_INPUT:
		jout_str(g, pj->input_file_id);
		break;
	case S_STATUS:
		jout_str(g, pj->status);
		break;
	case S_ENDED:
		yajl_gen_bool(g, s->ended);
		break;
	case S_TIME:
		jout_str(g, pj->time[sl->i].val);
		break;
	case S_COUNTS:
		jout_open(g);
		jout_kint(g, "total", pj->total);
		jout_kint(g, "completed", pj->completed);
		jout_kint(g, "failed", pj->failed);
		jout_close(g);
		break;
	case S_ERRORS:
		jout_val(g, pj->errors);
		break;
	case S_RESULTS:
		yajl_gen_array_open(g);
		for (i = 0; i < s->nresults; i++)
			jout_str(g, s->results[i]);
		yajl_gen_array_close(g);
		break;
	case S_ERROR:
		jout_open(g);
		jout_kstr(g, "message", s->error);
		if (s->error_status > 0)
			jout_kint(g, "http_status", s->error_status);
		jout_close(g);
		break;
	case S_CANCEL:
		jout_str(g, s->cancel_at);
		break;
	case S_REAPED:
		jout_open(g);
		jout_kstr(g, "at", s->reaped_at);
		jout_kstr(g, "reason", s->reaped_why);
		jout_close(g);
		break;
	}
}

int
job_may_end(const struct job_set *s)
{
	if (s->reaped_at != NULL || s->pj == NULL)
		return 1;
	return s->results != NULL && s->nresults >= s->pj->nresult;
}

void
job_emit(yajl_gen g, yajl_val rec, const struct job_set *s)
{
	const struct provider_job *pj = s->pj;
	struct job_set end;
	struct slot sl[12 + JOB_TIMES];
	const char *k;
	size_t i;
	int n = 0, j, t;

	/* Ended only with its files on disk: a later qb-poll fetches them. */
	if (s->ended == 1 && !job_may_end(s)) {
		end = *s;
		end.ended = 0;
		s = &end;
	}

#define ADD(cond, key_, what_, i_) do { if (cond) { sl[n].key = (key_); \
	sl[n].what = (what_); sl[n].i = (i_); sl[n++].done = 0; } } while (0)
	ADD(s->provider != NULL, "provider", S_PROVIDER, 0);
	ADD(pj != NULL && pj->id != NULL, "batch_id", S_BATCH, 0);
	ADD(pj != NULL && pj->input_file_id != NULL, "input_file_id", S_INPUT, 0);
	ADD(pj != NULL, "status", S_STATUS, 0);
	ADD(s->ended >= 0, "ended", S_ENDED, 0);
	for (t = 0; pj != NULL && t < pj->ntime; t++)
		ADD(1, pj->time[t].key, S_TIME, t);
	ADD(pj != NULL && pj->has_counts, "counts", S_COUNTS, 0);
	ADD(pj != NULL && pj->errors != NULL, "errors", S_ERRORS, 0);
	ADD(s->results != NULL, "results", S_RESULTS, 0);
	ADD(s->error != NULL, "error", S_ERROR, 0);
	ADD(s->cancel_at != NULL, "cancel_requested_at", S_CANCEL, 0);
	ADD(s->reaped_at != NULL, "reaped", S_REAPED, 0);
#undef ADD
	jout_open(g);
	for (i = 0; YAJL_IS_OBJECT(rec) && i < rec->u.object.len; i++) {
		k = rec->u.object.keys[i];
		for (j = 0; j < n; j++)
			if (strcmp(sl[j].key, k) == 0)
				break;
		if (j < n) {
			if (!sl[j].done)
				emit(g, s, &sl[j]);
			sl[j].done = 1;
		} else if (!(strcmp(k, "error") == 0 && pj != NULL))
			jout_kval(g, k, rec->u.object.values[i]);
	}
	for (j = 0; j < n; j++)
		if (!sl[j].done)
			emit(g, s, &sl[j]);
	jout_close(g);
}
