/*
 * submit.c: the batch path of qb-submit (submit.h): for each pack record,
 * check it, ask custody (custody.h) whether the file may be paid for,
 * hold it over the token budget, then create its batch, or adopt the one
 * custody found, and ledger and print the job record. Custody also has
 * the intent line that goes into the ledger before each create.
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/exits.h"
#include "base/msg.h"
#include "base/qtime.h"
#include "http/http.h"
#include "json/jout.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "ledger/budget.h"
#include "ledger/custody.h"
#include "ledger/job.h"
#include "ledger/submit.h"
#include "provider/provops.h"

static int
ishex64(const char *s)
{
	size_t n;

	for (n = 0; s[n] != '\0'; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return 0;
	return n == 64;
}

/*
 * The connection to p, or NULL when its configuration is bad: that is
 * reported, and r->fatal (78) ends the run before anything more is done.
 */
static struct http *
conn(struct submit *r, const struct provider *p)
{
	struct http *h;
	int rc;

	if ((rc = provider_conn(&r->conns, p, &h)) != 0) {
		r->fatal = rc;
		return NULL;
	}
	return h;
}

/* Check a pack record; returns the provider, or NULL after reporting. */
static const struct provider *
check(struct submit *r, struct jsonl_reader *rd, yajl_val rec)
{
	static const char *const need[] = { "file", "sha256", "endpoint", NULL };
	const struct provider *p;
	const char *const *k;
	const char *name, *rp;

	for (k = need; *k != NULL; k++)
		if (jtree_str(rec, *k) == NULL) {
			qb_lwarn(rd->name, rd->lineno,
			    "expected string for \"%s\"", *k);
			return NULL;
		}
	if (!ishex64(jtree_str(rec, "sha256"))) {
		qb_lwarn(rd->name, rd->lineno,
		    "\"sha256\" is not 64 lowercase hex digits");
		return NULL;
	}
	rp = jtree_str(rec, "provider");
	name = r->o->prov != NULL ? r->o->prov : rp != NULL ? rp : "openai";
	if (rp != NULL && strcmp(rp, name) != 0) {
		qb_lwarn(rd->name, rd->lineno,
		    "packed for provider %s, not %s (-p)", rp, name);
		return NULL;
	}
	if ((p = provider_find(name)) == NULL || provider_ops(p) == NULL ||
	    provider_ops(p)->submit == NULL) {
		qb_lwarn(rd->name, rd->lineno, "%s provider \"%s\"",
		    p == NULL ? "unknown" : "cannot submit to", name);
		return NULL;
	}
	return p;
}

/*
 * Ledger and print the job record of f's batch pj. Returns 0, or the
 * ledger's failure status (said; the record is printed all the same: it
 * must not be lost); a failure on standard output sets r->fatal.
 */
static int
record(struct submit *r, const struct custody_file *f,
    const struct provider_job *pj)
{
	static const char *const none[] = { NULL };
	struct job_set s;
	const unsigned char *line;
	size_t len;
	int rc;

	memset(&s, 0, sizeof(s));
	s.provider = f->p->name;
	s.pj = pj;
	s.ended = pj->ended;
	s.results = none;
	job_emit(r->g, f->rec, &s);
	yajl_gen_get_buf(r->g, &line, &len);
	rc = custody_record(&r->cus, f, pj->id, (const char *)line, len);
	if (jout_line(r->g, stdout) != 0 || fflush(stdout) != 0)
		r->fatal = qb_failsys(QB_EX_IOERR, "write error on standard "
		    "output");
	return rc;
}

/*
 * Whether f's tokens fit model's budget now, waiting for room up to the
 * --wait-budget deadline. Returns 1 to submit, 0 when held.
 */
static int
room(struct submit *r, const struct custody_file *f, const char *model,
    long long tokens)
{
	const struct provider *p = f->p;
	const char *file = f->file;
	long long enq, budget = r->o->budget;
	double nap = 1;
	struct http *h;

	if (tokens > budget) {
		qb_lwarn(f->src, f->lineno, "%s: %lld tokens for %s pass the "
		    "budget %lld on their own; submitted anyway", file, tokens,
		    model, budget);
		return 1;
	}
	if ((h = conn(r, p)) == NULL)
		return 0;
	while ((enq = budget_enqueued(&r->bud, p, h, model)) + tokens >
	    budget) {
		if (qtime_mono() + nap > r->deadline) {
			qb_lwarn(f->src, f->lineno, "%s: held: %lld tokens for "
			    "%s would pass the budget %lld (%lld enqueued)", file,
			    tokens, model, budget, enq);
			r->nheld++;
			return 0;
		}
		qb_note(1, "%s: waiting %g s for room for %lld tokens for %s "
		    "(%lld enqueued)", file, nap, tokens, model, enq);
		qtime_sleep(nap);
		nap = nap * 2 > 30 ? 30 : nap * 2;
		r->bud.round++;
	}
	return 1;
}

