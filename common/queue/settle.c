/*
 * settle.c: qb-drain --settle. Reads outcome records and settles each
 * item on its queue: done and dead are deleted (dead ones first written
 * to the dead letter), retry is released after a backoff that doubles
 * with each receive; --max-receives makes a retry dead, unless it was not
 * the item's fault (settle_excused). Each record is printed again with
 * "settled" (and "settle_error" when it failed); keys read: outcome,
 * receipt, receives, queue, id, account_error, error.code.
 * SPDX-License-Identifier: ISC
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exits.h"
#include "base/msg.h"
#include "json/jout.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "queue/settle.h"
#include "queue/sqs.h"

/*
 * The error codes of a retry that say nothing about the item: the batch
 * it was in never ran, or failed, for a reason outside it. Sending the
 * item again unchanged can work, so these never spend its receives.
 */
static const struct {
	const char *code, *why;
} excused[] = {
	/* OpenAI fails a whole batch when the organization's enqueued
	 * batch tokens would pass its limit (qb-providers(7), OPENAI
	 * "Limits"; tests/1000-qb-drain.t): nothing in it ran. */
	{ "token_limit_exceeded", "token_limit_exceeded: the batch was "
	    "refused for the organization's enqueued-token limit" },
	/* qb-reconcile: the batch failed because of another of its lines. */
	{ "batch_failed", "batch_failed: the batch failed because of "
	    "another line" },
	{ NULL, NULL }
};

const char *
settle_excused(yajl_val v)
{
	const char *code;
	size_t i;

	/* qb-reconcile's mark of a failure of the account (billing, a key's
	 * permission, the organization's rate limit; tests/1000-qb-drain.t). */
	if (jtree_true(v, "account_error"))
		return "account_error: the account failed, not the request";
	if ((code = jtree_str(jtree_get(v, "error"), "code")) == NULL)
		return NULL;
	for (i = 0; excused[i].code != NULL; i++)
		if (strcmp(code, excused[i].code) == 0)
			return excused[i].why;
	return NULL;
}

int
settle_deadletter(struct deadletter *d, yajl_gen g)
{
	const unsigned char *p;
	size_t n;
	int rc = 0;

	yajl_gen_get_buf(g, &p, &n);
	if (d->fp != NULL && (fwrite(p, 1, n, d->fp) != n ||
	    putc('\n', d->fp) == EOF || fflush(d->fp) != 0 ||
	    fsync(fileno(d->fp)) == -1)) {
		qb_warnsys("dead letter file %s", d->path);
		rc = QB_EX_IOERR;
	}
	if (rc == 0 && d->q != NULL && ((rc = d->q->send(d->q,
	    (const char *)p, n)) != 0 || (rc = d->q->flush(d->q)) != 0))
		qb_warn("dead letter queue %s: not sent", d->q->name);
	yajl_gen_clear(g);
	yajl_gen_reset(g, NULL);
	return rc;
}

/* One outcome record waiting to be settled. */
struct pend {
	yajl_val	 v;		/* owned */
	const char	*what;		/* "deleted", "released", "dead_lettered" */
	int		 dead, skip;
};

/*
 * What to do with each of p[0..n-1], into s: release a retry after its
 * backoff, delete the others; write the dead letters first, and skip
 * (settle not) an item whose dead letter could not be written.
 */
static void
plan(struct settler *R, struct pend *p, struct qsettle *s, size_t n)
{
	const char *rcpt;
	long long rc;
	size_t i;

	for (i = 0; i < n; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		s[i].receipt = (rcpt = jtree_str(p[i].v, "receipt")) ? rcpt : "";
		s[i].act = p[i].what[0] == 'r' ? QA_RELEASE : QA_DELETE;
		if (jtree_int(p[i].v, "receives", &rc) == -1 || rc < 1)
			rc = 1;
		s[i].delay = fmin(R->rdelay * pow(2, (double)(rc - 1)), SQS_VIS_MAX);
		if (p[i].dead) {
			jout_val(R->g, p[i].v);
			if (settle_deadletter(R->dead, R->g) != 0) {
				p[i].skip = 1;
				snprintf(s[i].why, sizeof(s[i].why),
				    "the dead letter could not be written");
			}
		}
	}
}

