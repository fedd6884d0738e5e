/*
 * qb-reap: job records in; stale batches cancelled, dead jobs ended.
 *
 * For each job not ended: with --older-than, a batch made that long ago
 * is cancelled once ("cancel_requested_at" and the provider's cancelling
 * status word are added; the job stays open, and qb-poll fetches what
 * finished when the batch ends). A job whose batch the provider does not
 * know (404; only if another batch of that provider answered, or with
 * --reap-unknown: a wrong key or URL says 404 to all), or whose "error"
 * from qb-poll says a result file of a batch still there is gone (404,
 * 410), is reaped: "ended":true and "reaped":{"at","reason"}, so that
 * qb-reconcile gives its requests without a result a retry. Without -i
 * every job read is printed; with -i the ledger is rewritten in place,
 * only the jobs reaped are printed, and LEDGER.poll.lock, qb-poll's, is
 * held throughout. Intent lines of a ledger are skipped.
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/num.h"
#include "base/rfc3339.h"
#include "base/xmem.h"
#include "http/http.h"
#include "json/jout.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "ledger/job.h"
#include "ledger/jobs.h"
#include "ledger/ledger.h"
#include "opt.h"
#include "provider/provops.h"

static const char usage[] =
    "[-hqVv] [--dry-run] [--base-url url] [--key-file file]\n"
    "       [--older-than duration] [--reap-unknown] [-i ledger | file ...]";
static const char help[] =
    QB_HELP_BASE_URL
    "      --dry-run          only read: say what would be cancelled or reaped\n"
    "  -i, --in-place FILE    update the ledger FILE; print only the jobs\n"
    "                         reaped in this run\n"
    QB_HELP_KEY_FILE
    "      --older-than D     cancel the batches made D or more ago (90m, 26h)\n"
    "      --reap-unknown     reap batches the provider does not know even\n"
    "                         when none of its other batches answered\n"
    "  -h, -V, -v, -q         help, version, verbose, quiet\n";

enum { OPT_DRY = 256, OPT_OLDER, OPT_UNKNOWN };

struct opts {
	const char	*ledger;
	struct opt_provider po;		/* --base-url, --key-file */
	double		 older;		/* seconds; < 0: cancel nothing */
	int		 dry;
	int		 unknown;	/* --reap-unknown */
};

enum act { A_NONE, A_CANCEL, A_REAP, A_UNKNOWN };

struct job {
	struct jobrec	 r;		/* out: the changed record */
	enum act	 act;
	yajl_val	 ans;		/* the cancel's answer, which pj points into */
	struct provider_job pj;
	char		*reason;	/* why it was reaped; owned */
	const struct provider *p;	/* A_UNKNOWN: whose batch */
};

struct reap {
	const struct opts *o;
	struct jobs	 js;		/* of struct job */
	struct provider_conns conns;
	yajl_gen	 g;
	long long	 now;		/* unix seconds at the start */
	char		 at[32];	/* the same in RFC 3339 */
	int		 rc;		/* the exit status so far */
	const struct provider *seen[4];	/* providers a batch answered for */
	int		 nseen;
};

/*
 * Fold status rc into the run's, in qb-poll's order: one that stops the
 * run (77, 78) first, then 75, 76, 74, 1 (a permanent refusal, 69 or 65,
 * concerns one job: it counts as a rejected record).
 */
static int
rank(int rc)
{
	static const int order[] = { QB_EX_OK, QB_EX_PARTIAL, QB_EX_IOERR,
	    QB_EX_PROTOCOL, QB_EX_TEMPFAIL };
	int i;

	for (i = 0; i < 5 && order[i] != rc; i++)
		continue;
	return i;
}

static void
fail(struct reap *R, int rc)
{
	if (rc == QB_EX_UNAVAILABLE || rc == QB_EX_DATAERR)
		rc = QB_EX_PARTIAL;
	if (rank(rc) > rank(R->rc))
		R->rc = rc;
}

/*
 * rec with j's change applied: the cancel's answer plus
 * "cancel_requested_at", or "ended" plus "reaped". Returns the text
 * (owned by the caller).
 */
static char *
edit(struct reap *R, const struct job *j, yajl_val rec)
{
	struct job_set s;
	const unsigned char *p;
	size_t n;
	char *text;

	memset(&s, 0, sizeof(s));
	s.ended = -1;
	if (j->act == A_CANCEL) {
		s.pj = &j->pj;
		s.cancel_at = R->at;
	} else {
		s.ended = 1;
		s.reaped_at = R->at;
		s.reaped_why = j->reason;
	}
	job_emit(R->g, rec, &s);
	yajl_gen_get_buf(R->g, &p, &n);
	text = xstrndup((const char *)p, n);
	yajl_gen_clear(R->g);
	yajl_gen_reset(R->g, NULL);
	return text;
}

