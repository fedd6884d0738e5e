/*
 * recon.c: results and job records joined to their requests, one outcome
 * record each (recon.h). Writes "id", "outcome", "cost_usd", the result
 * members (result_emit), and the request's own members (meta, queue,
 * receipt, receives ...); a retry also gets "endpoint" and "body"
 * ("params" too for Anthropic lines), copied as bytes. The requests are
 * indexed by reqindex.h and read again when an outcome needs them:
 * memory does not grow with the request bodies, and nothing is kept per
 * result but a state byte.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/exits.h"
#include "base/idmap.h"
#include "base/msg.h"
#include "base/xmem.h"
#include "json/jout.h"
#include "json/jscan.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "record/jobend.h"
#include "record/members.h"
#include "record/price.h"
#include "record/recon.h"
#include "record/reqindex.h"
#include "record/result.h"

/* Keys an outcome sets itself, or that a request carries only as its id,
 * wire format or body: never copied from the request. */
static const char *const ownkeys[] = { "id", "custom_id", "method", "url",
	"body", "params", "outcome", "status", "http_status", "error", "usage",
	"request_id", "batch_id", "response", "cost_usd", "account_error", NULL };

const char *const recon_jobkeys[] = { "batch_id", "file", "results",
	"status", "ended", "errors", "error", NULL };

int
recon_reject(struct recon *rc)
{
	rc->nbad++;
	if (!rc->strict)
		return 0;
	return qb_fail(QB_EX_DATAERR, "stopped at the first rejected line "
	    "(--strict)");
}

/* The cost of r in USD, or -1 when its usage or price is unknown: the
 * price of the requested model, else that of the model that answered. */
static double
cost(struct recon *rc, const struct req *q, const struct result *r)
{
	int p = -1;

	if (rc->prices->n == 0 || r->in_tok < 0)
		return -1;
	/* Models are added as files are indexed, between outcomes. */
	for (; rc->nmprice < rc->ri.models.n; rc->nmprice++) {
		rc->mprice = xreallocarray(rc->mprice, rc->nmprice + 1,
		    sizeof(*rc->mprice));
		rc->mprice[rc->nmprice] = -2;
	}
	if (q != NULL && q->model > 0) {
		if (rc->mprice[q->model - 1] == -2)
			rc->mprice[q->model - 1] = price_find(rc->prices,
			    idmap_key(&rc->ri.models, q->model - 1));
		p = rc->mprice[q->model - 1];
	}
	if (p < 0 && (p = price_find(rc->prices, r->model)) < 0)
		return -1;
	return ((double)r->in_tok * rc->prices->p[p].in +
	    (double)r->out_tok * rc->prices->p[p].out) / 1e6;
}

/* Open the outcome of id from result r (q: its request, or NULL). */
static void
head(struct recon *rc, const char *id, const struct req *q,
    const struct result *r, const char *batch_id)
{
	yajl_gen g = rc->g;
	char num[64];
	double c;

	rc->nout[r->outcome]++;
	jout_open(g);
	jout_kstr(g, "id", id);
	jout_kstr(g, "outcome", result_outcome_word(r->outcome));
	jout_key(g, "cost_usd");
	if ((c = cost(rc, q, r)) >= 0) {
		rc->cost += c;
		snprintf(num, sizeof(num), "%.10g", c);
		jout_raw(g, num, strlen(num));
	} else
		jout_str(g, NULL);
	result_emit(g, r, batch_id);
	if (r->in_tok >= 0) {
		rc->tin += (unsigned long long)r->in_tok;
		rc->tout += (unsigned long long)r->out_tok;
	}
}

/* Close the outcome and write it: 0, or QB_EX_IOERR for standard output
 * (reported); a job's file only notes it in rc->ioerr. */
static int
tail(struct recon *rc)
{
	jout_close(rc->g);
	if (jout_line(rc->g, rc->out) == -1 || (rc->out == stdout &&
	    rc->unbuffered && fflush(stdout) == EOF)) {
		if (rc->out == stdout)
			return qb_failsys(QB_EX_IOERR, "write error on standard "
			    "output");
		rc->ioerr = 1;	/* a job's file: said when it is committed */
	}
	return 0;
}

