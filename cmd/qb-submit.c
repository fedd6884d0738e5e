/*
 * qb-submit: pack records in, one job record per batch created out.
 *
 * For each pack record (file, sha256, endpoint, provider, model): check
 * that the file still has the digest it was packed with, skip it when the
 * ledger holds a batch for that digest that ran or may still run, upload
 * it and create the batch, then append the job record to the ledger and
 * print it. Adds provider, batch_id, input_file_id, status, ended,
 * created_at, expires_at, counts and results; every other key of the pack
 * record is carried through. A printed or ledgered job record is custody:
 * stdout is flushed each time. With a ledger, a run holds LEDGER.submit.lock
 * throughout, and an intent line goes into the ledger before each create,
 * so that a batch whose job record was lost is found and adopted later
 * (ledger/submit.c, ledger/custody.c). With --sync it reads item records
 * instead and calls the synchronous endpoint for each, printing a result
 * record per item (sync/sync.c). This file holds the options.
 * SPDX-License-Identifier: ISC
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/num.h"
#include "ledger/submit.h"
#include "opt.h"
#include "provider/provops.h"
#include "sync/sync.h"

static const char usage[] =
    "[-hqVv] [--strict] [--base-url url] [--key-file file] [-l ledger]\n"
    "       [--lookback seconds] [-p provider] [--token-budget tokens]\n"
    "       [--wait-budget seconds] [file ...]\n"
    "       qb-submit --sync [-hqVv] [--strict] [--array n]\n"
    "       [--array-tokens n] [--base-url url] [--concurrency n]\n"
    "       [--deadline seconds] [--key-file file]\n"
    "       [--metrics file] [-p provider] [--rpm n] [--tpm n]\n"
    "       [--unknown-retries n] [file ...]";
static const char help[] =
    QB_HELP_BASE_URL
    QB_HELP_KEY_FILE
    "  -l, --ledger FILE      skip files FILE holds; append new jobs to it\n"
    "      --lookback S       adopt a batch made for the file in the last S\n"
    "                         seconds that no job holds (default 48h; 0: off)\n"
    "  -p, --provider NAME    submit to NAME (default: the record's provider,\n"
    "                         else openai)\n"
    QB_HELP_STRICT
    "      --token-budget N   hold a file whose \"tokens\" would take a\n"
    "                         model's unfinished batches past N (exit 75)\n"
    "      --wait-budget S    wait up to S seconds for room instead\n"
    "      --sync             read items, call the synchronous endpoint for\n"
    "                         each, print a result per item\n"
    "      --array N          --sync: embeddings inputs per request\n"
    "                         (default 1: one request per item)\n"
    "      --array-tokens N   --sync: estimated tokens per array request\n"
    "                         (default 300000)\n"
    "      --concurrency N    --sync: requests in flight per model (default 8)\n"
    "      --deadline S       --sync: start no try S seconds after an item\n"
    "                         is read\n"
    "      --metrics FILE     --sync: write Prometheus metrics to FILE\n"
    "      --rpm N, --tpm N   --sync: requests, estimated tokens per minute\n"
    "                         per model (default: no limit)\n"
    "      --unknown-retries N  --sync: retries after an unknown outcome\n"
    "                         in the run (default 2)\n"
    "  -h, -V, -v, -q         help, version, verbose, quiet\n";

enum { OPT_BUDGET = 256, OPT_WAIT, OPT_SYNC, OPT_CONC, OPT_DEADLINE,
	OPT_METRICS, OPT_RPM, OPT_TPM, OPT_UNKNOWN, OPT_ARRAY, OPT_ARRAYTOK,
	OPT_LOOKBACK };

struct opts {
	const char	*ledger, *prov;
	struct opt_provider po;		/* --base-url, --key-file, --strict */
	int		 sync;		/* --sync, and its options: */
	int		 nsyncopt;	/* how many were given */
	int		 nbatchopt;	/* --token-budget, --wait-budget,
					   --lookback given */
	struct sync_opts so;
	struct submit_opts su;
};