/* The job will never finish: reap it, or with --dry-run say so. */
static void
gone(struct reap *R, struct job *j, const char *why)
{
	const char *id = jtree_str(j->r.rec, "batch_id");

	if (R->o->dry) {
		qb_lwarn(j->r.src, j->r.lineno, "%s: would reap: %s", id, why);
		return;
	}
	j->act = A_REAP;
	if (j->reason != why) {
		free(j->reason);
		j->reason = xstrdup(why);
	}
	qb_note(1, "%s: reaped: %s", id, why);
}

/* Whether job j is due for a cancel (--older-than). */
static int
stale(struct reap *R, struct job *j)
{
	const char *c = jtree_str(j->r.rec, "created_at");
	long long t;

	if (R->o->older < 0 || jtree_get(j->r.rec, "cancel_requested_at") != NULL)
		return 0;
	if (c == NULL || rfc3339_parse(c, &t) != 0) {
		qb_lwarn(j->r.src, j->r.lineno, "%s: no RFC 3339 \"created_at\": "
		    "not cancelled", jtree_str(j->r.rec, "batch_id"));
		fail(R, QB_EX_PARTIAL);
		return 0;
	}
	return (double)(R->now - t) >= R->o->older;
}

/* Note that p's key and base URL see this account's batches. */
static void
saw(struct reap *R, const struct provider *p)
{
	int i;

	for (i = 0; i < R->nseen && R->seen[i] != p; i++)
		continue;
	if (i == R->nseen && i < (int)(sizeof(R->seen) / sizeof(R->seen[0])))
		R->seen[R->nseen++] = p;
}

/* The batch answered 404: reaped later, if some other batch was seen. */
static void
unknown(struct job *j, const struct provider *p, const char *why)
{
	j->act = A_UNKNOWN;
	j->p = p;
	free(j->reason);
	j->reason = xstrdup(why);
}

/*
 * A cancel refused (409, 400): the batch has most likely ended, which is
 * no failure (qb-poll fetches its results), but ask to be sure.
 */
static void
refused(struct reap *R, struct job *j, const struct provider *p,
    struct http *h)
{
	const struct provider_ops *o = provider_ops(p);
	const char *id = jtree_str(j->r.rec, "batch_id");
	char why[sizeof(h->err)], err[256];
	struct provider_job pj;
	yajl_val b = NULL;
	int rc;

	memcpy(why, h->err, sizeof(why));
	if ((rc = o->get(h, id, &b)) == 0 &&
	    o->job(b, &pj, err, sizeof(err)) == 0 && pj.ended) {
		saw(R, p);
		qb_note(1, "%s: not cancelled: it has ended (%s)", id, pj.status);
	} else if (rc != 0 && h->status == 404)
		unknown(j, p, h->err);
	else {
		qb_lwarn(j->r.src, j->r.lineno, "%s: cancel refused: %s", id, why);
		fail(R, QB_EX_PARTIAL);
	}
	yajl_tree_free(b);
}

/*
 * qb-poll had a 404 or 410 for this job. That may pass (a batch or a
 * file just made, a replica behind): its results are paid for, so the
 * job is reaped only if its batch has ended and a result file answers
 * 404 or 410 to this run too. Returns 1 with the status in *st if so.
 */
static int
confirm_gone(struct job *j, const struct provider *p, struct http *h,
    long long *st)
{
	const struct provider_ops *o = provider_ops(p);
	const char *id = jtree_str(j->r.rec, "batch_id");
	FILE *null;
	int i, rc = 0;

	if (!j->pj.ended) {
		qb_note(1, "%s: %s, not ended: the 404 qb-poll had has passed",
		    id, j->pj.status);
		return 0;
	}
	if (o->fetch == NULL || (null = fopen("/dev/null", "w")) == NULL)
		return 0;
	for (i = 0; i < j->pj.nresult && rc == 0; i++)
		if (o->fetch(h, j->pj.result[i].ref, null) != 0) {
			if (h->status == 404 || h->status == 410) {
				*st = h->status;
				rc = 1;
			} else
				break;	/* for now: a later run looks again */
		}
	fclose(null);
	if (rc == 0)
		qb_note(1, "%s: its result files answer now; qb-poll fetches "
		    "them", id);
	return rc;
}

