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
	 * batch tokens would pass its limit (case 17): nothing in it ran. */
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
	 * permission, the organization's rate limit: case 16). */
	if (jtree_true(v, "account_error"))
		return "account_error: the account failed, not the request";
	if ((code = jtree_str(jtree_get(v, "error"), "code")) == NULL)
		return NULL;
	for (i = 0; excused[i].code != NULL; i++)
		if (strcmp(code, excused[i].code) == 0)
			return excused[i].why;
	return NULL;
}

static void
put(struct settler *R)
{
	if (jout_line(R->g, R->out) == -1)
		qb_diesys(QB_EX_IOERR, "write error");
}

int
deadletter_put(struct deadletter *d, yajl_gen g)
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

/* Settle p[0..n-1]: dead letters first, then one call per kind. */
static void
settle_chunk(struct settler *R, struct pend *p, size_t n)
{
	struct qsettle s[SQS_BATCH_MAX];
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
			if (deadletter_put(R->dead, R->g) != 0) {
				p[i].skip = 1;
				snprintf(s[i].why, sizeof(s[i].why),
				    "the dead letter could not be written");
			}
		}
	}
	/* Skipped entries are moved out of the call. */
	{
		struct qsettle t[SQS_BATCH_MAX];
		size_t k = 0, j;

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
	for (i = 0; i < n; i++) {
		/* The outcome's own "error" is kept: the settle failure has
		 * its own name. */
		static const char *const skip[] = { "settled", "settle_error",
		    NULL };
		const char *id = jtree_str(p[i].v, "id");

		if (s[i].rc != 0) {
			qb_warn("%s: %s not settled: %s", R->q->name,
			    id ? id : "an item", s[i].why);
			R->rc = QB_EX_PARTIAL;
		}
		jout_open(R->g);
		jout_members(R->g, p[i].v, skip);
		jout_kstr(R->g, "settled", s[i].rc == 0 ? p[i].what :
		    s[i].expired ? "expired" : NULL);
		if (s[i].rc != 0)
			jout_kstr(R->g, "settle_error", s[i].why);
		jout_close(R->g);
		put(R);
		yajl_tree_free(p[i].v);
	}
}

void
settle_files(struct settler *R, char **files, int nfiles)
{
	struct jsonl_reader r;
	struct pend p[SQS_BATCH_MAX];
	const char *oc, *qn, *why, *id;
	long long rc;
	size_t n = 0, len;
	yajl_val v;
	char *line;
	int i, ch;

	for (i = 0; i < (nfiles ? nfiles : 1); i++) {
		if (jsonl_open(&r, nfiles ? files[i] : "-") == -1)
			qb_diesys(QB_EX_NOINPUT, "%s", files[i]);
		while ((ch = jsonl_next(&r, &line, &len)) != JSONL_EOF) {
			if (ch == JSONL_IOERR)
				exit(QB_EX_IOERR);
			why = NULL;
			v = NULL;
			if (ch == JSONL_BAD || (v = jsonl_tree(&r, line, len)) == NULL)
				why = "";
			else if ((oc = jtree_str(v, "outcome")) == NULL ||
			    (strcmp(oc, "done") != 0 && strcmp(oc, "retry") != 0 &&
			    strcmp(oc, "dead") != 0))
				why = "\"outcome\" is not done, retry or dead";
			else if (jtree_str(v, "receipt") == NULL)
				why = "no \"receipt\": not from a queue";
			else if ((qn = jtree_str(v, "queue")) != NULL && R->q != NULL &&
			    !R->named && strcmp(qn, R->q->name) != 0)
				why = "from another queue than the first record";
			else if (R->q == NULL && qn == NULL)
				why = "no \"queue\" and no -Q";
			if (why != NULL) {
				if (*why != '\0')
					qb_lwarn(r.name, r.lineno, "%s", why);
				yajl_tree_free(v);
				if (R->strict)
					exit(QB_EX_DATAERR);
				R->rc = QB_EX_PARTIAL;
				continue;
			}
			if (R->q == NULL)
				R->q = queue_open(jtree_str(v, "queue"), 0);
			memset(&p[n], 0, sizeof(p[n]));
			p[n].v = v;
			if (jtree_int(v, "receives", &rc) == -1)
				rc = 0;
			id = jtree_str(v, "id");
			if (oc[0] == 'r' && R->maxr > 0 && rc >= R->maxr) {
				if ((why = settle_excused(v)) != NULL)
					qb_note(1, "%s: received %lld times, "
					    "--max-receives %ld not applied: not "
					    "the item's fault (%s); released",
					    id ? id : "an item", rc, R->maxr, why);
				else {
					qb_note(1, "%s: received %lld times: dead",
					    id ? id : "an item", rc);
					oc = "dead";
				}
			}
			p[n].dead = strcmp(oc, "dead") == 0 && (R->dead->fp != NULL || R->dead->q != NULL);
			p[n].what = oc[0] == 'r' ? "released" : p[n].dead ?
			    "dead_lettered" : "deleted";
			if (++n == SQS_BATCH_MAX) {
				settle_chunk(R, p, n);
				n = 0;
			}
		}
		jsonl_close(&r);
	}
	if (n > 0)
		settle_chunk(R, p, n);
}