/* Write the outcome of request idx from result r. */
static int
emit(struct recon *rc, size_t idx, const struct result *r,
    const char *batch_id)
{
	struct req *q = &rc->ri.req[idx];

	q->state = (uint8_t)(1 + r->outcome);
	head(rc, idmap_key(&rc->ri.ids, idx), q, r, batch_id);
	if (reqindex_emit(&rc->ri, idx, rc->g, r->outcome == OUTCOME_RETRY) != 0)
		return QB_EX_IOERR;
	return tail(rc);
}

/* Say an account-level error once, loudly: no item passes until it is fixed. */
static void
account(struct recon *rc, const struct jsonl_reader *r,
    const struct result *res)
{
	if (!res->account || rc->naccount++ > 0)
		return;
	qb_lwarn(r->name, r->lineno, "account-level error for id \"%s\": "
	    "%s: %s; fix the account, then send its retries again "
	    "(marked \"account_error\")", res->id, res->etype ? res->etype :
	    (res->ecode ? res->ecode : "error"), res->emsg ? res->emsg : "");
}

/*
 * The scan of line whose members a self-join copies: result_parse's own
 * when it holds the top level whole, else (a record of more members than
 * a scan records) one of the top level alone; NULL if it cannot be had.
 */
static const struct jscan *
self_scan(struct recon *rc, const char *line, size_t len)
{
	static const char *const none[] = { NULL };
	char err[256];

	if (jscan_whole(&rc->rp.line))
		return &rc->rp.line;
	rc->sscan.deep = none;
	if (jscan_parse(&rc->sscan, line, len, err, sizeof(err)) == -1)
		return NULL;
	return &rc->sscan;
}

/*
 * res joined to itself (recon_result), once: the outcome gets its other
 * members, and a retry its endpoint and body, from its scan s.
 */
static int
self_join(struct recon *rc, const struct jsonl_reader *r,
    const struct result *res, const struct jscan *s, const char *line,
    size_t len)
{
	size_t i;
	int isnew, st;

	i = idmap_put(&rc->self, res->id, res->idlen, &isnew);
	if (isnew) {
		rc->selfout = xreallocarray(rc->selfout, rc->self.n,
		    sizeof(*rc->selfout));
		rc->selfout[i] = (uint8_t)res->outcome;
	} else if (rc->selfout[i] == OUTCOME_RETRY &&
	    res->outcome != OUTCOME_RETRY) {
		qb_lwarn(r->name, r->lineno, "result for id \"%s\": %s stands "
		    "over the retry written before", res->id,
		    result_outcome_word(res->outcome));
		rc->selfout[i] = (uint8_t)res->outcome;
		rc->nsuper++;
	} else {
		qb_lwarn(r->name, r->lineno, "duplicate result for id \"%s\"; "
		    "the first one stands", res->id);
		rc->ndup++;
		return recon_reject(rc);
	}
	head(rc, res->id, NULL, res, NULL);
	members_write(s, rc->g, line, len, ownkeys,
	    res->outcome == OUTCOME_RETRY);
	if ((st = tail(rc)) != 0)
		return st;
	account(rc, r, res);
	return 0;
}

/* Result res from reader r; job is 1 + the job whose results file r is. */
static int
take_result(struct recon *rc, const struct jsonl_reader *r,
    const struct result *res, uint32_t job)
{
	size_t idx = idmap_get(&rc->ri.ids, res->id, res->idlen);
	const struct req *q;
	int st;

	if (idx == (size_t)-1) {
		qb_lwarn(r->name, r->lineno, "result for unknown id \"%s\"", res->id);
		rc->nunknown++;
		return recon_reject(rc);
	}
	q = &rc->ri.req[idx];
	/*
	 * A done or dead stands over a retry whatever the order: a batch of
	 * retries may have ended before the first batch's answers were read.
	 */
	if (q->state == 1 + OUTCOME_RETRY && res->outcome != OUTCOME_RETRY) {
		qb_lwarn(r->name, r->lineno, "result for id \"%s\": %s stands "
		    "over the retry written before", res->id,
		    result_outcome_word(res->outcome));
		rc->nsuper++;
	} else if (q->state != 0) {
		qb_lwarn(r->name, r->lineno, "duplicate result for id \"%s\"; "
		    "the first one (%s) stands", res->id,
		    result_outcome_word((enum result_outcome)(q->state - 1)));
		rc->ndup++;
		return recon_reject(rc);
	}
	if ((st = emit(rc, idx, res, job ? rc->jobs[job - 1].batch_id :
	    NULL)) != 0)
		return st;
	account(rc, r, res);
	return 0;
}

