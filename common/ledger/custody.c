/*
 * custody.c: whether qb may pay for a batch file (custody.h): the run's
 * digests, the ledger's jobs and intents, and the provider's own batches
 * found by digest, weighed so that no file is paid for twice and none is
 * left without a batch for want of asking.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/rfc3339.h"
#include "base/sha256.h"
#include "base/xmem.h"
#include "http/http.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "ledger/custody.h"
#include "record/result.h"

void
custody_init(struct custody *c, struct provider_conns *conns, double grace,
    double lookback)
{
	memset(c, 0, sizeof(*c));
	c->led.fd = c->led.runfd = -1;
	c->conns = conns;
	c->grace = grace;
	c->lookback = lookback;
	idmap_init(&c->run);
}

int
custody_ledger(struct custody *c, const char *path,
    void (*each)(void *arg, yajl_val job), void *arg)
{
	int rc;

	/* Made, locked and read before anything is uploaded. */
	if ((rc = ledger_init(&c->led, path)) == 0) {
		c->led.each = each;
		c->led.each_arg = arg;
		if ((rc = ledger_start(&c->led, "submit", 1)) == 0)
			rc = ledger_refresh(&c->led);
	}
	if (rc != 0)
		ledger_free(&c->led);
	else
		c->useled = 1;
	return rc;
}

void
custody_free(struct custody *c)
{
	if (c->useled)
		ledger_free(&c->led);
	idmap_free(&c->run);
}

void
custody_release(struct custody_file *f)
{
	yajl_tree_free(f->batch);
	f->batch = NULL;
	free(f->reuse);
	f->reuse = NULL;
}

/*
 * The connection to f's provider, or NULL when its configuration is bad:
 * that is reported, f->status says how the run ends and f->fatal that
 * it ends at once.
 */
static struct http *
conn(struct custody *c, struct custody_file *f)
{
	struct http *h;
	int rc;

	if ((rc = provider_conn(c->conns, f->p, &h)) != 0) {
		f->status = rc;
		f->fatal = 1;
		return NULL;
	}
	return h;
}

/*
 * 1 if the file is made of retry outcomes alone ("retries" == "requests"
 * in its pack record: qb-reconcile judged none of its requests done).
 */
