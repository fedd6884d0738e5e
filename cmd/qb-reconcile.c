/*
 * qb-reconcile: join results to their requests by custom_id and write one
 * outcome record per request: done, retry (a valid item again) or dead.
 *
 * Reads request files (-r): OpenAI batch lines, Anthropic lines or qb
 * items; and from the operands job records ("file", "results", "status",
 * "ended", "errors" and their "line") and result lines of any provider
 * (result.h), each line scanned once. The join and the outcomes it
 * writes are recon.h's; this file holds the options, which record a line
 * is, the outcome file of each job (-d) and the summary.
 * SPDX-License-Identifier: ISC
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/afile.h"
#include "base/buf.h"
#include "base/exits.h"
#include "base/msg.h"
#include "base/xmem.h"
#include "json/jscan.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "ledger/jobs.h"
#include "ledger/ledger.h"
#include "opt.h"
#include "record/jobend.h"
#include "record/price.h"
#include "record/recon.h"
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
	char		**files;	/* the operands */
	int		  nfile;
};

/* A run: the join of all the input, and what -d did with the jobs. */
struct run {
	struct opts	*o;
	struct recon	 rc;
	unsigned long	 njobsdone, njobsskip, njobsopen;	/* -d */
	int		 noinput;	/* an operand could not be opened */
};

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
 * -d: job v (batch bid, read at r) reconciled alone, in a join of its
 * own, into path (temporary name, fsync, rename), which is then copied to
 * standard output. A job whose requests are left pending (its batch file
 * or a results file unreadable or damaged) gets no file, and a later run
 * tries again. Returns 0, or a status to stop with, reported.
 */
static int
job_file(struct run *R, const struct jsonl_reader *r, yajl_val v,
    const char *path, const char *bid)
{
	struct recon jr;
	struct afile a;
	int st;

	if ((st = recon_init(&jr, R->o->req, R->o->nreq, R->rc.prices,
	    R->o->strict)) != 0) {
		recon_free(&jr);
		return st;
	}
	if (afile_open(&a, path) == -1)
		qb_diesys(QB_EX_IOERR, "%s", path);
	jr.out = a.fp;
	if ((st = recon_job(&jr, r, v)) != 0 || (st = recon_finish(&jr)) != 0) {
		afile_abort(&a);
		recon_free(&jr);
		return st;
	}
	recon_add(&R->rc, &jr);
	if (jr.unread || jr.npending > 0 || jr.ioerr) {
		afile_abort(&a);
		qb_warn("job %s: not reconciled%s; a later run tries again", bid,
		    jr.ioerr ? ": write error" : "");
		R->njobsopen++;
	} else if (afile_commit(&a, NULL) == -1) {
		qb_warnsys("%s", path);
		R->rc.ioerr = 1;
		R->njobsopen++;
	} else {
		qb_note(1, "job %s: outcomes in %s", bid, path);
		R->njobsdone++;
		copy_out(path);
	}
	recon_free(&jr);
	return 0;
}

/*
 * -d: the job record v, from line lineno of name, into
 * DIR/BATCH.outcomes.jsonl (job_file). That file is custody: a job that
 * has one is skipped, so a run killed at any point and run again writes
 * each job's outcomes once; a job not ended is left for a later run.
 * Returns 0, or a status to stop with, reported.
 */
static int
job_unit(struct run *R, const char *name, unsigned long lineno, yajl_val v)
{
	struct jsonl_reader r;
	struct buf path = BUF_INIT;
	struct stat st;
	yajl_val ended;
	const char *bid = jtree_str(v, "batch_id");
	int isended, rc = 0;

	if (bid == NULL || *bid == '\0' || *bid == '.' ||
	    strchr(bid, '/') != NULL) {
		qb_lwarn(name, lineno, "job record: \"batch_id\" is not a usable "
		    "file name");
		return recon_reject(&R->rc);
	}
	ended = jtree_get(v, "ended");
	isended = YAJL_IS_TRUE(ended) || (!YAJL_IS_FALSE(ended) &&
	    jobend_final(jtree_str(v, "status")));
	buf_printf(&path, "%s/%s.outcomes.jsonl", R->o->dir, bid);
	if (isended && stat(path.p, &st) == 0) {
		qb_note(1, "job %s: reconciled before (%s)", bid, path.p);
		R->njobsskip++;
	} else if (!isended)
		R->njobsopen++;
	else {
		/* Where its messages say the job record is. */
		memset(&r, 0, sizeof(r));
		r.name = (char *)name;
		r.lineno = lineno;
		rc = job_file(R, &r, v, path.p, bid);
	}
	buf_free(&path);
	return rc;
}

/*
 * A job record's line, scanned already (R->rc.rp.line): the members the
 * join reads, as a tree from that scan; then the job.
 */
