/*
 * qb-poll: job records in, updated job records out; result files on disk.
 *
 * For each job not yet ended, fetch the batch and update status, ended,
 * counts, errors and the *_at times. When a batch has ended, stream its
 * output and error files into DIR as BATCH.output.jsonl and
 * BATCH.errors.jsonl (temporary name, fsync, rename), list them in
 * "results" by absolute path and set "ended": a job is ended only once
 * its files are safe; one that cannot be had leaves it not ended, with an
 * "error". Every job read is printed, ended or not, with unknown keys
 * carried; with -i the ledger is rewritten in place, only jobs that ended
 * in this run are printed, and LEDGER.poll.lock is held throughout.
 * Intent lines of the ledger (ledger.h) are skipped.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/afile.h"
#include "base/exits.h"
#include "base/idmap.h"
#include "base/msg.h"
#include "base/num.h"
#include "base/qtime.h"
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
    "[-hqVvw] [--strict] [--base-url url] [-d dir] [--interval seconds]\n"
    "       [--key-file file] [-t seconds] [-i ledger | file ...]";
static const char help[] =
    QB_HELP_BASE_URL
    "  -d, --dir DIR          write result files into DIR (default .)\n"
    "  -i, --in-place FILE    update the ledger FILE; print only the jobs that\n"
    "                         ended in this run\n"
    "      --interval S       first pause between polls with -w (default 5)\n"
    QB_HELP_KEY_FILE
    QB_HELP_STRICT
    "  -t, --timeout S        start no request after S seconds (default 90000)\n"
    "  -w, --wait             poll until every job has ended\n"
    "  -h, -V, -v, -q         help, version, verbose, quiet\n";

#define INTERVAL_MAX	60.0	/* seconds between polls, at most */

enum { OPT_INTERVAL = 256 };

struct opts {
	const char	*ledger;
	struct opt_provider po;		/* --base-url, --key-file, --strict */
	char		*dir;		/* absolute (realpath) */
	double		 interval, timeout;
	int		 wait;
};

enum state { J_ENDED, J_PENDING, J_DONE };

struct job {
	struct jobrec	 r;		/* out: the updated record */
	enum state	 state;
	int		 endednow;	/* ended during this run */
	int		 due;		/* to print once the ledger has it */
};

struct poll {
	const struct opts *o;
	struct jobs	 js;		/* of struct job */
	size_t		 nended;
	struct provider_conns conns;
	double		 deadline;	/* CLOCK_MONOTONIC: no request after it */
	yajl_gen	 g;
	int		 fatal;		/* stop polling and exit with this */
	int		 temp, proto, ioerr, rejected;
	int		 changed;	/* some job has a new record to ledger */
	int		 tty;
};

/*
 * A job record that says ended and was not reaped, but lists no result
 * file although its counts say requests ran (an earlier qb recorded a
 * batch adopted after it ended that way), or lists one that is no longer
 * on disk (deleted, or moved away by hand): polled again, so that its
 * paid results are fetched again (job_may_end).
 */
static int
unfetched(yajl_val rec)
{
	yajl_val res = jtree_get(rec, "results"), c = jtree_get(rec, "counts"), f;
	long long done = 0, failed = 0;
	struct stat st;
	size_t i;

	if (jtree_get(rec, "reaped") != NULL)
		return 0;
	if (YAJL_IS_ARRAY(res) && res->u.array.len > 0) {
		for (i = 0; i < res->u.array.len; i++)
			if (YAJL_IS_STRING(f = res->u.array.values[i]) &&
			    (stat(f->u.string, &st) == -1 || !S_ISREG(st.st_mode)))
				return 1;
		return 0;
	}
	jtree_int(c, "completed", &done);
	jtree_int(c, "failed", &failed);
	return done + failed > 0;
}

/* Finish the record in P->g as the job's new text. */
static void
keep(struct poll *P, struct job *j)
{
	const unsigned char *p;
	size_t n;

	yajl_gen_get_buf(P->g, &p, &n);
	free(j->r.out);
	j->r.out = xstrndup((const char *)p, n);
	yajl_gen_clear(P->g);
	yajl_gen_reset(P->g, NULL);
	P->changed = 1;
}