/*
 * Whether f may go under --token-budget: 1 to create its batch, 0 when
 * held. Files without "model" and "tokens" are not counted.
 */
static int
fits(struct submit *r, const struct custody_file *f)
{
	const char *model = jtree_str(f->rec, "model");
	long long tokens;

	if (r->o->budget <= 0 || model == NULL ||
	    jtree_int(f->rec, "tokens", &tokens) != 0 || tokens < 0)
		return 1;
	return room(r, f, model, tokens);
}

/* The create of f's batch failed (rc, said in h->err). */
static void
notmade(struct submit *r, const struct custody_file *f, struct http *h,
    int rc, int unknown)
{
	qb_lwarn(f->src, f->lineno, "%s: not submitted: %s", f->file,
	    h->err);
	if (custody_failed(&r->cus, f, unknown) != 0)
		r->stop = QB_EX_IOERR;
	if (!unknown && (rc == QB_EX_UNAVAILABLE || rc == QB_EX_DATAERR)) {
		r->refused = 1;
		r->nrej++;
	} else {
		r->stop = rc;
		r->nnot++;
	}
}

/*
 * Upload f's file and create its batch (from f->reuse, the input file of
 * a batch that ran nothing, if set), its intent in the ledger first so
 * that the batch can be found whatever becomes of the create; then
 * ledger and print its job record.
 */
static void
create(struct submit *r, const struct custody_file *f)
{
	struct provider_submit ps;
	struct provider_job pj;
	const struct provider *p = f->p;
	struct http *h;
	yajl_val batch;
	const char *model = jtree_str(f->rec, "model");
	char err[256];
	long long tokens;
	int rc, unknown;

	if ((h = conn(r, p)) == NULL)
		return;
	if ((rc = custody_intend(&r->cus, f)) != 0) {
		r->stop = rc;
		r->nnot++;
		return;
	}
	memset(&ps, 0, sizeof(ps));
	ps.path = f->file;
	ps.sha256 = f->sha;
	ps.endpoint = jtree_str(f->rec, "endpoint");
	ps.model = model;
	ps.input_file_id = f->reuse;
	if ((rc = provider_ops(p)->submit(h, &ps, &batch, &unknown)) != 0) {
		notmade(r, f, h, rc, unknown);
		return;
	}
	if (provider_ops(p)->job(batch, &pj, err, sizeof(err)) != 0) {
		/* Made, but we cannot say what: stop before making more. */
		qb_lwarn(f->src, f->lineno, "%s: submitted, but %s",
		    f->file, err);
		r->stop = QB_EX_PROTOCOL;
		r->nnot++;
		yajl_tree_free(batch);
		return;
	}
	qb_note(1, "%s: %s %s", f->file, pj.id, pj.status);
	r->nsub++;
	if (model != NULL && jtree_int(f->rec, "tokens", &tokens) == 0 &&
	    tokens >= 0)
		budget_add(&r->bud, pj.id, p->name, model, tokens, pj.ended);
	if ((rc = record(r, f, &pj)) != 0)
		r->stop = rc;
	yajl_tree_free(batch);
}

