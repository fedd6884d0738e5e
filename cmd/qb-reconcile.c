/*
 * qb-reconcile: join results to their requests by custom_id and write one
 * outcome record per request: done, retry (a valid item again) or dead.
 *
 * Reads request files (-r): OpenAI batch lines, Anthropic lines or qb
 * items; and from the operands job records ("file", "results", "status",
 * "ended", "errors" and their "line") and result lines of any provider
 * (result.h). A batch failed for errors at lines of its file makes the
 * requests there dead, the others retries. A qb result record that
 * carries its own request (qb-submit --sync) and whose id no -r request
 * claims is joined to itself.
 * Writes outcome records: "id", "outcome", the result members, "cost_usd",
 * and the item's own members (meta, queue, receipt, receives ...); a retry
 * also gets "endpoint" and "body" ("params" too for Anthropic lines),
 * copied as bytes. The requests are indexed by reqindex.h and re-read
 * when an outcome needs them: memory does not grow with the request
 * bodies, and nothing is kept per result but a state byte.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/afile.h"
#include "base/buf.h"
#include "base/exits.h"
#include "base/idmap.h"
#include "base/msg.h"
#include "base/xmem.h"
#include "json/jout.h"
#include "json/jscan.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "ledger/jobs.h"
#include "ledger/ledger.h"
#include "opt.h"
#include "record/jobend.h"
#include "record/members.h"
#include "record/price.h"
#include "record/reqindex.h"
#include "record/result.h"

static const char usage[] =
    "[-hquVv] [--strict] [-d dir [-l ledger]] [-r file]... [--prices file]\n"
    "       [file ...]";
static const char help[] =
    "  -d, --dir DIR         write each job's outcomes to DIR/BATCH.outcomes.jsonl\n"
    "                        (then to standard output); skip jobs DIR has\n"
    "  -l, --ledger FILE     with -d: the jobs are the ended ones of ledger FILE\n"
    "  -r, --requests FILE   the requests: batch input or item files, plain\n"
    "                        or .gz (repeatable)\n"
    "      --prices FILE     USD per million tokens, lines of\n"
    "                        {\"model\",\"input_per_mtok\",\"output_per_mtok\"}\n"
    "      --strict          stop at the first rejected line (exit 65)\n"
    "  -u, --unbuffered      flush after every outcome\n"
    "  -h, -V, -v, -q        help, version, verbose, quiet\n";

struct opts {
	char		**req;		/* -r files */
	int		  nreq;
	const char	 *prices;
	const char	 *dir;		/* -d */
	const char	 *ledger;	/* -l */
	int		  strict, unbuffered;
};

/* A job record; end says what its requests without a result become. */
struct job {
	char			*batch_id;
	int			 ended, unread;
	struct jobend		 end;
};

struct rec {
	struct opts		*o;
	/* req.tag: 1 + the last job naming its file, or 0; req.state: 0
	 * until its outcome is written, then 1 + outcome. */
	struct reqindex		 ri;
	struct job		*jobs;
	size_t			 njobs;
	int			*mprice;	/* price of each model; -2 not looked up */
	size_t			 nmprice;
	const struct prices	*prices;	/* --prices */
	FILE			*out;		/* outcomes go here */
	struct result_parser	 rp;
	struct idmap		 self;		/* ids of results joined to themselves */
	uint8_t			*selfout;	/* the outcome each was given */
	struct jscan	 sscan;		/* of such results */
	yajl_gen		 g;
	unsigned long		 nout[3], npending, nunclaimed, nunknown, ndup, nbad;
	unsigned long		 nsuper;	/* retries a later done or dead stood over */
	unsigned long		 nreq;		/* -d: requests of the jobs done */
	unsigned long		 njobsdone, njobsskip, njobsopen;	/* -d */
	unsigned long		 nraw;		/* result lines read outside any job */
	unsigned long		 naccount;	/* results failed for the account */
	unsigned long long	 tin, tout;
	double			 cost;
	int			 ioerr, unread;
};

/* Keys an outcome sets itself, or that a request carries only as its id,
 * wire format or body: never copied from the request. */