/* Carry out s[0..n-1] but the skipped ones, which fail QB_EX_IOERR. */
static void
call(struct settler *R, const struct pend *p, struct qsettle *s, size_t n)
{
	struct qsettle t[SQS_BATCH_MAX];
	size_t i, j, k = 0;

	for (i = 0; i < n; i++)
		if (!p[i].skip)
			t[k++] = s[i];
	if (k > 0)
		R->q->settle(R->q, t, k);
	for (i = 0, j = 0; i < n; i++)
		if (!p[i].skip)
			s[i] = t[j++];
		else
			s[i].rc = QB_EX_IOERR;
}

/* Print outcome record v again with "settled" as s says (and
 * "settle_error"). Returns 0, or QB_EX_IOERR after reporting it. */
static int
put(struct settler *R, yajl_val v, const char *what, const struct qsettle *s)
{
	/* The outcome's own "error" is kept: the settle failure has its
	 * own name. */
	static const char *const skip[] = { "settled", "settle_error", NULL };

	jout_open(R->g);
	jout_members(R->g, v, skip);
	jout_kstr(R->g, "settled", s->rc == 0 ? what : s->expired ?
	    "expired" : NULL);
	if (s->rc != 0)
		jout_kstr(R->g, "settle_error", s->why);
	jout_close(R->g);
	if (jout_line(R->g, R->out) == -1)
		return qb_failsys(QB_EX_IOERR, "write error");
	return 0;
}

/*
 * Report the failures of p[0..n-1], print each record again, and free
 * it. Returns 0, or QB_EX_IOERR after a write error (the
 * rest is not printed).
 */
static int
report(struct settler *R, struct pend *p, const struct qsettle *s, size_t n)
{
	const char *id;
	size_t i;
	int rc = 0;

	for (i = 0; i < n; i++) {
		if (s[i].rc != 0) {
			id = jtree_str(p[i].v, "id");
			qb_warn("%s: %s not settled: %s", R->q->name,
			    id ? id : "an item", s[i].why);
			R->rc = QB_EX_PARTIAL;
		}
		if (rc == 0)
			rc = put(R, p[i].v, p[i].what, &s[i]);
		yajl_tree_free(p[i].v);
	}
	return rc;
}

/* Settle p[0..n-1]: dead letters first, then one call per kind. */
static int
settle_chunk(struct settler *R, struct pend *p, size_t n)
{
	struct qsettle s[SQS_BATCH_MAX];

	plan(R, p, s, n);
	call(R, p, s, n);
	return report(R, p, s, n);
}

/*
 * Why the outcome record v cannot be settled ("" when it was reported
 * already), or NULL when it can.
 */
static const char *
refuse(const struct settler *R, yajl_val v)
{
	const char *oc, *qn;

	if (v == NULL)
		return "";
	if ((oc = jtree_str(v, "outcome")) == NULL || (strcmp(oc, "done") != 0 &&
	    strcmp(oc, "retry") != 0 && strcmp(oc, "dead") != 0))
		return "\"outcome\" is not done, retry or dead";
	if (jtree_str(v, "receipt") == NULL)
		return "no \"receipt\": not from a queue";
	if ((qn = jtree_str(v, "queue")) != NULL && R->q != NULL &&
	    !R->named && strcmp(qn, R->q->name) != 0)
		return "from another queue than the first record";
	if (R->q == NULL && qn == NULL)
		return "no \"queue\" and no -Q";
	return NULL;
}

/*
 * The settlement of outcome record v into *p (which takes v): a retry
 * received --max-receives times is dead, unless it was not the item's
 * fault; a dead one is dead-lettered when there is somewhere to put it.
 */