/* The job unchanged but for an "error" member. */
static void
failed(struct poll *P, struct job *j, const char *msg, long status)
{
	struct job_set s;

	memset(&s, 0, sizeof(s));
	s.ended = -1;
	s.error = msg;
	s.error_status = status;
	job_emit(P->g, j->r.rec, &s);
	keep(P, j);
	P->rejected = 1;
	j->state = J_DONE;
}

/* Sort a provider failure into the run's exit status. */
static void
trouble(struct poll *P, int rc)
{
	if (rc == QB_EX_TEMPFAIL)
		P->temp = 1;
	else if (rc == QB_EX_PROTOCOL)
		P->proto = 1;
	else if (rc == QB_EX_IOERR)
		P->ioerr = 1;
	else if (rc == QB_EX_NOPERM || rc == QB_EX_CONFIG)
		P->fatal = rc;
	else
		P->rejected = 1;
}

/*
 * Download the result files of an ended batch, each tried even when
 * another failed, into paths[] (*n of them, owned by the caller).
 * Returns 0, or the first failure's exit status with the file and the
 * reason in why (whylen bytes).
 */
static int
fetch(struct poll *P, struct job *j, const struct provider *p, struct http *h,
    const struct provider_job *pj, const char *id, char **paths, int *n,
    char *why, size_t whylen)
{
	struct afile a;
	struct buf path = BUF_INIT;
	char err[sizeof(h->err) + 64];
	struct stat st;
	long status = 0;
	int i, e, rc = 0;

	*n = 0;
	for (i = 0; i < pj->nresult; i++) {
		buf_reset(&path);
		buf_printf(&path, "%s%s%s.%s.jsonl", P->o->dir,
		    strcmp(P->o->dir, "/") != 0 ? "/" : "", id,
		    pj->result[i].kind);
		if (afile_open(&a, path.p) == -1) {
			if (rc == 0)
				snprintf(why, whylen, "%s: %s", path.p,
				    strerror(errno));
			qb_warn("%s: %s", path.p, strerror(errno));
			rc = QB_EX_IOERR;
			break;
		}
		e = provider_ops(p)->fetch(h, pj->result[i].ref, a.fp);
		if (e != 0 && (h->status == 404 || h->status == 410) &&
		    stat(path.p, &st) == 0 && S_ISREG(st.st_mode)) {
			/*
			 * Gone at the provider, but an earlier run has it
			 * (files are only ever renamed into place whole).
			 */
			afile_abort(&a);
			qb_note(1, "%s: %s file gone at the provider; %s, "
			    "fetched before, is kept", id, pj->result[i].kind,
			    path.p);
			paths[(*n)++] = xstrdup(path.p);
			continue;
		}
		if (e != 0) {
			snprintf(err, sizeof(err), "%s file %s: %s",
			    pj->result[i].kind, pj->result[i].ref, h->err);
			qb_lwarn(j->r.src, j->r.lineno, "%s: %s", id, err);
			afile_abort(&a);
			if (rc == 0) {
				snprintf(why, whylen, "%s", err);
				rc = e;
				status = h->status;
			}
		} else if (afile_commit(&a, NULL) == -1) {
			if (rc == 0)
				snprintf(why, whylen, "%s: %s", path.p,
				    strerror(errno));
			qb_warn("%s: %s", path.p, strerror(errno));
			rc = QB_EX_IOERR;
		} else {
			qb_note(1, "%s: wrote %s", id, path.p);
			paths[(*n)++] = xstrdup(path.p);
		}
	}
	buf_free(&path);
	h->status = status;	/* the first failure's */
	return rc;
}

/*
 * How far a running batch is, for -v, into out: ", 120/500 requests
 * done" when it counts requests as it goes, else the time since it was
 * made against its window (", 2h13m of 24h"): Anthropic's counts stay
 * zero until the batch ends (qb-providers(7), ANTHROPIC "Status and
 * counts").
 */