static const char *const ownkeys[] = { "id", "custom_id", "method", "url",
	"body", "params", "outcome", "status", "http_status", "error", "usage",
	"request_id", "batch_id", "response", "cost_usd", "account_error", NULL };

/* A rejected line: already reported; --strict stops here. */
static void
reject(struct rec *rc)
{
	rc->nbad++;
	if (rc->o->strict)
		qb_die(QB_EX_DATAERR, "stopped at the first rejected line (--strict)");
}

/* The cost of r in USD, or -1 when its usage or price is unknown: the
 * price of the requested model, else that of the model that answered. */
static double
cost(struct rec *rc, const struct req *q, const struct result *r)
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
head(struct rec *rc, const char *id, const struct req *q,
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

/* Close the outcome and write it. */
static void
tail(struct rec *rc)
{
	jout_close(rc->g);
	if (jout_line(rc->g, rc->out) == -1 || (rc->out == stdout &&
	    rc->o->unbuffered && fflush(stdout) == EOF)) {
		if (rc->out == stdout)
			qb_diesys(QB_EX_IOERR, "write error on standard output");
		rc->ioerr = 1;	/* a job's file: said when it is committed */
	}
}

/* Write the outcome of request idx from result r. */
static void
emit(struct rec *rc, size_t idx, const struct result *r, const char *batch_id)
{
	struct req *q = &rc->ri.req[idx];

	q->state = (uint8_t)(1 + r->outcome);
	head(rc, idmap_key(&rc->ri.ids, idx), q, r, batch_id);
	if (reqindex_emit(&rc->ri, idx, rc->g, r->outcome == OUTCOME_RETRY) != 0)
		exit(QB_EX_IOERR);	/* reported */
	tail(rc);
}

/* Say an account-level error once, loudly: no item passes until it is fixed. */
static void
account(struct rec *rc, const struct jsonl_reader *r, const struct result *res)
{
	if (!res->account || rc->naccount++ > 0)
		return;
	qb_lwarn(r->name, r->lineno, "account-level error for id \"%s\": "
	    "%s: %s; fix the account, then send its retries again "
	    "(marked \"account_error\")", res->id, res->etype ? res->etype :
	    (res->ecode ? res->ecode : "error"), res->emsg ? res->emsg : "");
}

/*
 * A qb result record that carries its own request ("body" or "params",
 * as qb-submit --sync writes them) and whose id no -r request claims is
 * joined to itself, once: the outcome gets its other members, and a
 * retry its endpoint and body. Returns 0 when res is not such a result.
 */
static int
self_join(struct rec *rc, const struct jsonl_reader *r,
    const struct result *res, const char *line, size_t len)
{
	static const char *const none[] = { NULL };
	const struct jscan *s = &rc->sscan;
	char err[256];
	size_t i;
	int isnew;

	if (res->kind != RESULT_QB ||
	    idmap_get(&rc->ri.ids, res->id, res->idlen) != (size_t)-1)
		return 0;
	rc->sscan.deep = none;
	if (jscan_parse(&rc->sscan, line, len, err, sizeof(err)) == -1 ||
	    (jscan_find(s, -1, "body") < 0 && jscan_find(s, -1, "params") < 0))
		return 0;
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
		reject(rc);
		return 1;
	}
	head(rc, res->id, NULL, res, NULL);
	members_copy(&rc->sscan, rc->g, line, len, ownkeys,
	    res->outcome == OUTCOME_RETRY);
	tail(rc);
	account(rc, r, res);
	return 1;
}

/* Result res from reader r; job is 1 + the job whose results file r is. */
static void
take_result(struct rec *rc, const struct jsonl_reader *r,
    const struct result *res, uint32_t job)
{
	size_t idx = idmap_get(&rc->ri.ids, res->id, res->idlen);
	const struct req *q;

	if (idx == (size_t)-1) {
		qb_lwarn(r->name, r->lineno, "result for unknown id \"%s\"", res->id);
		rc->nunknown++;
		reject(rc);
		return;
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
		reject(rc);
		return;
	}
	emit(rc, idx, res, job ? rc->jobs[job - 1].batch_id : NULL);
	account(rc, r, res);
}