static void
pending(const struct settler *R, yajl_val v, struct pend *p)
{
	const char *oc = jtree_str(v, "outcome"), *why, *id;
	long long rc;

	memset(p, 0, sizeof(*p));
	p->v = v;
	if (jtree_int(v, "receives", &rc) == -1)
		rc = 0;
	id = jtree_str(v, "id");
	if (oc[0] == 'r' && R->maxr > 0 && rc >= R->maxr) {
		if ((why = settle_excused(v)) != NULL)
			qb_note(1, "%s: received %lld times, --max-receives %ld "
			    "not applied: not the item's fault (%s); released",
			    id ? id : "an item", rc, R->maxr, why);
		else {
			qb_note(1, "%s: received %lld times: dead",
			    id ? id : "an item", rc);
			oc = "dead";
		}
	}
	p->dead = strcmp(oc, "dead") == 0 &&
	    (R->dead->fp != NULL || R->dead->q != NULL);
	p->what = oc[0] == 'r' ? "released" : p->dead ? "dead_lettered" :
	    "deleted";
}

/*
 * Settle the outcome records of the input r in chunks of SQS_BATCH_MAX;
 * p holds *n read but not yet settled, across inputs. Returns 0 or the
 * status that stops the run; *instop is set when the input stopped it (a
 * read error, a bad line under --strict), not the queue.
 */
static int
settle_input(struct settler *R, struct jsonl_reader *r, struct pend *p,
    size_t *n, int *instop)
{
	const char *why;
	yajl_val v;
	size_t len;
	char *line;
	int ch, rc;

	while ((ch = jsonl_next(r, &line, &len)) != JSONL_EOF) {
		if (ch == JSONL_IOERR) {
			*instop = 1;
			return QB_EX_IOERR;	/* reported */
		}
		v = ch == JSONL_BAD ? NULL : jsonl_tree(r, line, len);
		if ((why = refuse(R, v)) != NULL) {
			if (*why != '\0')
				qb_lwarn(r->name, r->lineno, "%s", why);
			yajl_tree_free(v);
			if (R->strict) {
				*instop = 1;
				return QB_EX_DATAERR;
			}
			R->rc = QB_EX_PARTIAL;
			continue;
		}
		if (R->q == NULL &&
		    (rc = queue_open(&R->q, jtree_str(v, "queue"), 0)) != 0) {
			yajl_tree_free(v);
			return rc;
		}
		pending(R, v, &p[(*n)++]);
		if (*n == SQS_BATCH_MAX) {
			*n = 0;
			if ((rc = settle_chunk(R, p, SQS_BATCH_MAX)) != 0)
				return rc;
		}
	}
	return 0;
}

int
settle_files(struct settler *R, char **files, int nfiles)
{
	struct jsonl_reader r;
	struct pend p[SQS_BATCH_MAX];
	const char *path;
	size_t i, n = 0;
	int k, rc = 0, st, instop = 0;

	for (k = 0; k < (nfiles ? nfiles : 1) && rc == 0; k++) {
		path = nfiles ? files[k] : "-";
		if (jsonl_open(&r, path) == -1) {
			rc = qb_failsys(QB_EX_NOINPUT, "%s", nfiles ? path :
			    "<stdin>");
			instop = 1;
			break;
		}
		rc = settle_input(R, &r, p, &n, &instop);
		jsonl_close(&r);
	}
	/*
	 * The outcomes read before an input stopped the run are settled all
	 * the same: left leased, a done item would come back and be paid for
	 * again. After the queue failed, what was read stays leased.
	 */
	if ((rc == 0 || instop) && n > 0) {
		if ((st = settle_chunk(R, p, n)) != 0 && rc == 0)
			rc = st;
	} else
		for (i = 0; i < n; i++)
			yajl_tree_free(p[i].v);
	return rc != 0 ? rc : R->rc;
}