int
recon_result(struct recon *rc, const struct jsonl_reader *r,
    const struct result *res, const char *line, size_t len)
{
	const struct jscan *s;

	rc->nraw++;
	if (res->kind == RESULT_QB &&
	    idmap_get(&rc->ri.ids, res->id, res->idlen) == (size_t)-1 &&
	    (s = self_scan(rc, line, len)) != NULL &&
	    (jscan_find(s, -1, "body") >= 0 || jscan_find(s, -1, "params") >= 0))
		return self_join(rc, r, res, s, line, len);
	return take_result(rc, r, res, 0);
}

/*
 * Read the result lines of path, a results file of job 1 + job - 1.
 * Returns 0; -1 with errno set if path cannot be opened; or a status to
 * stop with, reported.
 */
static int
read_results(struct recon *rc, const char *path, uint32_t job)
{
	struct recon_job *j = &rc->jobs[job - 1];
	struct jsonl_reader r;
	struct jsonl_rec rec;
	struct result res;
	char err[256];
	int ch, rv, st = 0;

	if (jsonl_open(&r, path) == -1)
		return -1;
	while (st == 0 && (ch = jsonl_read(&r, &rec)) != JSONL_EOF) {
		if (ch == JSONL_IOERR) {
			/* What was not read stays pending, never retried. */
			rc->ioerr = j->unread = 1;
			break;
		}
		rv = ch == JSONL_BAD ? -1 : result_parse(&rc->rp, rec.line,
		    rec.len, &res, err, sizeof(err));
		if (rv == 0) {
			st = take_result(rc, &r, &res, job);
			continue;
		}
		if (ch != JSONL_BAD)
			qb_lwarn(r.name, r.lineno, "%s", rv < 0 ? err :
			    "not a result line");
		/*
		 * A damaged results file may hide the result of any request
		 * of the job: those without one stay pending, never retried
		 * (they may have run, and been billed).
		 */
		if (!j->unread)
			qb_lwarn(r.name, r.lineno, "job %s: its requests without "
			    "a result stay pending", j->batch_id);
		j->unread = rc->unread = 1;
		st = recon_reject(rc);
	}
	jsonl_close(&r);
	return st;
}

/* The dead outcome of request idx for error e of a line of job j. */
static int
dead_line(struct recon *rc, size_t idx, yajl_val e, const struct recon_job *j)
{
	struct result m;

	memset(&m, 0, sizeof(m));
	m.kind = RESULT_QB;
	m.status = RESULT_ERRORED;
	m.outcome = OUTCOME_DEAD;
	m.http_status = m.in_tok = m.out_tok = -1;
	m.ecode = jtree_str(e, "code");
	m.emsg = jtree_str(e, "message");
	m.eparam = jtree_str(e, "param");
	return emit(rc, idx, &m, j->batch_id);
}

/*
 * Job jn failed for errors that name lines of its file: each request at
 * such a line is dead, with that line's error (it would fail again). A
 * line that holds no request is reported (why: the reason, when the
 * file's lines cannot be matched at all); the requests not named keep
 * the job's retry (recon_finish).
 */