/* One pack record: checked, weighed by custody, then dealt with. */
static void
submit(struct submit *r, struct jsonl_reader *rd, yajl_val rec)
{
	struct custody_file f;
	int rc;

	memset(&f, 0, sizeof(f));
	if ((f.p = check(r, rd, rec)) == NULL) {
		if (r->o->strict)
			r->fatal = qb_fail(QB_EX_DATAERR, "stopped at the first "
			    "bad record (--strict)");
		r->nrej++;
		return;
	}
	f.src = rd->name;
	f.lineno = rd->lineno;
	f.rec = rec;
	f.file = jtree_str(rec, "file");
	f.sha = jtree_str(rec, "sha256");
	switch (custody_ask(&r->cus, &f)) {
	case CUSTODY_CREATE:
		if (fits(r, &f))
			create(r, &f);
		break;
	case CUSTODY_ADOPT:
		r->nadopt++;
		if ((rc = record(r, &f, &f.pj)) != 0)
			r->stop = rc;
		break;
	case CUSTODY_SKIP:
		r->nskip++;
		break;
	case CUSTODY_REPEATED:
		r->nrep++;
		break;
	case CUSTODY_REJECT:
		r->nrej++;
		break;
	case CUSTODY_WAIT:
		r->ninflight++;
		r->nnot++;
		break;
	case CUSTODY_STOP:
		if (f.fatal)
			r->fatal = f.status;
		else
			r->stop = f.status;
		r->nnot++;
		break;
	}
	custody_release(&f);
}

static void
summary(const struct submit *r)
{
	struct buf b = BUF_INIT;
	int led = r->cus.useled;

	buf_printf(&b, "%lu submitted", r->nsub);
	if (r->nadopt > 0)
		buf_printf(&b, ", %lu adopted", r->nadopt);
	if (led)
		buf_printf(&b, ", %lu skipped (already in ledger)", r->nskip);
	if (!led || r->nrep > 0)
		buf_printf(&b, ", %lu skipped (repeated in this run)", r->nrep);
	buf_printf(&b, ", %lu rejected", r->nrej);
	if (r->nheld > 0)
		buf_printf(&b, ", %lu held (over the token budget; re-run "
		    "later)", r->nheld);
	if (r->nnot > 0)
		buf_printf(&b, ", %lu not submitted (re-run with the same "
		    "input%s)", r->nnot, led ? " and ledger" : "");
	qb_warn("%s", b.p);
	buf_free(&b);
}

/* One pack record, rec, read from rd. */
static void
take(struct submit *r, struct jsonl_reader *rd, yajl_val rec)
{
	const char *file;

	if (!r->stop) {
		submit(r, rd, rec);
		return;
	}
	file = jtree_str(rec, "file");
	qb_lwarn(rd->name, rd->lineno, "%s: not submitted (stopped after an "
	    "earlier failure)", file != NULL ? file : "record");
	r->nnot++;
}

static void
release(struct submit *r)
{
	custody_free(&r->cus);
	provider_conns_free(&r->conns);
	budget_free(&r->bud);
	yajl_gen_free(r->g);
}

int
submit_init(struct submit *r, const struct submit_opts *o, const char *ledger)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->o = o;
	r->conns.base = o->base;
	r->conns.keyfile = o->keyfile;
	r->g = jout_new();
	budget_init(&r->bud);
	r->deadline = qtime_mono() + o->wait;
	custody_init(&r->cus, &r->conns, o->grace, o->lookback);
	if (ledger != NULL && (rc = custody_ledger(&r->cus, ledger,
	    o->budget > 0 ? budget_note : NULL, &r->bud)) != 0) {
		release(r);
		return rc;
	}
	return 0;
}

int
submit_file(struct submit *r, const char *path)
{
	struct jsonl_reader rd;
	struct jsonl_rec rec;
	int ch = JSONL_EOF, rc;

	if ((rc = jsonl_start(&rd, path, JSONL_TREE, r->o->strict)) != 0)
		return rc;
	while (!r->fatal && (ch = jsonl_read(&rd, &rec)) != JSONL_EOF) {
		if (ch == JSONL_LINE)
			take(r, &rd, rec.tree);
		else if (ch != JSONL_BAD)
			break;
	}
	r->nrej += rd.nbad;
	jsonl_close(&rd);
	/* --strict's bad line: the run ends as for a bad record. */
	if ((rc = jsonl_status(ch)) == QB_EX_DATAERR)
		r->fatal = rc;
	return r->fatal ? r->fatal : rc;
}

int
submit_end(struct submit *r, int rc)
{
	if (!r->fatal)
		summary(r);
	release(r);
	if (r->fatal)
		return r->fatal;
	if (r->stop)
		return r->stop;
	if (r->refused)
		return QB_EX_UNAVAILABLE;
	if (rc != QB_EX_OK)
		return rc;
	if (r->nheld > 0 || r->ninflight > 0)
		return QB_EX_TEMPFAIL;
	return r->nrej > 0 ? QB_EX_PARTIAL : QB_EX_OK;
}