/* An option of --sync. */
static void
syncopt(struct opts *o, int ch, const char *arg)
{
	const char *errstr = NULL, *name = "--metrics";
	double d;

	o->nsyncopt++;
	switch (ch) {
	case OPT_ARRAY:
		name = "--array";
		o->so.array = (int)num_strtonum(arg, 1, 1000000, &errstr);
		break;
	case OPT_ARRAYTOK:
		name = "--array-tokens";
		o->so.array_tokens = num_strtonum(arg, 1, 1LL << 50, &errstr);
		break;
	case OPT_CONC:
		name = "--concurrency";
		o->so.concurrency = (int)num_strtonum(arg, 1, 10000, &errstr);
		break;
	case OPT_DEADLINE:
		name = "--deadline";
		o->so.deadline = num_seconds(arg, &errstr);
		break;
	case OPT_RPM:
	case OPT_TPM:
		name = ch == OPT_RPM ? "--rpm" : "--tpm";
		d = (double)num_strtonum(arg, 0, 1LL << 50, &errstr);
		if (ch == OPT_RPM)
			o->so.rpm = d;
		else
			o->so.tpm = d;
		break;
	case OPT_UNKNOWN:
		name = "--unknown-retries";
		o->so.unknown_retries = (int)num_strtonum(arg, 0, 1000000,
		    &errstr);
		break;
	default:
		o->so.metrics = arg;
	}
	if (errstr != NULL)
		qb_die(QB_EX_USAGE, "%s %s: %s", name, arg, errstr);
}

/* An option of the batch path: --token-budget, --wait-budget, --lookback. */
static void
batchopt(struct opts *o, int ch, const char *arg)
{
	const char *errstr, *name;

	o->nbatchopt++;
	switch (ch) {
	case OPT_BUDGET:
		name = "--token-budget";
		o->su.budget = num_strtonum(arg, 0, 1LL << 50, &errstr);
		break;
	case OPT_WAIT:
		name = "--wait-budget";
		o->su.wait = num_seconds(arg, &errstr);
		break;
	default:
		name = "--lookback";
		o->su.lookback = num_seconds(arg, &errstr);
	}
	if (errstr != NULL)
		qb_die(QB_EX_USAGE, "%s %s: %s", name, arg, errstr);
}

/* The defaults, then QB_CREATE_GRACE and QB_TOKEN_BUDGET. */
static void
defaults(struct opts *o)
{
	const char *errstr, *env;

	memset(o, 0, sizeof(*o));
	o->so.concurrency = 8;
	o->so.unknown_retries = 2;
	o->so.array = 1;
	o->so.array_tokens = 300000;
	o->su.lookback = 48 * 3600;
	o->su.grace = 600;
	if ((env = getenv("QB_CREATE_GRACE")) != NULL && *env != '\0') {
		o->su.grace = num_seconds(env, &errstr);
		if (errstr != NULL)
			qb_die(QB_EX_CONFIG, "QB_CREATE_GRACE \"%s\" is %s", env,
			    errstr);
	}
	if ((env = getenv("QB_TOKEN_BUDGET")) != NULL && *env != '\0') {
		o->su.budget = num_strtonum(env, 0, 1LL << 50, &errstr);
		if (errstr != NULL)
			qb_die(QB_EX_CONFIG, "QB_TOKEN_BUDGET \"%s\" is %s", env,
			    errstr);
	}
}

