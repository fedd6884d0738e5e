/*
 * submit.c: the batch path of qb-submit (submit.h): for each pack record,
 * check the file still has the digest it was packed with, let the ledger
 * decide whether it is new, was made by a create that went unrecorded
 * (adopt the batch), or ran before (skip it, or submit a file made of
 * retries again), hold it over the token budget, then upload it and
 * create the batch, and append and print the job record. With a ledger,
 * an intent line goes in before each create.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/exits.h"
#include "base/idmap.h"
#include "base/msg.h"
#include "base/qtime.h"
#include "base/rfc3339.h"
#include "base/sha256.h"
#include "base/xmem.h"
#include "http/http.h"
#include "json/jout.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "ledger/budget.h"
#include "ledger/job.h"
#include "ledger/ledger.h"
#include "ledger/submit.h"
#include "provider/provops.h"
#include "record/result.h"

static int
ishex64(const char *s)
{
	size_t n;

	for (n = 0; s[n] != '\0'; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return 0;
	return n == 64;
}

/* 1 if every line of the result files at paths is a retry, else 0. */
static int
all_retries(char *const *paths)
{
	struct result_parser rp;
	struct jsonl_reader rd;
	struct result res;
	char *line, err[256];
	size_t len;
	int ch, ok = 1;

	memset(&rp, 0, sizeof(rp));
	for (; ok && *paths != NULL; paths++) {
		if (jsonl_open(&rd, *paths) == -1) {
			ok = 0;
			break;
		}
		while (ok && (ch = jsonl_next(&rd, &line, &len)) != JSONL_EOF)
			ok = ch == JSONL_LINE && result_parse(&rp, line, len, &res,
			    err, sizeof(err)) == 0 && res.outcome == OUTCOME_RETRY;
		jsonl_close(&rd);
	}
	result_parser_free(&rp);
	return ok;
}

/*
 * Whether a file made of retry outcomes alone may go again after its
 * latest batch pj, whose result files, as far as qb-poll has fetched
 * them, are results (NULL for none): only when nothing in that batch
 * came to an answer that stands. None of its requests completed, and
 * what failed in it failed for now (a 500, an expiry), never for good (a
 * 400 is dead, and sending it again only makes a second dead outcome):
 * so the result files, once fetched, must hold retries alone; a batch
 * that failed some requests and whose files are not fetched yet waits.
 * Unknown counts count as run (never pay twice), unless the batch failed
 * as a whole and said why. Only completed requests count as answered:
 * some hosts count expired ones as failed (qb-providers(7)).
 */
static int
ran_nothing(const struct provider_job *pj, char *const *results)
{
	if (!pj->ended)
		return 0;
	if (!pj->has_counts)
		return pj->errors != NULL;
	if (pj->completed > 0)
		return 0;
	if (results != NULL)
		return all_retries(results);
	return pj->failed == 0;
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

	if ((rc = provider_check(p, r->o->base, r->o->keyfile, 1)) != 0 ||
	    (rc = provider_conn(&r->conns, p, &h)) != 0) {
		r->fatal = rc;
		return NULL;
	}
	return h;
}