static void
progress(const struct provider_job *pj, char *out, size_t n)
{
	long long t[2] = { -1, -1 }, now = time(NULL), el;
	int i;

	*out = '\0';
	if (pj->ended)
		return;
	if (pj->has_counts && pj->completed + pj->failed > 0) {
		snprintf(out, n, ", %lld/%lld requests done",
		    pj->completed + pj->failed, pj->total);
		return;
	}
	for (i = 0; i < pj->ntime; i++)
		if (strcmp(pj->time[i].key, "created_at") == 0)
			rfc3339_parse(pj->time[i].val, &t[0]);
		else if (strcmp(pj->time[i].key, "expires_at") == 0)
			rfc3339_parse(pj->time[i].val, &t[1]);
	if (t[0] < 0 || (el = now - t[0]) < 0)
		return;
	if (t[1] > t[0])
		snprintf(out, n, ", %lldh%02lldm of %lldh", el / 3600,
		    el / 60 % 60, (t[1] - t[0] + 1800) / 3600);
	else
		snprintf(out, n, ", %lldh%02lldm since made", el / 3600,
		    el / 60 % 60);
}

static void
poll_one(struct poll *P, struct job *j)
{
	const struct provider *p;
	const struct provider_ops *o;
	struct provider_job pj;
	struct job_set s;
	struct http *h;
	yajl_val batch;
	const char *id = jtree_str(j->r.rec, "batch_id"), *name;
	char err[256], why[768], *paths[JOB_RESULTS];
	int i, n = 0, rc;

	name = jtree_str(j->r.rec, "provider");
	if (name == NULL)
		name = "openai";
	if ((p = provider_find(name)) == NULL ||
	    (o = provider_ops(p)) == NULL || o->get == NULL) {
		qb_lwarn(j->r.src, j->r.lineno, "%s: cannot poll provider \"%s\"",
		    id, name);
		failed(P, j, "cannot poll this provider", 0);
		return;
	}
	if ((rc = provider_conn(&P->conns, p, &h)) != 0)
		exit(rc);
	h->deadline = P->deadline;
	if ((rc = o->get(h, id, &batch)) != 0) {
		qb_lwarn(j->r.src, j->r.lineno, "%s: %s", id, h->err);
		if (rc == QB_EX_UNAVAILABLE || rc == QB_EX_DATAERR)
			failed(P, j, h->err, h->status);	/* 404 and such */
		else
			trouble(P, rc);
		return;
	}
	if (o->job(batch, &pj, err, sizeof(err)) != 0) {
		qb_lwarn(j->r.src, j->r.lineno, "%s: %s", id, err);
		P->proto = 1;
		yajl_tree_free(batch);
		return;
	}
	memset(&s, 0, sizeof(s));
	s.pj = &pj;
	s.ended = 0;
	if (pj.ended &&
	    (rc = fetch(P, j, p, h, &pj, id, paths, &n, why, sizeof(why))) == 0) {
		s.ended = 1;
		s.results = (const char *const *)paths;
		s.nresults = n;
	} else if (pj.ended) {
		/*
		 * Its results are paid for: never end a job without them.
		 * Whatever the failure, a later run tries again. Those
		 * fetched are listed: should the rest be gone for good,
		 * qb-reap ends the job and they still count.
		 */
		if (n > 0) {
			s.results = (const char *const *)paths;
			s.nresults = n;
		}
		s.error = why;
		s.error_status = rc == QB_EX_IOERR ? 0 : h->status;
		if (rc == QB_EX_UNAVAILABLE || rc == QB_EX_DATAERR) {
			P->rejected = 1;
			j->state = J_DONE;	/* not again in this run */
		} else
			trouble(P, rc);
	}
	job_emit(P->g, j->r.rec, &s);
	keep(P, j);
	if (s.ended) {
		j->state = J_DONE;
		j->endednow = 1;
		P->nended++;
	}
	progress(&pj, err, sizeof(err));
	qb_note(1, "%s: %s%s%s", id, pj.status, s.ended &&
	    strcmp(pj.status, "ended") != 0 ? ", ended" : "", err);
	for (i = 0; i < n; i++)
		free(paths[i]);
	yajl_tree_free(batch);
}

/* Mark job j to be printed at the end of the round. */
static void
print(struct poll *P, struct job *j)
{
	if (P->o->ledger != NULL && !j->endednow)
		return;
	j->due = 1;
}