static int
take_job(struct run *R, const struct jsonl_reader *r, const char *line,
    size_t len)
{
	char err[256];
	yajl_val v;
	int st;

	if ((v = jscan_tree(&R->rc.rp.line, line, len, recon_jobkeys, err,
	    sizeof(err))) == NULL) {
		qb_lwarn(r->name, r->lineno, "job record: %s", err);
		return recon_reject(&R->rc);
	}
	if (R->o->dir != NULL)
		st = job_unit(R, r->name, r->lineno, v);
	else
		st = recon_job(&R->rc, r, v);
	yajl_tree_free(v);
	return st;
}

/* One line of an operand: a result or a job record. Returns 0, or a
 * status to stop with, reported. */
static int
take_line(struct run *R, struct jsonl_reader *r, const char *line, size_t len)
{
	struct recon *rc = &R->rc;
	const struct jscan *s = &rc->rp.line;
	struct result res;
	char err[256];
	int rv;

	if ((rv = result_parse(&rc->rp, line, len, &res, err, sizeof(err))) == 0)
		return recon_result(rc, r, &res, line, len);
	if (rv == 1 && jscan_sval(s, jscan_find(s, -1, "batch_id")) != NULL &&
	    jscan_find(s, -1, "id") < 0)
		return take_job(R, r, line, len);
	/* A ledger's intent line (qb-submit) names no batch: nothing to join. */
	if (rv == 1 && ledger_is_intent_scan(s)) {
		qb_note(1, "%s:%lu: intent line skipped", r->name, r->lineno);
		return 0;
	}
	if (rv == 1 && (jscan_find(s, -1, "body") >= 0 ||
	    jscan_find(s, -1, "params") >= 0))
		snprintf(err, sizeof(err), "a request, not a result (requests "
		    "go with -r)");
	else if (rv == 1)
		snprintf(err, sizeof(err), "neither a result nor a job record");
	qb_lwarn(r->name, r->lineno, "%s", err);
	return recon_reject(rc);
}

/* -l: every job of the ledger, read under a shared lock, to job_unit. */
static int
take_ledger(struct run *R)
{
	struct ledger led;
	struct jobs js;
	struct jobrec *j;
	size_t i;
	int st = 0;

	jobs_init(&js, sizeof(struct jobrec), R->o->strict);
	if ((st = ledger_init(&led, R->o->ledger)) != 0)
		return st;
	if ((st = jobs_load(&js, &led, NULL, NULL, 0)) != 0) {
		jobs_free(&js);
		ledger_free(&led);
		return st;
	}
	R->rc.nbad += js.nbad;
	for (i = 0; st == 0 && i < js.n; i++) {
		j = jobs_at(&js, i);
		st = job_unit(R, j->src, j->lineno, j->rec);
	}
	jobs_free(&js);
	ledger_free(&led);
	return st;
}

/* The lines of operand path, each to take_line. Returns 0, or a status
 * to stop with, reported. */
static int
take_file(struct run *R, const char *path)
{
	struct jsonl_reader r;
	struct jsonl_rec rec;
	int ch, st = 0;

	if (jsonl_open(&r, path) == -1) {
		qb_warnsys("%s", path);
		R->noinput = 1;
		return 0;
	}
	while (st == 0 && (ch = jsonl_read(&r, &rec)) != JSONL_EOF) {
		if (ch == JSONL_IOERR) {
			R->rc.ioerr = 1;
			break;
		}
		if (ch == JSONL_BAD)
			st = recon_reject(&R->rc);
		else
			st = take_line(R, &r, rec.line, rec.len);
	}
	jsonl_close(&r);
	return st;
}

static void
summary(const struct run *R)
{
	const struct recon *rc = &R->rc;
	char c[64] = "", un[96] = "", dd[160] = "", sup[64] = "";
	unsigned long nreq;
	size_t n;

	if (rc->nunclaimed > 0 && R->o->dir == NULL)
		snprintf(un, sizeof(un), "; %lu in no job read, left without "
		    "outcome", rc->nunclaimed);
	if (rc->prices->n > 0) {
		n = (size_t)snprintf(c, sizeof(c), "; cost $%.8f", rc->cost);
		while (n > 0 && c[n - 1] == '0' && c[n - 3] != '.')
			c[--n] = '\0';
	}
	if (rc->nsuper > 0)
		snprintf(sup, sizeof(sup), ", %lu retry stood over", rc->nsuper);
	if (R->o->dir != NULL)
		snprintf(dd, sizeof(dd), "; jobs: %lu reconciled into %s, %lu "
		    "there already, %lu left for a later run", R->njobsdone,
		    R->o->dir, R->njobsskip, R->njobsopen);
	nreq = R->o->dir != NULL ? rc->nreq + (unsigned long)rc->self.n :
	    (unsigned long)(rc->ri.ids.n + rc->self.n);
	qb_warn("%lu request%s: %lu done, %lu retry, %lu dead, %lu pending; "
	    "%lu unknown, %lu duplicate%s; tokens in %llu out %llu%s%s%s",
	    nreq, nreq == 1 ? "" : "s",
	    rc->nout[OUTCOME_DONE], rc->nout[OUTCOME_RETRY],
	    rc->nout[OUTCOME_DEAD], rc->npending, rc->nunknown, rc->ndup, sup,
	    rc->tin, rc->tout, c, un, dd);
}