static int
all_retry_outcomes(const struct custody_file *f)
{
	long long req = -1, ret = -1;

	jtree_int(f->rec, "requests", &req);
	jtree_int(f->rec, "retries", &ret);
	return req > 0 && ret == req;
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
 * some hosts count expired ones as failed (qb-providers(7), OPENAI
 * "Expired and cancelled batches").
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

/* The new create goes from the input file pj's batch was made from. */
static void
reuse(struct custody_file *f, const struct provider_job *pj)
{
	free(f->reuse);
	f->reuse = pj->input_file_id != NULL ? xstrdup(pj->input_file_id) :
	    NULL;
}

/* provider find callback: batches the ledger holds are not adopted. */
static int
known(void *arg, const char *id)
{
	struct custody *c = arg;

	return c->useled && ledger_known(&c->led, id);
}

/*
 * Look among p's batches made since since (unix seconds) for one made
 * for f; at is the time of the intent that asks, or NULL (--lookback).
 * Returns CUSTODY_ADOPT with f->batch and f->pj set, CUSTODY_CREATE with
 * f->batch NULL when there is none, or CUSTODY_STOP, said.
 */
static enum custody_say
look(struct custody *c, struct custody_file *f, const char *at,
    long long since)
{
	const struct provider_ops *o = provider_ops(f->p);
	struct http *h;
	char err[256];
	int rc;

	if ((h = conn(c, f)) == NULL)
		return CUSTODY_STOP;
	if ((rc = o->find(h, f->sha, since, known, c, &f->batch)) != 0) {
		qb_lwarn(f->src, f->lineno, "%s: not submitted: cannot look "
		    "for %s (%s): %s", f->file, at != NULL ? "the batch of an "
		    "unrecorded submit" : "a batch made for it before",
		    at != NULL ? at : "--lookback", h->err);
		f->status = rc;
		return CUSTODY_STOP;
	}
	if (f->batch == NULL)
		return CUSTODY_CREATE;
	if (o->job(f->batch, &f->pj, err, sizeof(err)) != 0) {
		qb_lwarn(f->src, f->lineno, "%s: not adopted: %s", f->file, err);
		f->status = QB_EX_PROTOCOL;
		return CUSTODY_STOP;
	}
	return CUSTODY_ADOPT;
}

/*
 * The ledger holds an intent for f made at at and no job after it: a
 * create whose outcome went unrecorded. The provider's batches since an
 * hour before are searched, and a miss within c->grace seconds of the
 * intent holds the file: a create the server took in late, after qb gave
 * up on it, may still make its batch.
 */
static enum custody_say
unrecorded(struct custody *c, struct custody_file *f, const char *at)
{
	enum custody_say say;
	long long t;

	if (provider_ops(f->p)->find == NULL)
		return CUSTODY_CREATE;
	if (rfc3339_parse(at, &t) != 0)
		t = 0;		/* unknown: look through them all */
	if ((say = look(c, f, at, t - 3600)) == CUSTODY_ADOPT)
		qb_lwarn(f->src, f->lineno, "%s: adopted batch %s (%s), made "
		    "by a submit of %s that was not recorded", f->file, f->pj.id,
		    f->pj.status, at);
	if (say != CUSTODY_CREATE)
		return say;
	if (t > 0 && (double)(time(NULL) - t) < c->grace) {
		qb_lwarn(f->src, f->lineno, "%s: not submitted: no batch yet "
		    "from the unrecorded submit of %s, which may still be made; "
		    "run again %g s after then", f->file, at, c->grace);
		return CUSTODY_WAIT;
	}
	qb_note(1, "%s: no batch from the unrecorded submit of %s", f->file,
	    at);
	return CUSTODY_CREATE;
}

/*
 * No job holds f's digest, but another ledger's run, or one without a
 * ledger, may have made its batch: the batches of the last c->lookback
 * seconds are searched, only where batches carry the digest (metadata
 * qb_sha256). A batch found that ended with nothing run is not adopted
 * when the file is all retries, which go again.
 */
static enum custody_say
lookback(struct custody *c, struct custody_file *f)
{
	enum custody_say say;

	if (provider_ops(f->p)->find == NULL || c->lookback <= 0 ||
	    f->p->line_format != PROVIDER_LINE_OPENAI)
		return CUSTODY_CREATE;
	say = look(c, f, NULL, (long long)time(NULL) - (long long)c->lookback);
	if (say != CUSTODY_ADOPT)
		return say;
	if (all_retry_outcomes(f) && ran_nothing(&f->pj, NULL)) {
		qb_note(1, "%s: batch %s made for it ended %s with nothing run; "
		    "its retries are submitted again", f->file, f->pj.id,
		    f->pj.status);
		reuse(f, &f->pj);
		yajl_tree_free(f->batch);
		f->batch = NULL;
		return CUSTODY_CREATE;
	}
	qb_lwarn(f->src, f->lineno, "%s: adopted batch %s (%s), made for the "
	    "same file by a submit this %s does not hold", f->file, f->pj.id,
	    f->pj.status, c->useled ? "ledger" : "run");
	return CUSTODY_ADOPT;
}

/*
 * Ask the provider about bid, the ledger's batch for f: CUSTODY_CREATE
 * with *batch (the caller frees it) and *pj set, or another answer, said
 * (a batch the provider does not know is never submitted blindly).
 */
static enum custody_say
ledgered(struct custody *c, struct custody_file *f, const char *bid,
    yajl_val *batch, struct provider_job *pj)
{
	const struct provider_ops *o = provider_ops(f->p);
	struct http *h;
	char err[256];
	int rc;

	if ((h = conn(c, f)) == NULL)
		return CUSTODY_STOP;
	if ((rc = o->get(h, bid, batch)) != 0) {
		qb_lwarn(f->src, f->lineno, "%s: already submitted as %s, "
		    "which cannot be checked: %s%s", f->file, bid, h->err,
		    rc == QB_EX_UNAVAILABLE || rc == QB_EX_DATAERR ?
		    "; skipped" : "");
		if (rc == QB_EX_UNAVAILABLE || rc == QB_EX_DATAERR)
			return CUSTODY_REJECT;	/* 404 */
		f->status = rc;
		return CUSTODY_STOP;
	}
	if (o->job(*batch, pj, err, sizeof(err)) != 0) {
		qb_lwarn(f->src, f->lineno, "%s: batch %s: %s", f->file, bid, err);
		f->status = QB_EX_PROTOCOL;
		yajl_tree_free(*batch);
		*batch = NULL;
		return CUSTODY_STOP;
	}
	return CUSTODY_CREATE;
}

/*
 * The ledger's newest batch for f is bid. Only a file made of retry
 * outcomes alone is submitted again, and only when its batch ended with
 * no request completed (whatever the provider calls that), or qb-reap
 * ended it because its results are gone; a file packed again from
 * retries is byte for byte the one that ran. Running the original pack
 * records again never pays twice: their items come back from
 * qb-reconcile as retries.
 */
static enum custody_say
again(struct custody *c, struct custody_file *f, const char *bid)
{
	struct provider_job pj;
	yajl_val batch = NULL;
	enum custody_say say;
	char *const *results = ledger_results(&c->led, f->sha);
	int retries = all_retry_outcomes(f), ended;

	if (retries && ledger_reaped(&c->led, f->sha)) {
		qb_note(1, "%s: batch %s was reaped, its results gone; its "
		    "retries are submitted again", f->file, bid);
		return CUSTODY_CREATE;
	}
	if (*bid == '\0' || provider_ops(f->p)->get == NULL) {
		qb_lwarn(f->src, f->lineno, "%s: already submitted; skipped",
		    f->file);
		return CUSTODY_SKIP;
	}
	if ((say = ledgered(c, f, bid, &batch, &pj)) != CUSTODY_CREATE)
		return say;
	ended = strcmp(pj.status, "ended") == 0;
	if (retries && ran_nothing(&pj, results)) {
		qb_note(1, "%s: batch %s ended%s%s with nothing run; its "
		    "retries are submitted again", f->file, bid, ended ? "" : " ",
		    ended ? "" : pj.status);
		reuse(f, &pj);	/* the provider keeps its input file */
	} else if (pj.ended && !retries) {
		qb_lwarn(f->src, f->lineno, "%s: already submitted as %s (%s); "
		    "skipped: qb-reconcile gives its requests their outcomes, "
		    "and its retries, packed again, are submitted", f->file, bid,
		    pj.status);
		say = CUSTODY_SKIP;
	} else {
		qb_lwarn(f->src, f->lineno, "%s: already submitted as %s (%s); "
		    "skipped", f->file, bid, pj.status);
		if (retries && pj.ended && pj.has_counts && pj.completed == 0 &&
		    pj.failed > 0 && results == NULL)
			qb_note(1, "%s: its failed requests are not read yet: "
			    "once qb-poll -i has their results, a file of "
			    "retries alone goes again", f->file);
		say = CUSTODY_SKIP;
	}
	yajl_tree_free(batch);
	return say;
}

/* CUSTODY_CREATE if f's file still has the digest it was packed with. */
static enum custody_say
intact(const struct custody_file *f)
{
	char hex[65];

	if (sha256_file(f->file, hex) == -1) {
		qb_lwarn(f->src, f->lineno, "%s: %s", f->file, strerror(errno));
		return CUSTODY_REJECT;
	}
	if (strcmp(hex, f->sha) != 0) {
		qb_lwarn(f->src, f->lineno, "%s: file changed since it was "
		    "packed (sha256 %.12s..., record says %.12s...)", f->file,
		    hex, f->sha);
		return CUSTODY_REJECT;
	}
	return CUSTODY_CREATE;
}

enum custody_say
custody_ask(struct custody *c, struct custody_file *f)
{
	enum custody_say say;
	const char *at, *bid = NULL;

	f->status = 0;
	f->batch = NULL;
	f->reuse = NULL;
	if (idmap_get(&c->run, f->sha, strlen(f->sha)) != (size_t)-1) {
		qb_lwarn(f->src, f->lineno, "%s: already submitted in this run; "
		    "skipped", f->file);
		return CUSTODY_REPEATED;
	}
	if (c->useled) {
		/* Re-read: qb-poll -i or qb-reap -i may have rewritten it. */
		if ((f->status = ledger_refresh(&c->led)) != 0)
			return CUSTODY_STOP;
		if ((at = ledger_intent(&c->led, f->sha)) != NULL) {
			if ((say = unrecorded(c, f, at)) != CUSTODY_CREATE)
				return say;
			bid = "";	/* searched: no lookback below */
		} else if ((bid = ledger_sha(&c->led, f->sha)) != NULL &&
		    (say = again(c, f, bid)) != CUSTODY_CREATE)
			return say;
	}
	if ((say = intact(f)) != CUSTODY_CREATE)
		return say;
	/* No job holds the digest: the provider may still have its batch. */
	return bid == NULL ? lookback(c, f) : CUSTODY_CREATE;
}

int
custody_intend(struct custody *c, const struct custody_file *f)
{
	if (!c->useled)
		return 0;
	return ledger_intend(&c->led, f->sha, f->file, f->p->name);
}

int
custody_failed(struct custody *c, const struct custody_file *f, int unknown)
{
	char how[160], now[32];

	if (!unknown) {
		/* Nothing was made: a later run need not look for it. */
		if (c->useled && ledger_withdraw(&c->led, f->sha) != 0)
			return QB_EX_IOERR;
		return 0;
	}
	provider_time(time(NULL), now, sizeof(now));
	/* OpenAI-style batches (openai, azure) carry the digest in metadata. */
	if (f->p->line_format == PROVIDER_LINE_OPENAI)
		snprintf(how, sizeof(how), "metadata qb_sha256 %s", f->sha);
	else
		snprintf(how, sizeof(how), "%s batches made since about %s",
		    f->p->name, now);
	if (c->useled)
		qb_warn("%s: the batch may exist: a run with ledger %s looks "
		    "for it (%s) before submitting again", f->file, c->led.path,
		    how);
	else
		qb_warn("%s: the batch may exist (%s): look for it before "
		    "submitting again", f->file, how);
	return 0;
}

int
custody_record(struct custody *c, const struct custody_file *f,
    const char *batch_id, const char *line, size_t len)
{
	int rc, isnew;

	idmap_put(&c->run, f->sha, strlen(f->sha), &isnew);
	if (!c->useled ||
	    (rc = ledger_append(&c->led, f->sha, batch_id, line, len)) == 0)
		return 0;
	qb_warn("batch %s was created but is not in ledger %s: keep the job "
	    "record printed on standard output, or run again with this ledger "
	    "to adopt the batch", batch_id, c->led.path);
	return rc;
}