static void
reap_one(struct reap *R, struct job *j)
{
	const struct provider *p;
	const struct provider_ops *o;
	struct http *h;
	yajl_val e = jtree_get(j->r.rec, "error"), b = NULL;
	const char *id = jtree_str(j->r.rec, "batch_id");
	const char *name = jtree_str(j->r.rec, "provider"), *m;
	char err[256], why[320];
	long long st;
	int lost, cancel, post, rc;

	/* qb-poll could not have a result file: 404 or 410 is for good. */
	lost = jtree_int(e, "http_status", &st) == 0 && (st == 404 || st == 410);
	if (name == NULL)
		name = "openai";
	if ((p = provider_find(name)) == NULL ||
	    (o = provider_ops(p)) == NULL || o->get == NULL ||
	    o->cancel == NULL) {
		qb_lwarn(j->r.src, j->r.lineno, "%s: cannot reap provider \"%s\"",
		    id, name);
		fail(R, QB_EX_PARTIAL);
		return;
	}
	cancel = !lost && stale(R, j);
	post = cancel && !R->o->dry;	/* --dry-run: GETs only */
	if ((rc = provider_conn(&R->conns, p, &h)) != 0)
		exit(rc);
	rc = post ? o->cancel(h, id, &b) : o->get(h, id, &b);
	if (rc == 0 && o->job(b, &j->pj, err, sizeof(err)) != 0) {
		qb_lwarn(j->r.src, j->r.lineno, "%s: %s", id, err);
		fail(R, QB_EX_PROTOCOL);
	} else if (rc == 0) {
		saw(R, p);
		if (post) {
			j->act = A_CANCEL;
			j->ans = b;	/* j->pj points into it */
			qb_note(1, "%s: cancel requested: %s", id, j->pj.status);
			return;
		}
		if (lost && confirm_gone(j, p, h, &st)) {
			/* The batch is there, its file is not: truly gone. */
			m = jtree_str(e, "message");
			snprintf(why, sizeof(why), "a result file is gone (HTTP "
			    "%lld): %.250s", st, m != NULL ? m : "no message");
			gone(R, j, why);
		} else if (cancel && !j->pj.ended)
			qb_lwarn(j->r.src, j->r.lineno, "%s: would cancel (%s, made "
			    "%s)", id, j->pj.status, jtree_str(j->r.rec,
			    "created_at"));
		else
			qb_note(1, "%s: %s", id, j->pj.status);
	} else if (h->status == 404)
		unknown(j, p, h->err);
	else if (post && (h->status == 409 || h->status == 400))
		refused(R, j, p, h);
	else {
		qb_lwarn(j->r.src, j->r.lineno, "%s: %s", id, h->err);
		fail(R, rc);
	}
	yajl_tree_free(b);
}

/*
 * A batch the provider does not know is reaped only when some other
 * batch of that provider answered in this run (or --reap-unknown): a
 * wrong key, project or base URL also answers 404 to every batch, and
 * reaping them all would pay for every request again.
 */
static void
unknowns(struct reap *R)
{
	struct job *j;
	size_t i;
	int k;

	for (i = 0; i < R->js.n; i++) {
		if ((j = jobs_at(&R->js, i))->act != A_UNKNOWN)
			continue;
		for (k = 0; k < R->nseen && R->seen[k] != j->p; k++)
			continue;
		j->act = A_NONE;
		if (k < R->nseen || R->o->unknown) {
			gone(R, j, j->reason);
			continue;
		}
		qb_lwarn(j->r.src, j->r.lineno, "%s: %s; not reaped: no other %s "
		    "batch answered in this run, so the key, project or base "
		    "URL may be wrong (--reap-unknown reaps it all the same)",
		    jtree_str(j->r.rec, "batch_id"), j->reason, j->p->name);
		fail(R, QB_EX_PARTIAL);
	}
}

static void
put(const char *p, size_t n)
{
	if (fwrite(p, 1, n, stdout) != n || putchar('\n') == EOF)
		qb_diesys(QB_EX_IOERR, "write error on standard output");
}