/* Read the result lines of path, a results file of job 1 + job - 1. */
static int
read_results(struct rec *rc, const char *path, uint32_t job)
{
	struct jsonl_reader r;
	struct result res;
	char *line, err[256];
	size_t len;
	int ch, rv;

	if (jsonl_open(&r, path) == -1)
		return -1;
	while ((ch = jsonl_next(&r, &line, &len)) != JSONL_EOF) {
		if (ch == JSONL_IOERR) {
			/* What was not read stays pending, never retried. */
			rc->ioerr = rc->jobs[job - 1].unread = 1;
			break;
		}
		rv = ch == JSONL_BAD ? -1 : result_parse(&rc->rp, line, len,
		    &res, err, sizeof(err));
		if (rv == 0) {
			take_result(rc, &r, &res, job);
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
		if (!rc->jobs[job - 1].unread)
			qb_lwarn(r.name, r.lineno, "job %s: its requests without "
			    "a result stay pending", rc->jobs[job - 1].batch_id);
		rc->jobs[job - 1].unread = rc->unread = 1;
		reject(rc);
	}
	jsonl_close(&r);
	return 0;
}

/*
 * Job jn failed for errors that name lines of its file: each request at
 * such a line is dead, with that line's error (it would fail again). A
 * line that holds no request is reported; the requests not named keep
 * the job's retry (finish()).
 */
static void
dead_lines(struct rec *rc, const struct jsonl_reader *r, yajl_val v,
    uint32_t jn, const char *file, const char *why)
{
	yajl_val errs = jobend_errors(v), e;
	const struct job *j = &rc->jobs[jn - 1];
	struct result m;
	uint32_t *line;
	size_t *idx, i, n = 0, nmiss = 0;
	int k;

	line = xreallocarray(NULL, errs->u.array.len, sizeof(*line));
	idx = xreallocarray(NULL, errs->u.array.len, sizeof(*idx));
	for (i = 0; i < errs->u.array.len; i++)
		if ((line[n] = jobend_line(errs->u.array.values[i])) > 0)
			n++;
	if (why == NULL && (k = reqindex_lines(&rc->ri, file, line, n, idx)) == -1)
		why = strerror(errno);
	else if (why == NULL && k != 0)
		exit(k);	/* reported */
	for (i = n = 0; i < errs->u.array.len; i++) {
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
		} else if (rc->ri.req[idx[n]].state == 0) {
			memset(&m, 0, sizeof(m));
			m.kind = RESULT_QB;
			m.status = RESULT_ERRORED;
			m.outcome = OUTCOME_DEAD;
			m.http_status = m.in_tok = m.out_tok = -1;
			m.ecode = jtree_str(e, "code");
			m.emsg = jtree_str(e, "message");
			m.eparam = jtree_str(e, "param");
			emit(rc, idx[n], &m, j->batch_id);
		}
		n++;
	}
	if (nmiss > 10)
		qb_lwarn(r->name, r->lineno, "job %s: %zu more lines match no "
		    "request", j->batch_id, nmiss - 10);
	free(line);
	free(idx);
}

/*
 * A job record: its file's requests are claimed by it (the file is
 * indexed first when no -r file is the same file), then its results
 * files are read. "ended" false (or absent with a status that can still
 * change) leaves the requests without results pending. v, its parse,
 * stays the caller's.
 */