static int
dead_lines(struct recon *rc, const struct jsonl_reader *r, yajl_val v,
    uint32_t jn, const char *file, const char *why)
{
	yajl_val errs = jobend_errors(v), e;
	const struct recon_job *j = &rc->jobs[jn - 1];
	uint32_t *line;
	size_t *idx, i, n = 0, nmiss = 0;
	int st = 0;

	line = xreallocarray(NULL, errs->u.array.len, sizeof(*line));
	idx = xreallocarray(NULL, errs->u.array.len, sizeof(*idx));
	for (i = 0; i < errs->u.array.len; i++)
		if ((line[n] = jobend_line(errs->u.array.values[i])) > 0)
			n++;
	if (why == NULL &&
	    (st = reqindex_lines(&rc->ri, file, line, n, idx)) == -1) {
		why = strerror(errno);
		st = 0;
	}
	for (i = n = 0; st == 0 && i < errs->u.array.len; i++) {
		e = errs->u.array.values[i];
		if (jobend_line(e) == 0)
			continue;
		if (why != NULL || idx[n] == (size_t)-1) {
			/* Say each of the first ten, then how many more. */
			if (nmiss++ < 10)
				qb_lwarn(r->name, r->lineno, "job %s: line %lu (%s) "
				    "matches no request%s%s", j->batch_id,
				    (unsigned long)line[n], jtree_str(e, "code") ?
				    jtree_str(e, "code") : "error", why ? ": " :
				    " in ", why ? why : file);
		} else if (rc->ri.req[idx[n]].state == 0)
			st = dead_line(rc, idx[n], e, j);
		n++;
	}
	if (st == 0 && nmiss > 10)
		qb_lwarn(r->name, r->lineno, "job %s: %zu more lines match no "
		    "request", j->batch_id, nmiss - 10);
	free(line);
	free(idx);
	return st;
}

/*
 * The requests of file, the file of job jn, claimed by it: those of the
 * request file it is, else those it holds, indexed now. Returns 0, or a
 * status to stop with; *nofile is set when it cannot be read (reported).
 */
static int
claim(struct recon *rc, const struct jsonl_reader *r, uint32_t jn,
    const char *file, int *nofile)
{
	struct recon_job *j = &rc->jobs[jn - 1];
	size_t i, f;
	int st;

	*nofile = 0;
	if ((f = reqindex_same(&rc->ri, file)) != (size_t)-1) {
		for (i = 0; i < rc->ri.ids.n; i++)
			if (rc->ri.req[i].file == f)
				rc->ri.req[i].tag = jn;
		return 0;
	}
	if ((st = reqindex_file(&rc->ri, file, jn)) != -1)
		return st;
	qb_lwarn(r->name, r->lineno, "job %s: %s: %s", j->batch_id, file,
	    strerror(errno));
	j->unread = rc->unread = *nofile = 1;
	return 0;
}

/* A new job for record v, with status word status; returns its number. */
static uint32_t
job_add(struct recon *rc, yajl_val v, const char *status)
{
	struct recon_job *j;
	yajl_val ended;

	rc->jobs = xreallocarray(rc->jobs, rc->njobs + 1, sizeof(*rc->jobs));
	j = &rc->jobs[rc->njobs++];
	memset(j, 0, sizeof(*j));
	j->batch_id = xstrdup(jtree_str(v, "batch_id"));
	ended = jtree_get(v, "ended");
	if (YAJL_IS_TRUE(ended) || YAJL_IS_FALSE(ended))
		j->ended = YAJL_IS_TRUE(ended);
	else
		j->ended = jobend_final(status);
	return (uint32_t)rc->njobs;
}

int
recon_job(struct recon *rc, const struct jsonl_reader *r, yajl_val v)
{
	yajl_val res = jtree_get(v, "results");
	const char *file = jtree_str(v, "file"), *status;
	struct recon_job *j;
	size_t i;
	uint32_t jn;
	int lines, nofile = 0, st = 0;

	if ((res != NULL && !YAJL_IS_NULL(res) && !YAJL_IS_ARRAY(res)) ||
	    (file == NULL && jtree_get(v, "file") != NULL &&
	    !YAJL_IS_NULL(jtree_get(v, "file")))) {
		qb_lwarn(r->name, r->lineno, "job record: \"file\" is not a string "
		    "or \"results\" not an array");
		return recon_reject(rc);
	}
	status = jtree_str(v, "status");
	jn = job_add(rc, v, status);
	j = &rc->jobs[jn - 1];
	lines = jobend_read(&j->end, v, status, status != NULL &&
	    strcasecmp(status, "failed") == 0);
	qb_note(1, "job %s: %s, %s", j->batch_id, status ? status : "no status",
	    j->ended ? "ended" : "not ended");
	if (file != NULL && (st = claim(rc, r, jn, file, &nofile)) != 0)
		return st;
	for (i = 0; YAJL_IS_ARRAY(res) && i < res->u.array.len; i++) {
		file = YAJL_IS_STRING(res->u.array.values[i]) ?
		    res->u.array.values[i]->u.string : NULL;
		if (file != NULL && (st = read_results(rc, file, jn)) > 0)
			return st;
		if (file == NULL || st == -1) {
			qb_lwarn(r->name, r->lineno, "job %s: results %s: %s; its "
			    "requests stay pending", rc->jobs[jn - 1].batch_id,
			    file ? file : "(not a string)",
			    file ? strerror(errno) : "skipped");
			rc->jobs[jn - 1].unread = rc->unread = 1;
		}
	}
	/* The lines can be matched only in the job's file; results that came
	 * stand; a job with results unread stays pending. */
	j = &rc->jobs[jn - 1];
	file = jtree_str(v, "file");
	if (lines && j->ended && (nofile || file == NULL))
		return dead_lines(rc, r, v, jn, file, file == NULL ? "the job "
		    "names no file" : "its file could not be read");
	if (lines && j->ended && !j->unread)
		return dead_lines(rc, r, v, jn, file, NULL);
	return 0;
}