/* Read the options into o; returns the input files, NULL-terminated. */
static char **
options(struct opts *o, int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "array", required_argument, NULL, OPT_ARRAY },
		{ "array-tokens", required_argument, NULL, OPT_ARRAYTOK },
		{ "concurrency", required_argument, NULL, OPT_CONC },
		{ "deadline", required_argument, NULL, OPT_DEADLINE },
		{ "ledger", required_argument, NULL, 'l' },
		{ "lookback", required_argument, NULL, OPT_LOOKBACK },
		{ "metrics", required_argument, NULL, OPT_METRICS },
		{ "provider", required_argument, NULL, 'p' },
		{ "rpm", required_argument, NULL, OPT_RPM },
		{ "sync", no_argument, NULL, OPT_SYNC },
		{ "token-budget", required_argument, NULL, OPT_BUDGET },
		{ "tpm", required_argument, NULL, OPT_TPM },
		{ "unknown-retries", required_argument, NULL, OPT_UNKNOWN },
		{ "wait-budget", required_argument, NULL, OPT_WAIT },
		QB_PROVIDER_LONGOPTS,
		QB_STRICT_LONGOPT,
		QB_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	static char *stdin_only[] = { "-", NULL };
	int ch;

	while ((ch = getopt_long(argc, argv, "hl:p:qVv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			o->ledger = optarg;
			break;
		case 'p':
			if (provider_find(optarg) == NULL)
				qb_die(QB_EX_USAGE, "unknown provider \"%s\"",
				    optarg);
			o->prov = optarg;
			break;
		case QB_OPT_BASE_URL:
		case QB_OPT_KEY_FILE:
		case QB_OPT_STRICT:
			opt_provider(ch, optarg, &o->po);
			break;
		case OPT_BUDGET:
		case OPT_WAIT:
		case OPT_LOOKBACK:
			batchopt(o, ch, optarg);
			break;
		case OPT_SYNC:
			o->sync = 1;
			break;
		case OPT_CONC:
		case OPT_DEADLINE:
		case OPT_METRICS:
		case OPT_RPM:
		case OPT_TPM:
		case OPT_UNKNOWN:
		case OPT_ARRAY:
		case OPT_ARRAYTOK:
			syncopt(o, ch, optarg);
			break;
		default:
			opt_common(ch, usage, help);
		}
	}
	if (o->nsyncopt > 0 && !o->sync)
		qb_die(QB_EX_USAGE, "--array, --array-tokens, --concurrency, "
		    "--deadline, --metrics, --rpm, --tpm and --unknown-retries go with --sync");
	if (o->sync && (o->ledger != NULL || o->nbatchopt > 0))
		qb_die(QB_EX_USAGE, "-l, --lookback, --token-budget and "
		    "--wait-budget are for batches, not --sync");
	return optind < argc ? argv + optind : stdin_only;
}

/* --sync: one synchronous call per item. */
static int
synchronous(struct opts *o, char **files)
{
	int rc;

	o->so.prov = o->prov;
	o->so.base = o->po.base;
	o->so.keyfile = o->po.keyfile;
	o->so.strict = o->po.strict;
	if ((rc = sync_run(&o->so, files)) != QB_EX_IOERR)
		opt_close_stdout();	/* else already said */
	return rc;
}

/* The batch path: each file of pack records, then the summary. */
static int
batches(struct opts *o, char **files)
{
	struct submit r;
	int i, rc, worst = QB_EX_OK, fatal;

	o->su.base = o->po.base;
	o->su.keyfile = o->po.keyfile;
	o->su.prov = o->prov;
	o->su.strict = o->po.strict;
	if ((rc = submit_init(&r, &o->su, o->ledger)) != 0)
		return rc;
	for (i = 0; files[i] != NULL && !r.fatal; i++)
		if ((rc = submit_file(&r, files[i])) != 0)
			worst = rc;
	fatal = r.fatal;
	rc = submit_end(&r, worst);
	if (!fatal)
		opt_close_stdout();	/* else already said, or --strict */
	return rc;
}

int
main(int argc, char *argv[])
{
	struct opts o;
	char **files;
	int fl, rc;

	qb_setprog(argv[0]);
	defaults(&o);
	files = options(&o, argc, argv);
	/* A batch whose job record can go nowhere is money lost. */
	if ((fl = fcntl(STDOUT_FILENO, F_GETFL)) == -1 ||
	    (fl & O_ACCMODE) == O_RDONLY)
		qb_die(QB_EX_IOERR, "standard output is not open for writing: "
		    "job records would be lost");
	if ((rc = provider_check(provider_find(o.prov != NULL ? o.prov :
	    "openai"), o.po.base, o.po.keyfile, 0)) != 0)
		return rc;
	return o.sync ? synchronous(&o, files) : batches(&o, files);
}