static void
job_tree(struct rec *rc, const struct jsonl_reader *r, yajl_val v)
{
	yajl_val res, ended;
	const char *file, *status;
	struct job *j;
	size_t i, f;
	uint32_t jn;
	int failed, lines, nofile = 0, k;

	res = jtree_get(v, "results");
	file = jtree_str(v, "file");
	if ((res != NULL && !YAJL_IS_NULL(res) && !YAJL_IS_ARRAY(res)) ||
	    (file == NULL && jtree_get(v, "file") != NULL &&
	    !YAJL_IS_NULL(jtree_get(v, "file")))) {
		qb_lwarn(r->name, r->lineno, "job record: \"file\" is not a string "
		    "or \"results\" not an array");
		reject(rc);
		return;
	}
	rc->jobs = xreallocarray(rc->jobs, rc->njobs + 1, sizeof(*rc->jobs));
	j = &rc->jobs[rc->njobs++];
	jn = (uint32_t)rc->njobs;
	memset(j, 0, sizeof(*j));
	j->batch_id = xstrdup(jtree_str(v, "batch_id"));
	status = jtree_str(v, "status");
	ended = jtree_get(v, "ended");
	if (YAJL_IS_TRUE(ended) || YAJL_IS_FALSE(ended))
		j->ended = YAJL_IS_TRUE(ended);
	else
		j->ended = jobend_final(status);
	failed = status != NULL && strcasecmp(status, "failed") == 0;
	lines = jobend_read(&j->end, v, status, failed);
	qb_note(1, "job %s: %s, %s", j->batch_id, status ? status : "no status",
	    j->ended ? "ended" : "not ended");
	if (file != NULL) {
		if ((f = reqindex_same(&rc->ri, file)) != (size_t)-1) {
			for (i = 0; i < rc->ri.ids.n; i++)
				if (rc->ri.req[i].file == f)
					rc->ri.req[i].tag = jn;
		} else if ((k = reqindex_file(&rc->ri, file, jn)) == -1) {
			qb_lwarn(r->name, r->lineno, "job %s: %s: %s", j->batch_id,
			    file, strerror(errno));
			rc->jobs[jn - 1].unread = rc->unread = nofile = 1;
		} else if (k != 0)
			exit(k);	/* reported */
	}
	for (i = 0; YAJL_IS_ARRAY(res) && i < res->u.array.len; i++) {
		file = YAJL_IS_STRING(res->u.array.values[i]) ?
		    res->u.array.values[i]->u.string : NULL;
		if (file == NULL || read_results(rc, file, jn) == -1) {
			qb_lwarn(r->name, r->lineno, "job %s: results %s: %s; its "
			    "requests stay pending", rc->jobs[jn - 1].batch_id,
			    file ? file : "(not a string)",
			    file ? strerror(errno) : "skipped");
			rc->jobs[jn - 1].unread = rc->unread = 1;
		}
	}
	/* The lines can be matched only in the job's file; results that came
	 * stand; a job with results unread stays pending. */
	file = jtree_str(v, "file");
	if (lines && rc->jobs[jn - 1].ended && (nofile || file == NULL))
		dead_lines(rc, r, v, jn, file, file == NULL ? "the job names no "
		    "file" : "its file could not be read");
	else if (lines && rc->jobs[jn - 1].ended && !rc->jobs[jn - 1].unread)
		dead_lines(rc, r, v, jn, file, NULL);
}

/* A job record's line: parsed, then job_tree. */
static void
take_job(struct rec *rc, const struct jsonl_reader *r, const char *line)
{
	char err[256];
	yajl_val v = jtree_parse(line, err, sizeof(err));

	if (v == NULL) {
		qb_lwarn(r->name, r->lineno, "job record: %s", err);
		reject(rc);
		return;
	}
	job_tree(rc, r, v);
	yajl_tree_free(v);
}

static void job_unit(struct rec *, const char *, unsigned long, const char *);