/* provider find callback: batches the ledger holds are not adopted. */
static int
known(void *arg, const char *id)
{
	struct submit *r = arg;

	return r->useled && ledger_known(&r->led, id);
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

/* Print (and first ledger) the job record for batch; 0 or an exit status. */
static int
record(struct submit *r, yajl_val rec, const struct provider *p,
    const struct provider_job *pj, const char *sha)
{
	static const char *const none[] = { NULL };
	struct job_set s;
	const unsigned char *line;
	size_t len;
	int rc = 0;

	memset(&s, 0, sizeof(s));
	s.provider = p->name;
	s.pj = pj;
	s.ended = pj->ended;
	s.results = none;
	job_emit(r->g, rec, &s);
	yajl_gen_get_buf(r->g, &line, &len);
	if (r->useled && (rc = ledger_append(&r->led, sha, pj->id,
	    (const char *)line, len)) != 0)
		qb_warn("batch %s was created but is not in ledger %s: keep "
		    "the job record printed on standard output, or run again "
		    "with this ledger to adopt the batch", pj->id, r->led.path);
	/* Printed even when the ledger failed: it must not be lost. */
	if (jout_line(r->g, stdout) != 0 || fflush(stdout) != 0)
		qb_diesys(QB_EX_IOERR, "write error on standard output");
	return rc;
}

/*
 * Look for a batch the provider made for the file with digest sha and
 * adopt it rather than pay again. With at set, the ledger holds an intent
 * for sha made then and no job after it (a create whose outcome went
 * unrecorded): the provider's batches since an hour before are searched,
 * and a miss within r->o->grace seconds of the intent holds the file (a
 * create the server took in late, after qb gave up on it, may still make
 * its batch). With
 * at NULL, no job holds the digest (another ledger's run, or one without
 * a ledger, may have made its batch): the batches of the last
 * r->o->lookback seconds are searched, only where batches carry the
 * digest (metadata qb_sha256); a batch found that ended with nothing run
 * is not adopted when the file is all retries, which go again. Returns 1
 * when the record is dealt with (adopted, or stopped), 0 to submit it.
 */
static int
adopt(struct submit *r, struct jsonl_reader *rd, yajl_val rec,
    const struct provider *p, const char *sha, const char *at)
{
	const struct provider_ops *o = provider_ops(p);
	struct provider_job pj;
	struct http *h;
	yajl_val batch;
	const char *file = jtree_str(rec, "file");
	char err[256];
	long long t, since, req = -1, ret = -1;
	int rc, isnew;

	if (o->find == NULL)
		return 0;
	if (at == NULL) {
		if (r->o->lookback <= 0 || p->line_format != PROVIDER_LINE_OPENAI)
			return 0;
		t = 0;
		since = (long long)time(NULL) - (long long)r->o->lookback;
	} else {
		if (rfc3339_parse(at, &t) != 0)
			t = 0;		/* unknown: look through them all */
		since = t - 3600;
	}
	if ((h = conn(r, p)) == NULL)
		return 1;
	if ((rc = o->find(h, sha, since, known, r, &batch)) != 0) {
		qb_lwarn(rd->name, rd->lineno, "%s: not submitted: cannot look "
		    "for %s (%s): %s", file, at != NULL ? "the batch of an "
		    "unrecorded submit" : "a batch made for it before",
		    at != NULL ? at : "--lookback", h->err);
		r->stop = rc;
		r->nnot++;
		return 1;
	}
	if (batch == NULL && t > 0 && (double)(time(NULL) - t) < r->o->grace) {
		/* A create the server got late may not be listed yet. */
		qb_lwarn(rd->name, rd->lineno, "%s: not submitted: no batch yet "
		    "from the unrecorded submit of %s, which may still be made; "
		    "run again %g s after then", file, at, r->o->grace);
		r->ninflight++;
		r->nnot++;
		return 1;
	}
	if (batch == NULL) {
		if (at != NULL)
			qb_note(1, "%s: no batch from the unrecorded submit of "
			    "%s", file, at);
		return 0;
	}
	if (o->job(batch, &pj, err, sizeof(err)) != 0) {
		qb_lwarn(rd->name, rd->lineno, "%s: not adopted: %s", file, err);
		r->stop = QB_EX_PROTOCOL;
		r->nnot++;
		yajl_tree_free(batch);
		return 1;
	}
	jtree_int(rec, "requests", &req);
	jtree_int(rec, "retries", &ret);
	if (at == NULL && req > 0 && ret == req && ran_nothing(&pj, NULL)) {
		qb_note(1, "%s: batch %s made for it ended %s with nothing run; "
		    "its retries are submitted again", file, pj.id, pj.status);
		free(r->reuse);
		r->reuse = pj.input_file_id != NULL ?
		    xstrdup(pj.input_file_id) : NULL;
		yajl_tree_free(batch);
		return 0;
	}
	if (at != NULL)
		qb_lwarn(rd->name, rd->lineno, "%s: adopted batch %s (%s), made "
		    "by a submit of %s that was not recorded", file, pj.id,
		    pj.status, at);
	else
		qb_lwarn(rd->name, rd->lineno, "%s: adopted batch %s (%s), made "
		    "for the same file by a submit this %s does not hold", file,
		    pj.id, pj.status, r->useled ? "ledger" : "run");
	idmap_put(&r->done, sha, 64, &isnew);
	r->nadopt++;
	if ((rc = record(r, rec, p, &pj, sha)) != 0)
		r->stop = rc;
	yajl_tree_free(batch);
	return 1;
}

/*
 * The ledger's newest batch for the file is bid. Returns 1 to skip the
 * file (or when submitting stopped), 0 to submit it again. Only a file
 * made of retry outcomes alone ("retries" == "requests" in the pack
 * record: qb-reconcile judged none of its requests done) is submitted
 * again, and only when its batch ended with no request completed
 * (whatever the provider calls that), or qb-reap ended it because its
 * results are gone; a file packed again from retries is byte for byte
 * the one that ran. Running the original pack records again never pays
 * twice: their items come back from qb-reconcile as retries.
 */
static int
again(struct submit *r, struct jsonl_reader *rd, const struct provider *p,
    yajl_val rec, const char *file, const char *sha, const char *bid)
{
	const struct provider_ops *o = provider_ops(p);
	struct provider_job pj;
	struct http *h;
	yajl_val batch;
	long long req = -1, ret = -1;
	char err[256];
	int rc, skip = 1, retries;

	jtree_int(rec, "requests", &req);
	jtree_int(rec, "retries", &ret);
	retries = req > 0 && ret == req;
	if (retries && ledger_reaped(&r->led, sha)) {
		qb_note(1, "%s: batch %s was reaped, its results gone; its "
		    "retries are submitted again", file, bid);
		return 0;
	}
	if (*bid == '\0' || o->get == NULL) {
		qb_lwarn(rd->name, rd->lineno, "%s: already submitted; "
		    "skipped", file);
		r->nskip++;
		return 1;
	}
	if ((h = conn(r, p)) == NULL)
		return 1;
	if ((rc = o->get(h, bid, &batch)) != 0) {
		qb_lwarn(rd->name, rd->lineno, "%s: already submitted as %s, "
		    "which cannot be checked: %s%s", file, bid, h->err,
		    rc == QB_EX_UNAVAILABLE || rc == QB_EX_DATAERR ?
		    "; skipped" : "");
		if (rc == QB_EX_UNAVAILABLE || rc == QB_EX_DATAERR)
			r->nrej++;	/* 404: never submitted blindly */
		else {
			r->stop = rc;
			r->nnot++;
		}
		return 1;
	}
	if (o->job(batch, &pj, err, sizeof(err)) != 0) {
		qb_lwarn(rd->name, rd->lineno, "%s: batch %s: %s", file, bid,
		    err);
		r->stop = QB_EX_PROTOCOL;
		r->nnot++;
		yajl_tree_free(batch);
		return 1;
	}
	if (retries && ran_nothing(&pj, ledger_results(&r->led, sha))) {
		skip = 0;
		qb_note(1, "%s: batch %s ended%s%s with nothing run; its "
		    "retries are submitted again", file, bid,
		    strcmp(pj.status, "ended") == 0 ? "" : " ",
		    strcmp(pj.status, "ended") == 0 ? "" : pj.status);
		/* The provider keeps its input file: no new upload. */
		free(r->reuse);
		r->reuse = pj.input_file_id != NULL ?
		    xstrdup(pj.input_file_id) : NULL;
	} else if (pj.ended && !retries)
		qb_lwarn(rd->name, rd->lineno, "%s: already submitted as %s "
		    "(%s); skipped: qb-reconcile gives its requests their "
		    "outcomes, and its retries, packed again, are submitted",
		    file, bid, pj.status);
	else {
		qb_lwarn(rd->name, rd->lineno, "%s: already submitted as %s "
		    "(%s); skipped", file, bid, pj.status);
		if (retries && pj.ended && pj.has_counts && pj.completed == 0 &&
		    pj.failed > 0 && ledger_results(&r->led, sha) == NULL)
			qb_note(1, "%s: its failed requests are not read yet: "
			    "once qb-poll -i has their results, a file of "
			    "retries alone goes again", file);
	}
	r->nskip += skip;
	yajl_tree_free(batch);
	return skip;
}

/* Say how the batch of a create whose outcome is unknown can be found. */
static void
lost(struct submit *r, const struct provider *p, const char *file,
    const char *sha)
{
	char how[160], now[32];

	provider_time(time(NULL), now, sizeof(now));
	/* OpenAI-style batches (openai, azure) carry the digest in metadata. */
	if (p->line_format == PROVIDER_LINE_OPENAI)
		snprintf(how, sizeof(how), "metadata qb_sha256 %s", sha);
	else
		snprintf(how, sizeof(how), "%s batches made since about %s",
		    p->name, now);
	if (r->useled)
		qb_warn("%s: the batch may exist: a run with ledger %s looks "
		    "for it (%s) before submitting again", file, r->led.path, how);
	else
		qb_warn("%s: the batch may exist (%s): look for it before "
		    "submitting again", file, how);
}

/*
 * Whether a file of tokens fits model's budget now, waiting for room up
 * to the --wait-budget deadline. Returns 1 to submit, 0 when held (or
 * when r->fatal ends the run).
 */
static int
room(struct submit *r, struct jsonl_reader *rd, const struct provider *p,
    const char *file, const char *model, long long tokens)
{
	long long enq, budget = r->o->budget;
	struct http *h;
	double nap = 1;

	if (tokens > budget) {
		qb_lwarn(rd->name, rd->lineno, "%s: %lld tokens for %s pass the "
		    "budget %lld on their own; submitted anyway", file, tokens,
		    model, budget);
		return 1;
	}
	if ((h = conn(r, p)) == NULL)
		return 0;
	while ((enq = budget_enqueued(&r->bud, p, h, model)) + tokens >
	    budget) {
		if (qtime_mono() + nap > r->deadline) {
			qb_lwarn(rd->name, rd->lineno, "%s: held: %lld tokens for "
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

static void
submit(struct submit *r, struct jsonl_reader *rd, yajl_val rec)
{
	struct provider_submit ps;
	struct provider_job pj;
	const struct provider *p;
	const struct provider_ops *o;
	struct http *h;
	yajl_val batch;
	const char *file, *sha, *bid, *at, *model;
	char hex[65], err[256];
	long long tokens = -1;
	int rc, unknown, isnew;

	free(r->reuse);		/* only ever for the file again() saw */
	r->reuse = NULL;
	if ((p = check(r, rd, rec)) == NULL) {
		if (r->o->strict)
			qb_die(QB_EX_DATAERR, "stopped at the first bad record "
			    "(--strict)");
		r->nrej++;
		return;
	}
	o = provider_ops(p);
	file = jtree_str(rec, "file");
	sha = jtree_str(rec, "sha256");
	if (idmap_get(&r->done, sha, 64) != (size_t)-1) {
		qb_lwarn(rd->name, rd->lineno, "%s: already submitted in this "
		    "run; skipped", file);
		r->nrep++;
		return;
	}
	bid = NULL;
	if (r->useled) {
		/* Re-read: qb-poll -i or qb-reap -i may have rewritten it. */
		if ((rc = ledger_refresh(&r->led)) != 0) {
			r->stop = rc;
			r->nnot++;
			return;
		}
		if ((at = ledger_intent(&r->led, sha)) != NULL) {
			if (adopt(r, rd, rec, p, sha, at))
				return;
			bid = "";	/* searched: not again below */
		} else if ((bid = ledger_sha(&r->led, sha)) != NULL &&
		    again(r, rd, p, rec, file, sha, bid))
			return;
	}
	if (sha256_file(file, hex) == -1) {
		qb_lwarn(rd->name, rd->lineno, "%s: %s", file, strerror(errno));
		r->nrej++;
		return;
	}
	if (strcmp(hex, sha) != 0) {
		qb_lwarn(rd->name, rd->lineno, "%s: file changed since it was "
		    "packed (sha256 %.12s..., record says %.12s...)", file, hex, sha);
		r->nrej++;
		return;
	}
	/* No job holds the digest: the provider may still have its batch. */
	if (bid == NULL && adopt(r, rd, rec, p, sha, NULL))
		return;
	model = jtree_str(rec, "model");
	if (jtree_int(rec, "tokens", &tokens) != 0)
		tokens = -1;
	if (r->o->budget > 0 && tokens >= 0 && model != NULL &&
	    !room(r, rd, p, file, model, tokens))
		return;
	if ((h = conn(r, p)) == NULL)
		return;
	/* Recorded before the create, so that its batch can be found. */
	if (r->useled && (rc = ledger_intend(&r->led, sha, file,
	    p->name)) != 0) {
		r->stop = rc;
		r->nnot++;
		return;
	}
	memset(&ps, 0, sizeof(ps));
	ps.path = file;
	ps.sha256 = sha;
	ps.endpoint = jtree_str(rec, "endpoint");
	ps.model = jtree_str(rec, "model");
	ps.input_file_id = r->reuse;
	rc = o->submit(h, &ps, &batch, &unknown);
	free(r->reuse);
	r->reuse = NULL;
	if (rc != 0) {
		qb_lwarn(rd->name, rd->lineno, "%s: not submitted: %s", file,
		    h->err);
		if (unknown)
			lost(r, p, file, sha);
		/* Nothing was made: a later run need not look for it. */
		else if (r->useled && ledger_withdraw(&r->led, sha) != 0)
			r->stop = QB_EX_IOERR;
		if (!unknown &&
		    (rc == QB_EX_UNAVAILABLE || rc == QB_EX_DATAERR)) {
			r->refused = 1;
			r->nrej++;
		} else {
			r->stop = rc;
			r->nnot++;
		}
		return;
	}
	if (o->job(batch, &pj, err, sizeof(err)) != 0) {
		/* Made, but we cannot say what: stop before making more. */
		qb_lwarn(rd->name, rd->lineno, "%s: submitted, but %s",
		    file, err);
		r->stop = QB_EX_PROTOCOL;
		r->nnot++;
		yajl_tree_free(batch);
		return;
	}
	qb_note(1, "%s: %s %s", file, pj.id, pj.status);
	idmap_put(&r->done, sha, 64, &isnew);
	r->nsub++;
	if (tokens >= 0 && model != NULL)
		budget_add(&r->bud, pj.id, p->name, model, tokens, pj.ended);
	if ((rc = record(r, rec, p, &pj, sha)) != 0)
		r->stop = rc;
	yajl_tree_free(batch);
}

static void
summary(const struct submit *r)
{
	struct buf b = BUF_INIT;

	buf_printf(&b, "%lu submitted", r->nsub);
	if (r->nadopt > 0)
		buf_printf(&b, ", %lu adopted", r->nadopt);
	if (r->useled)
		buf_printf(&b, ", %lu skipped (already in ledger)", r->nskip);
	if (!r->useled || r->nrep > 0)
		buf_printf(&b, ", %lu skipped (repeated in this run)", r->nrep);
	buf_printf(&b, ", %lu rejected", r->nrej);
	if (r->nheld > 0)
		buf_printf(&b, ", %lu held (over the token budget; re-run "
		    "later)", r->nheld);
	if (r->nnot > 0)
		buf_printf(&b, ", %lu not submitted (re-run with the same "
		    "input%s)", r->nnot, r->useled ? " and ledger" : "");
	qb_warn("%s", b.p);
	buf_free(&b);
}

/* jsonl_each callback: one pack record. */
static int
take(void *arg, struct jsonl_reader *rd, const char *line, size_t len,
    yajl_val rec)
{
	struct submit *r = arg;
	const char *file;

	if (!r->stop) {
		submit(r, rd, rec);
		return r->fatal ? -1 : 0;
	}
	file = jtree_str(rec, "file");
	qb_lwarn(rd->name, rd->lineno, "%s: not submitted (stopped after an "
	    "earlier failure)", file != NULL ? file : "record");
	r->nnot++;
	return 0;
}

void
submit_init(struct submit *r, const struct submit_opts *o, const char *ledger)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->o = o;
	r->conns.base = o->base;
	r->conns.keyfile = o->keyfile;
	r->g = jout_new();
	idmap_init(&r->done);
	budget_init(&r->bud);
	r->deadline = qtime_mono() + o->wait;
	if (ledger != NULL) {
		/* Made, locked and read before anything is uploaded. */
		ledger_init(&r->led, ledger);
		r->useled = 1;
		if (o->budget > 0) {
			r->led.each = budget_note;
			r->led.each_arg = &r->bud;
		}
		if ((rc = ledger_start(&r->led, "submit", 1)) != 0 ||
		    (rc = ledger_refresh(&r->led)) != 0)
			exit(rc);
	}
}

int
submit_file(struct submit *r, const char *path)
{
	int rc;

	if (r->fatal)
		return r->fatal;
	rc = jsonl_each(path, r->o->strict, take, r, &r->nrej);
	return r->fatal ? r->fatal : rc;
}

int
submit_end(struct submit *r, int rc)
{
	if (!r->fatal)
		summary(r);
	free(r->reuse);
	provider_conns_free(&r->conns);
	if (r->useled)
		ledger_free(&r->led);
	idmap_free(&r->done);
	budget_free(&r->bud);
	yajl_gen_free(r->g);
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