/* Read the options into o; returns the operands' count, their first in *files. */
static int
options(struct opts *o, int argc, char *argv[], char ***files)
{
	static const struct option longopts[] = {
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "in-place", required_argument, NULL, 'i' },
		{ "older-than", required_argument, NULL, OPT_OLDER },
		{ "reap-unknown", no_argument, NULL, OPT_UNKNOWN },
		QB_PROVIDER_LONGOPTS,
		QB_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *errstr;
	int ch;

	memset(o, 0, sizeof(*o));
	o->older = -1;
	while ((ch = getopt_long(argc, argv, "hi:qVv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'i':
			o->ledger = optarg;
			break;
		case OPT_DRY:
			o->dry = 1;
			break;
		case OPT_UNKNOWN:
			o->unknown = 1;
			break;
		case OPT_OLDER:
			o->older = num_seconds(optarg, &errstr);
			if (errstr != NULL)
				qb_die(QB_EX_USAGE, "--older-than %s: %s",
				    optarg, errstr);
			break;
		case QB_OPT_BASE_URL:
		case QB_OPT_KEY_FILE:
			opt_provider(ch, optarg, &o->po);
			break;
		default:
			opt_common(ch, usage, help);
		}
	}
	if (o->ledger != NULL && optind < argc)
		opt_usage(usage);
	*files = argv + optind;
	return argc - optind;
}

/*
 * Each job not ended is asked about once (no more requests once a status
 * that stops the run, 77 or 78, came), then the batches the provider did
 * not know are weighed together; each job with an action gets its new
 * record. Returns 1 if some job changed.
 */
static int
reap_all(struct reap *R)
{
	struct job *j;
	size_t i;
	int changed = 0;

	for (i = 0; i < R->js.n; i++) {
		j = jobs_at(&R->js, i);
		if (!jtree_true(j->r.rec, "ended") && rank(R->rc) < 5)
			reap_one(R, j);
	}
	unknowns(R);
	for (i = 0; i < R->js.n; i++) {
		j = jobs_at(&R->js, i);
		if (j->act != A_NONE) {
			j->r.out = edit(R, j, j->r.rec);
			changed = 1;
		}
	}
	return changed;
}

/*
 * Without a ledger, every job read is printed. With one, the changed
 * lines are rewritten in it: the run lock is qb-poll's too, so no line
 * changed since it was read, and qb-submit only appends. A reaped job is
 * printed only once the ledger says so.
 */
static void
write_out(struct reap *R, struct ledger *led, int changed)
{
	struct job *j;
	size_t i;
	int rc;

	for (i = 0; led == NULL && i < R->js.n; i++) {
		j = jobs_at(&R->js, i);
		put(j->r.out != NULL ? j->r.out : j->r.line,
		    j->r.out != NULL ? strlen(j->r.out) : j->r.len);
	}
	if (led == NULL || !changed)
		return;
	if ((rc = ledger_rewrite(led, jobs_replace, &R->js)) != 0) {
		if (rank(R->rc) < 5)
			R->rc = rc;
		return;
	}
	for (i = 0; i < R->js.n; i++) {
		j = jobs_at(&R->js, i);
		if (j->act == A_REAP)
			put(j->r.out, strlen(j->r.out));
	}
}

static void
reap_free(struct reap *R)
{
	struct job *j;
	size_t i;

	provider_conns_free(&R->conns);
	for (i = 0; i < R->js.n; i++) {
		j = jobs_at(&R->js, i);
		free(j->reason);
		yajl_tree_free(j->ans);
	}
	jobs_free(&R->js);
	yajl_gen_free(R->g);
}

int
main(int argc, char *argv[])
{
	struct ledger led, *lp;
	struct reap R;
	struct opts o;
	char **files;
	int nfiles, rc;

	qb_setprog(argv[0]);
	nfiles = options(&o, argc, argv, &files);
	lp = o.ledger != NULL ? &led : NULL;
	if ((rc = provider_check(provider_find("openai"), o.po.base,
	    o.po.keyfile, 0)) != 0)
		return rc;

	memset(&R, 0, sizeof(R));
	R.o = &o;
	R.conns.base = o.po.base;
	R.conns.keyfile = o.po.keyfile;
	R.g = jout_new();
	R.now = (long long)time(NULL);
	provider_time(R.now, R.at, sizeof(R.at));
	jobs_init(&R.js, sizeof(struct job), 0);
	/* One run at a time (qb-poll's lock; a dry run only reads). */
	if ((lp != NULL && (rc = ledger_init(lp, o.ledger)) != 0) ||
	    (rc = jobs_load(&R.js, lp, o.dry ? NULL : "reap", files,
	    nfiles)) != 0)
		exit(rc);
	if (R.js.nbad > 0)
		fail(&R, QB_EX_PARTIAL);

	write_out(&R, lp, reap_all(&R));

	reap_free(&R);
	if (lp != NULL)
		ledger_free(lp);
	opt_close_stdout();
	return R.rc;
}