/* One line of an operand: a result or a job record. */
static void
take_line(struct rec *rc, struct jsonl_reader *r, const char *line, size_t len)
{
	const struct jscan *s = &rc->rp.line;
	struct result res;
	char err[256];
	int rv;

	if ((rv = result_parse(&rc->rp, line, len, &res, err, sizeof(err))) == 0) {
		rc->nraw++;
		if (!self_join(rc, r, &res, line, len))
			take_result(rc, r, &res, 0);
		return;
	}
	if (rv == 1 && jscan_sval(s, jscan_find(s, -1, "batch_id")) != NULL &&
	    jscan_find(s, -1, "id") < 0) {
		if (rc->o->dir != NULL)
			job_unit(rc, r->name, r->lineno, line);
		else
			take_job(rc, r, line);
		return;
	}
	/* A ledger's intent line (qb-submit) names no batch: nothing to join. */
	if (rv == 1 && jscan_find(s, -1, "intent") >= 0 &&
	    jscan_find(s, -1, "batch_id") < 0) {
		qb_note(1, "%s:%lu: intent line skipped", r->name, r->lineno);
		return;
	}
	if (rv == 1 && (jscan_find(s, -1, "body") >= 0 ||
	    jscan_find(s, -1, "params") >= 0))
		snprintf(err, sizeof(err), "a request, not a result (requests "
		    "go with -r)");
	else if (rv == 1)
		snprintf(err, sizeof(err), "neither a result nor a job record");
	qb_lwarn(r->name, r->lineno, "%s", err);
	reject(rc);
}

/* At the end: retry for each request without a result, in request order,
 * unless its job has not ended or its results could not be read. */
static void
finish(struct rec *rc)
{
	struct result m;
	const struct job *j;
	size_t i;

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
		emit(rc, i, &m, j ? j->batch_id : NULL);
	}
}

static void
summary(const struct rec *rc)
{
	char c[64] = "", un[96] = "", dd[160] = "", sup[64] = "";
	unsigned long nreq;
	size_t n;

	if (rc->nunclaimed > 0 && rc->o->dir == NULL)
		snprintf(un, sizeof(un), "; %lu in no job read, left without "
		    "outcome", rc->nunclaimed);
	if (rc->prices->n > 0) {
		n = (size_t)snprintf(c, sizeof(c), "; cost $%.8f", rc->cost);
		while (n > 0 && c[n - 1] == '0' && c[n - 3] != '.')
			c[--n] = '\0';
	}
	if (rc->nsuper > 0)
		snprintf(sup, sizeof(sup), ", %lu retry stood over", rc->nsuper);
	if (rc->o->dir != NULL)
		snprintf(dd, sizeof(dd), "; jobs: %lu reconciled into %s, %lu "
		    "there already, %lu left for a later run", rc->njobsdone,
		    rc->o->dir, rc->njobsskip, rc->njobsopen);
	nreq = rc->o->dir != NULL ? rc->nreq + (unsigned long)rc->self.n :
	    (unsigned long)(rc->ri.ids.n + rc->self.n);
	qb_warn("%lu request%s: %lu done, %lu retry, %lu dead, %lu pending; "
	    "%lu unknown, %lu duplicate%s; tokens in %llu out %llu%s%s%s",
	    nreq, nreq == 1 ? "" : "s",
	    rc->nout[OUTCOME_DONE], rc->nout[OUTCOME_RETRY],
	    rc->nout[OUTCOME_DEAD], rc->npending, rc->nunknown, rc->ndup, sup,
	    rc->tin, rc->tout, c, un, dd);
}

/* A state for one run, or (-d) one job: the -r files indexed. */
static void
rec_init(struct rec *rc, struct opts *o, const struct prices *prices)
{
	int k, st;

	memset(rc, 0, sizeof(*rc));
	rc->o = o;
	rc->g = jout_new();
	rc->prices = prices;
	rc->out = stdout;
	reqindex_init(&rc->ri, ownkeys, o->strict);
	idmap_init(&rc->self);
	for (k = 0; k < o->nreq; k++)
		if ((st = reqindex_file(&rc->ri, o->req[k], 0)) == -1)
			qb_diesys(QB_EX_NOINPUT, "%s", o->req[k]);
		else if (st != 0)
			exit(st);	/* reported */
}

/* Free what rc holds, so that leak checkers see none at exit. */
static void
rec_free(struct rec *rc)
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

/* Add what job state j counted to the run's. */
static void
rec_add(struct rec *all, const struct rec *j)
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

