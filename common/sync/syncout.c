/*
 * syncout.c: what the synchronous engine writes. A result record per
 * item: "id", the members result_emit writes (status, http_status,
 * error, usage, request_id, batch_id, response, account_error), then
 * every other member of the item as it came (body, endpoint, meta,
 * queue, receipt ...), flushed at once: a printed result is the item's
 * record. The --metrics file, in the Prometheus text format, and the
 * summary on standard error.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/afile.h"
#include "base/exits.h"
#include "base/msg.h"
#include "base/qtime.h"
#include "json/jout.h"
#include "provider/provider.h"
#include "record/members.h"
#include "sync/syncint.h"
#include "sync/syncitem.h"
#include "sync/syncout.h"

/* Print its result r (an answer, or made up for a failure); 0, or -1
 * after a write error on standard output (reported). */
static int
put(struct sync *s, struct sync_item *it, const struct result *r)
{
	/* Members the result sets, or that would make it another record
	 * (a retry outcome sent again carries its old ones). */
	static const char *const own[] = { "id", "custom_id", "status",
	    "http_status", "response", "error", "usage", "request_id",
	    "batch_id", "account_error", "outcome", "cost_usd", NULL };
	yajl_gen g = s->g;

	jout_open(g);
	jout_kstr(g, "id", it->id);
	result_emit(g, r, NULL);
	members_copy(&s->scan, g, it->line, it->len, own, 0);
	if (it->defep != NULL)	/* says what was called; an item again */
		jout_kstr(g, "endpoint", it->defep);
	jout_close(g);
	if (jout_line(g, stdout) == -1 || fflush(stdout) == EOF) {
		qb_warnsys("write error on standard output");
		return -1;
	}
	return 0;
}

void
syncout_settle(struct sync *s, struct sync_item *it, const struct result *r,
    const char *say)
{
	if (r->status == RESULT_SUCCEEDED && r->outcome == OUTCOME_DONE)
		s->nok++;
	else if (r->outcome == OUTCOME_RETRY)
		s->nlater++;
	else
		s->nfail++;
	if (say != NULL)
		qb_lwarn(it->file, it->lineno, "id \"%s\": %s", it->id, say);
	else
		qb_note(1, "id \"%s\": %s %ld in %d tr%s", it->id,
		    result_status_word(r->status), (long)r->http_status,
		    it->tries, it->tries == 1 ? "y" : "ies");
	if (put(s, it, r) == -1)
		s->stop = QB_EX_IOERR;
	syncitem_free(it);
}

void
syncout_noanswer(struct result *r, enum result_status st, const char *type,
    const char *code, const char *msg)
{
	memset(r, 0, sizeof(*r));
	r->kind = RESULT_QB;
	r->status = st;
	r->outcome = OUTCOME_RETRY;
	r->http_status = r->in_tok = r->out_tok = -1;
	r->etype = type;
	r->ecode = code;
	r->emsg = msg;
}

void
syncout_count(struct sync_model *m, long status)
{
	int i;

	for (i = 0; i < m->ncode && m->code[i].code != status; i++)
		continue;
	if (i == m->ncode) {
		if (m->ncode == SYNC_CODES)
			i = SYNC_CODES - 1;	/* the rest share the last */
		else
			m->code[m->ncode++].code = status;
	}
	m->code[i].n++;
}

/* A label value, escaped as the text format wants. */
static void
label(FILE *fp, const char *v)
{
	for (; *v != '\0'; v++)
		if (*v == '\\' || *v == '"')
			fprintf(fp, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", fp);
		else
			putc(*v, fp);
}

static void
head(FILE *fp, const char *name, const char *type, const char *help)
{
	fprintf(fp, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
labels(FILE *fp, const struct sync *s, const struct sync_model *m)
{
	fprintf(fp, "{provider=\"%s\",model=\"", s->p->name);
	label(fp, m->name);
	putc('"', fp);
}

void
syncout_metrics(struct sync *s)
{
	static const char *const name[] = { "qb_sync_inflight",
	    "qb_sync_window", "qb_sync_admitted_tokens_total",
	    "qb_sync_retries_total", "qb_sync_unknown_total" };
	static const char *const type[] = { "gauge", "gauge", "counter",
	    "counter", "counter" };
	static const char *const help[] = { "Requests in flight.",
	    "Requests the concurrency window lets fly (AIMD).",
	    "Estimated prompt tokens admitted.",
	    "Requests tried again.",
	    "Requests tried again after an unknown outcome (possible double spends)." };
	static int warned;
	struct sync_model *m;
	struct afile af;
	size_t i;
	int k, c;

	if (afile_open(&af, s->o->metrics) == -1)
		goto fail;
	for (k = 0; k < 5; k++) {
		head(af.fp, name[k], type[k], help[k]);
		for (i = 0; i < s->nmodels; i++) {
			m = s->models[i];
			fputs(name[k], af.fp);
			labels(af.fp, s, m);
			fputs("} ", af.fp);
			switch (k) {
			case 0:
				fprintf(af.fp, "%d\n", ratelim_inflight(m->rl));
				break;
			case 1:
				fprintf(af.fp, "%g\n", ratelim_window(m->rl));
				break;
			case 2:
				fprintf(af.fp, "%llu\n", m->tokens);
				break;
			case 3:
				fprintf(af.fp, "%lu\n", m->retries);
				break;
			default:
				fprintf(af.fp, "%lu\n", m->unknown);
			}
		}
	}
	head(af.fp, "qb_sync_requests_total", "counter", "Requests that "
	    "ended, by HTTP status (none: no answer).");
	for (i = 0; i < s->nmodels; i++)
		for (m = s->models[i], c = 0; c < m->ncode; c++) {
			fputs("qb_sync_requests_total", af.fp);
			labels(af.fp, s, m);
			if (m->code[c].code > 0)
				fprintf(af.fp, ",code=\"%ld\"} %lu\n",
				    m->code[c].code, m->code[c].n);
			else
				fprintf(af.fp, ",code=\"none\"} %lu\n",
				    m->code[c].n);
		}
	if (ferror(af.fp)) {
		afile_abort(&af);
		errno = EIO;
		goto fail;
	}
	if (afile_commit(&af, NULL) == 0)
		return;
fail:
	if (!warned++)
		qb_warnsys("cannot write the metrics file %s", s->o->metrics);
}

void
syncout_summary(const struct sync *s)
{
	struct buf b = BUF_INIT;

	buf_printf(&b, "%lu item%s: %lu succeeded, %lu failed, %lu for later",
	    s->nitems, s->nitems == 1 ? "" : "s", s->nok, s->nfail, s->nlater);
	if (s->nuntried > 0)
		buf_printf(&b, ", %lu not sent (stopped)", s->nuntried);
	buf_printf(&b, "; %lu retr%s, %lu possible double spend%s (retried "
	    "after an unknown outcome); %lu rejected", s->nretry,
	    s->nretry == 1 ? "y" : "ies", s->nunknown,
	    s->nunknown == 1 ? "" : "s", s->nbad);
	qb_warn("%s", b.p);
	buf_free(&b);
}