/* The exit status of a run that read all its input. */
static int
status(const struct run *R)
{
	const struct recon *rc = &R->rc;

	if (rc->ioerr)
		return QB_EX_IOERR;
	if (rc->naccount > 0)
		return QB_EX_UNAVAILABLE;	/* stop the pipeline: the account refuses */
	if (R->noinput)
		return QB_EX_NOINPUT;
	if (rc->nbad > 0 || rc->ri.nbad > 0 || rc->unread ||
	    rc->nout[OUTCOME_RETRY] > 0 || rc->nout[OUTCOME_DEAD] > 0)
		return QB_EX_PARTIAL;
	return QB_EX_OK;
}

/* The options into *o, checked; returns 0 or the status to exit with. */
static int
options(struct opts *o, int argc, char *argv[])
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
	int ch, k, nstdin = 0;

	memset(o, 0, sizeof(*o));
	while ((ch = getopt_long(argc, argv, "d:hl:qr:uVv", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'd':
			o->dir = optarg;
			break;
		case 'l':
			o->ledger = optarg;
			break;
		case 'P':
			o->prices = optarg;
			break;
		case 'r':
			o->req = xreallocarray(o->req, (size_t)o->nreq + 1,
			    sizeof(*o->req));
			o->req[o->nreq++] = optarg;
			nstdin += strcmp(optarg, "-") == 0;
			break;
		case 'S':
			o->strict = 1;
			break;
		case 'u':
			o->unbuffered = 1;
			break;
		default:
			opt_common(ch, usage, help);
		}
	}
	if (o->ledger != NULL && o->dir == NULL)
		qb_die(QB_EX_USAGE, "-l needs -d: the outcome files say which "
		    "jobs were reconciled");
	if (o->dir != NULL && nstdin > 0)
		qb_die(QB_EX_USAGE, "-d reads the -r files again for each job: "
		    "name files, not standard input");
	if (o->dir != NULL && (ch = afile_need_dir(o->dir)) != 0)
		return ch;
	/* With -l and no operands, the ledger is all the input. */
	o->files = argc > optind ? argv + optind : stdin_only;
	o->nfile = argc > optind ? argc - optind : o->ledger != NULL ? 0 : 1;
	for (k = 0; k < o->nfile; k++) {
		if (strcmp(o->files[k], "-") == 0)
			nstdin++;
		else if (access(o->files[k], R_OK) == -1)
			qb_diesys(QB_EX_NOINPUT, "%s", o->files[k]);
	}
	if (nstdin > 1)
		qb_die(QB_EX_USAGE, "standard input can be read only once "
		    "(name files for the results when -r - is given)");
	return 0;
}

int
main(int argc, char *argv[])
{
	struct prices prices = PRICES_INIT;
	struct opts o;
	struct run R;
	struct rlimit rl;
	unsigned long npbad = 0;
	int k, st;

	qb_setprog(argv[0]);
	if ((st = options(&o, argc, argv)) != 0)
		return st;
	/* One descriptor per request file stays open until the end. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	memset(&R, 0, sizeof(R));
	R.o = &o;
	if (o.prices != NULL)
		st = price_load(&prices, o.prices, o.strict, &npbad);
	if (st == 0 && (st = recon_init(&R.rc, o.req, o.nreq, &prices,
	    o.strict)) == 0) {
		R.rc.unbuffered = o.unbuffered;
		R.rc.nbad += npbad;
	}
	if (st == 0 && o.ledger != NULL)
		st = take_ledger(&R);
	for (k = 0; st == 0 && k < o.nfile; k++)
		st = take_file(&R, o.files[k]);
	if (st == 0)
		st = recon_finish(&R.rc);
	if (st == 0) {
		summary(&R);
		opt_close_stdout();
		st = status(&R);
	} else
		fflush(stdout);	/* what was written before the stop stands */
	if (R.rc.g != NULL)	/* recon_init ran */
		recon_free(&R.rc);
	price_free(&prices);
	free(o.req);
	return st;
}