/* Copy the file at path to standard output. */
static void
copy_out(const char *path)
{
	char b[1 << 16];
	FILE *fp;
	size_t n;

	if ((fp = fopen(path, "r")) == NULL)
		qb_diesys(QB_EX_IOERR, "%s", path);
	while ((n = fread(b, 1, sizeof(b), fp)) > 0)
		if (fwrite(b, 1, n, stdout) != n)
			qb_diesys(QB_EX_IOERR, "write error on standard output");
	if (ferror(fp))
		qb_diesys(QB_EX_IOERR, "%s", path);
	fclose(fp);
	if (fflush(stdout) == EOF)
		qb_diesys(QB_EX_IOERR, "write error on standard output");
}

/*
 * -d: the job record at line (from r, its line lineno) is reconciled
 * alone, in a state of its own, into DIR/BATCH.outcomes.jsonl (temporary
 * name, fsync, rename), which is then copied to standard output. That
 * file is custody: a job that has one is skipped, so a run killed at any
 * point and run again writes each job's outcomes once. A job not ended,
 * or whose requests are left pending (its batch file or a results file
 * unreadable or damaged), gets no file, and a later run tries again.
 */
static void
job_unit(struct rec *all, const char *name, unsigned long lineno,
    const char *line)
{
	struct rec jr;
	struct jsonl_reader r;
	struct afile a;
	struct buf path = BUF_INIT;
	struct stat st;
	char err[256];
	yajl_val v = jtree_parse(line, err, sizeof(err)), ended;
	const char *bid;
	int isended;

	memset(&r, 0, sizeof(r));
	r.name = xstrdup(name);
	r.lineno = lineno;
	bid = v != NULL ? jtree_str(v, "batch_id") : NULL;
	if (bid == NULL || *bid == '\0' || *bid == '.' ||
	    strchr(bid, '/') != NULL) {
		qb_lwarn(name, lineno, "job record: %s", v == NULL ? err :
		    "\"batch_id\" is not a usable file name");
		yajl_tree_free(v);
		free(r.name);
		reject(all);
		return;
	}
	ended = jtree_get(v, "ended");
	isended = YAJL_IS_TRUE(ended) || (!YAJL_IS_FALSE(ended) &&
	    jobend_final(jtree_str(v, "status")));
	buf_printf(&path, "%s/%s.outcomes.jsonl", all->o->dir, bid);
	if (!isended || stat(path.p, &st) == 0) {
		if (isended) {
			qb_note(1, "job %s: reconciled before (%s)", bid, path.p);
			all->njobsskip++;
		} else
			all->njobsopen++;
		yajl_tree_free(v);
		buf_free(&path);
		free(r.name);
		return;
	}
	rec_init(&jr, all->o, all->prices);
	if (afile_open(&a, path.p) == -1)
		qb_diesys(QB_EX_IOERR, "%s", path.p);
	jr.out = a.fp;
	job_tree(&jr, &r, v);
	finish(&jr);
	rec_add(all, &jr);
	if (jr.unread || jr.npending > 0 || jr.ioerr) {
		afile_abort(&a);
		qb_warn("job %s: not reconciled%s; a later run tries again", bid,
		    jr.ioerr ? ": write error" : "");
		all->njobsopen++;
	} else if (afile_commit(&a, NULL) == -1) {
		qb_warnsys("%s", path.p);
		all->ioerr = 1;
		all->njobsopen++;
	} else {
		qb_note(1, "job %s: outcomes in %s", bid, path.p);
		all->njobsdone++;
		copy_out(path.p);
	}
	rec_free(&jr);
	yajl_tree_free(v);
	buf_free(&path);
	free(r.name);
}