/*
 * The end of a round: the ledger first, then the output. With -i the jobs
 * that ended are rewritten as ended before any is printed, so that a run
 * killed in between prints nothing twice: custody of their results is in
 * the ledger and the result files (qb-reconcile -l reads them there). A
 * rewrite that fails prints nothing; the next run polls them again.
 */
static void
flush(struct poll *P, struct ledger *led)
{
	struct job *j;
	const char *p;
	size_t i, n;
	int rc;

	if (led != NULL && P->changed) {
		if ((rc = ledger_rewrite(led, jobs_replace, &P->js)) != 0) {
			if (!P->fatal)
				P->fatal = rc;
			return;
		}
		jobs_written(&P->js);
	}
	for (i = 0; i < P->js.n; i++) {
		j = jobs_at(&P->js, i);
		if (!j->due)
			continue;
		j->due = 0;
		p = j->r.out != NULL ? j->r.out : j->r.line;
		n = j->r.out != NULL ? strlen(j->r.out) : j->r.len;
		if (fwrite(p, 1, n, stdout) != n || putchar('\n') == EOF)
			qb_diesys(QB_EX_IOERR, "write error on standard output");
	}
	if (fflush(stdout) != 0)
		qb_diesys(QB_EX_IOERR, "write error on standard output");
}

/*
 * Poll until done; returns 1 if the deadline (-t) passed with jobs
 * pending or not polled.
 */
static int
run(struct poll *P, struct ledger *led)
{
	double iv = P->o->interval, left;
	size_t i, pending, late = 0;
	int round, stop = 0;

	for (round = 0;; round++) {
		pending = 0;
		P->changed = 0;
		for (i = 0; i < P->js.n; i++) {
			struct job *j = jobs_at(&P->js, i);

			if (j->state == J_ENDED && round == 0)
				print(P, j);
			if (j->state != J_PENDING)
				continue;
			/* -t is a deadline: no request starts after it. */
			if (!stop && qtime_mono() >= P->deadline)
				stop = 1;
			if (!P->fatal && !stop)
				poll_one(P, j);
			if (j->state != J_PENDING || !P->o->wait || P->fatal ||
			    stop) {
				if (j->state == J_PENDING) {
					j->state = J_DONE;
					late += stop;
				}
				print(P, j);
			} else
				pending++;
		}
		flush(P, led);
		if (P->tty)
			fprintf(stderr, "\r%s: %zu ended, %zu pending ", qb_prog(),
			    P->nended, pending);
		if (pending == 0 && late == 0)
			break;
		if (late > 0 || (left = P->deadline - qtime_mono()) <= 0) {
			for (i = 0; i < P->js.n; i++) {
				struct job *j = jobs_at(&P->js, i);

				if (j->state == J_PENDING) {
					j->state = J_DONE;
					print(P, j);
				}
			}
			flush(P, NULL);
			pending += late;
			qb_warn("%zu %s %s: the deadline (-t %g s) passed",
			    pending, pending == 1 ? "job" : "jobs",
			    P->o->wait ? "still running" : "not polled",
			    P->o->timeout);
			return 1;
		}
		qtime_sleep(iv < left ? iv : left);
		iv = iv * 1.5 > INTERVAL_MAX ? INTERVAL_MAX : iv * 1.5;
	}
	return 0;
}

/*
 * Read the options into o; returns the operands' count, their first in
 * *files. The result directory must exist: it is named by absolute path,
 * since jobs outlive the directory they were polled from.
 */