int
recon_finish(struct recon *rc)
{
	struct result m;
	const struct recon_job *j;
	size_t i;
	int st;

	for (i = 0; i < rc->ri.ids.n; i++) {
		if (rc->ri.req[i].state != 0)
			continue;
		j = rc->ri.req[i].tag ? &rc->jobs[rc->ri.req[i].tag - 1] : NULL;
		if (j != NULL && (!j->ended || j->unread)) {
			rc->npending++;
			continue;
		}
		/*
		 * Once job records are read, only they say what ran: a
		 * request no job claims may be in a batch still running
		 * (qb-poll -i prints only the jobs that ended), so it gets
		 * no outcome; so does every request when nothing at all was
		 * read (a cron run in which no batch ended). Result lines
		 * alone, with no job, are taken as all there is.
		 */
		if (j == NULL && (rc->njobs > 0 || rc->nraw == 0)) {
			rc->nunclaimed++;
			continue;
		}
		memset(&m, 0, sizeof(m));
		m.kind = RESULT_QB;
		m.status = j ? j->end.miss : RESULT_MISSING;
		m.outcome = OUTCOME_RETRY;
		m.http_status = m.in_tok = m.out_tok = -1;
		m.ecode = j ? j->end.code : "missing_result";
		m.emsg = j ? j->end.msg : "no result for this id";
		m.eparam = j ? j->end.param : NULL;
		if ((st = emit(rc, i, &m, j ? j->batch_id : NULL)) != 0)
			return st;
	}
	return 0;
}

int
recon_init(struct recon *rc, char *const *req, int nreq,
    const struct prices *prices, int strict)
{
	int k, st;

	memset(rc, 0, sizeof(*rc));
	rc->g = jout_new();
	rc->prices = prices;
	rc->out = stdout;
	rc->strict = strict;
	reqindex_init(&rc->ri, ownkeys, strict);
	idmap_init(&rc->self);
	for (k = 0; k < nreq; k++)
		if ((st = reqindex_file(&rc->ri, req[k], 0)) == -1)
			return qb_failsys(QB_EX_NOINPUT, "%s", req[k]);
		else if (st != 0)
			return st;
	return 0;
}

void
recon_free(struct recon *rc)
{
	size_t i;

	for (i = 0; i < rc->njobs; i++) {
		free(rc->jobs[i].batch_id);
		jobend_free(&rc->jobs[i].end);
	}
	free(rc->jobs);
	free(rc->mprice);
	free(rc->selfout);
	reqindex_free(&rc->ri);
	idmap_free(&rc->self);
	buf_free(&rc->sscan.strs);
	result_parser_free(&rc->rp);
	yajl_gen_free(rc->g);
}

void
recon_add(struct recon *all, const struct recon *j)
{
	int i;

	for (i = 0; i < 3; i++)
		all->nout[i] += j->nout[i];
	all->npending += j->npending;
	all->nunknown += j->nunknown;
	all->ndup += j->ndup;
	all->nsuper += j->nsuper;
	all->nbad += j->nbad + j->ri.nbad;
	all->naccount += j->naccount;
	all->tin += j->tin;
	all->tout += j->tout;
	all->cost += j->cost;
	all->ioerr |= j->ioerr;
	all->unread |= j->unread;
	for (i = 0; i < 3; i++)
		all->nreq += j->nout[i];
	all->nreq += j->npending;
}