/* -l: every job of the ledger, read under a shared lock, to job_unit. */
static void
take_ledger(struct rec *rc)
{
	struct ledger led;
	struct jobs js;
	struct jobrec *j;
	size_t i;

	jobs_init(&js, sizeof(struct jobrec), rc->o->strict);
	ledger_init(&led, rc->o->ledger);
	jobs_load(&js, &led, NULL, NULL, 0);
	rc->nbad += js.nbad;
	for (i = 0; i < js.n; i++) {
		j = jobs_at(&js, i);
		job_unit(rc, j->src, j->lineno, j->line);
	}
	jobs_free(&js);
	ledger_free(&led);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "ledger", required_argument, NULL, 'l' },
		{ "prices", required_argument, NULL, 'P' },
		{ "requests", required_argument, NULL, 'r' },
		{ "strict", no_argument, NULL, 'S' },
		{ "unbuffered", no_argument, NULL, 'u' },
		QB_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	static char *stdin_only[] = { "-" };
	struct prices prices = PRICES_INIT;
	struct opts o;
	struct rec rc;
	struct jsonl_reader r;
	struct rlimit rl;
	char *line, **files;
	size_t len;
	unsigned long npbad = 0;
	int ch, k, nfile, nstdin = 0, noinput = 0;

	qb_setprog(argv[0]);
	memset(&o, 0, sizeof(o));
	while ((ch = getopt_long(argc, argv, "d:hl:qr:uVv", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'd':
			o.dir = optarg;
			break;
		case 'l':
			o.ledger = optarg;
			break;
		case 'P':
			o.prices = optarg;
			break;
		case 'r':
			o.req = xreallocarray(o.req, (size_t)o.nreq + 1,
			    sizeof(*o.req));
			o.req[o.nreq++] = optarg;
			nstdin += strcmp(optarg, "-") == 0;
			break;
		case 'S':
			o.strict = 1;
			break;
		case 'u':
			o.unbuffered = 1;
			break;
		default:
			qb_common_opt(ch, usage, help);
		}
	}
	if (o.ledger != NULL && o.dir == NULL)
		qb_die(QB_EX_USAGE, "-l needs -d: the outcome files say which "
		    "jobs were reconciled");
	if (o.dir != NULL && nstdin > 0)
		qb_die(QB_EX_USAGE, "-d reads the -r files again for each job: "
		    "name files, not standard input");
	if (o.dir != NULL && (ch = afile_need_dir(o.dir)) != 0)
		return ch;
	/* With -l and no operands, the ledger is all the input. */
	files = argc > optind ? argv + optind : stdin_only;
	nfile = argc > optind ? argc - optind : o.ledger != NULL ? 0 : 1;
	for (k = 0; k < nfile; k++) {
		if (strcmp(files[k], "-") == 0)
			nstdin++;
		else if (access(files[k], R_OK) == -1)
			qb_diesys(QB_EX_NOINPUT, "%s", files[k]);
	}
	if (nstdin > 1)
		qb_die(QB_EX_USAGE, "standard input can be read only once "
		    "(name files for the results when -r - is given)");
	/* One descriptor per request file stays open until the end. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (o.prices != NULL && (k = prices_load(&prices, o.prices, o.strict,
	    &npbad)) != 0)
		return k;	/* reported */
	rec_init(&rc, &o, &prices);
	rc.nbad += npbad;
	if (o.ledger != NULL)
		take_ledger(&rc);
	for (k = 0; k < nfile; k++) {
		if (jsonl_open(&r, files[k]) == -1) {
			qb_warnsys("%s", files[k]);
			noinput = 1;
			continue;
		}
		while ((ch = jsonl_next(&r, &line, &len)) != JSONL_EOF) {
			if (ch == JSONL_IOERR) {
				rc.ioerr = 1;
				break;
			}
			if (ch == JSONL_BAD)
				reject(&rc);
			else
				take_line(&rc, &r, line, len);
		}
		jsonl_close(&r);
	}
	finish(&rc);
	summary(&rc);
	qb_close_stdout();
	if (rc.ioerr)
		k = QB_EX_IOERR;
	else if (rc.naccount > 0)
		k = QB_EX_UNAVAILABLE;	/* stop the pipeline: the account refuses */
	else if (noinput)
		k = QB_EX_NOINPUT;
	else if (rc.nbad > 0 || rc.ri.nbad > 0 || rc.unread || rc.nout[OUTCOME_RETRY] > 0 ||
	    rc.nout[OUTCOME_DEAD] > 0)
		k = QB_EX_PARTIAL;
	else
		k = QB_EX_OK;
	rec_free(&rc);
	prices_free(&prices);
	free(o.req);
	return k;
}