static int
options(struct opts *o, int argc, char *argv[], char ***files)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "in-place", required_argument, NULL, 'i' },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "timeout", required_argument, NULL, 't' },
		{ "wait", no_argument, NULL, 'w' },
		QB_PROVIDER_LONGOPTS,
		QB_STRICT_LONGOPT,
		QB_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *errstr, *dir = ".";
	int ch, rc;

	memset(o, 0, sizeof(*o));
	o->interval = 5;
	o->timeout = 86400 + 3600;
	while ((ch = getopt_long(argc, argv, "d:hi:qt:Vvw", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'd':
			dir = optarg;
			break;
		case 'i':
			o->ledger = optarg;
			break;
		case 't':
			o->timeout = num_seconds(optarg, &errstr);
			if (errstr != NULL)
				qb_die(QB_EX_USAGE, "--timeout %s: %s", optarg,
				    errstr);
			break;
		case 'w':
			o->wait = 1;
			break;
		case OPT_INTERVAL:
			o->interval = num_seconds(optarg, &errstr);
			if (errstr == NULL && o->interval <= 0)
				errstr = "too small";
			if (errstr != NULL)
				qb_die(QB_EX_USAGE, "--interval %s: %s", optarg,
				    errstr);
			break;
		case QB_OPT_BASE_URL:
		case QB_OPT_KEY_FILE:
		case QB_OPT_STRICT:
			opt_provider(ch, optarg, &o->po);
			break;
		default:
			opt_common(ch, usage, help);
		}
	}
	if (o->ledger != NULL && optind < argc)
		opt_usage(usage);
	if ((rc = afile_need_dir(dir)) != 0)
		exit(rc);
	if ((o->dir = realpath(dir, NULL)) == NULL)
		qb_diesys(QB_EX_NOINPUT, "%s", dir);
	*files = argv + optind;
	return argc - optind;
}

/*
 * Read the jobs: from the ledger led if not NULL, else from the files
 * (standard input when nfiles is 0). With a ledger, one run at a time,
 * lest an older poll's rewrite undo a newer one's; the rewrite merges
 * appends. Returns 0 or the status of a failure, reported.
 */
static int
load(struct poll *P, struct ledger *led, char **files, int nfiles)
{
	struct job *j;
	size_t i;
	int rc;

	jobs_init(&P->js, sizeof(struct job), P->o->po.strict);
	if ((led != NULL && (rc = ledger_init(led, P->o->ledger)) != 0) ||
	    (rc = jobs_load(&P->js, led, "poll", files, nfiles)) != 0)
		return rc;
	if (P->js.nbad > 0)
		P->rejected = 1;
	for (i = 0; i < P->js.n; i++) {
		j = jobs_at(&P->js, i);
		j->state = jtree_true(j->r.rec, "ended") &&
		    !unfetched(j->r.rec) ? J_ENDED : J_PENDING;
	}
	return 0;
}

/* The run's exit status (qb-poll(1) EXIT STATUS). */
static int
status(const struct poll *P, int timedout)
{
	if (P->fatal)
		return P->fatal;
	if (P->temp || timedout)
		return QB_EX_TEMPFAIL;
	if (P->proto)
		return QB_EX_PROTOCOL;
	if (P->ioerr)
		return QB_EX_IOERR;
	return P->rejected ? QB_EX_PARTIAL : QB_EX_OK;
}

int
main(int argc, char *argv[])
{
	struct ledger led, *lp;
	struct poll P;
	struct opts o;
	char **files;
	int nfiles, rc, timedout;

	qb_setprog(argv[0]);
	nfiles = options(&o, argc, argv, &files);
	lp = o.ledger != NULL ? &led : NULL;
	if ((rc = provider_check(provider_find("openai"), o.po.base,
	    o.po.keyfile, 0)) != 0)
		return rc;

	memset(&P, 0, sizeof(P));
	P.o = &o;
	P.deadline = qtime_mono() + o.timeout;
	P.conns.base = o.po.base;
	P.conns.keyfile = o.po.keyfile;
	P.g = jout_new();
	P.tty = isatty(2) && qb_verbose >= 0;
	if ((rc = load(&P, lp, files, nfiles)) != 0)
		exit(rc);

	timedout = run(&P, lp);
	if (P.tty)
		fputc('\n', stderr);
	/* Waiting outlasted any passing trouble if every job ended. */
	if (o.wait && !timedout)
		P.temp = P.proto = P.ioerr = 0;

	provider_conns_free(&P.conns);
	jobs_free(&P.js);
	yajl_gen_free(P.g);
	if (lp != NULL)
		ledger_free(lp);
	free(o.dir);
	opt_close_stdout();
	return status(&P, timedout);
}
