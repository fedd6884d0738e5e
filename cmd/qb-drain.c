/*
 * qb-drain: take work off a queue in windows and hand it on as item
 * records; put item records on a queue (--enqueue); settle each item on
 * its queue once its outcome is known (--settle).
 *
 * A window closes when it holds -n messages or -t seconds have passed.
 * Each message becomes an item: the body's members, with "id" (the
 * body's, else the message id), "queue", "receipt" and "receives" added.
 * Leases cover the window plus --visibility seconds, and are extended
 * before the items are handed on when they would not. --commit passes
 * custody to the output file: written, fsynced, then the messages go.
 * --settle reads outcome records: done and dead are deleted (dead ones
 * first written to the dead letter), retry is released after a backoff
 * that doubles with each receive (common/settle.c).
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <getopt.h>
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
#include "base/xmem.h"
#include "json/jout.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "opt.h"
#include "queue/queue.h"
#include "queue/settle.h"
#include "queue/sqs.h"

static const char usage[] =
    "[-chqVv] [--dead-letter file] [--dead-letter-queue queue]\n"
    "       [--max-receives n] [--receivers n] [--visibility seconds]\n"
    "       [--wait seconds] [-n count] [-o file] [-Q queue] [-t seconds]\n"
    "       qb-drain --enqueue [-hqVv] [--strict] [-Q queue] [file ...]\n"
    "       qb-drain --settle [-hqVv] [--strict] [--dead-letter file]\n"
    "       [--dead-letter-queue queue] [--max-receives n]\n"
    "       [--retry-delay seconds] [-o file] [-Q queue] [file ...]";
static const char help[] =
    "  -c, --commit           custody by file: write and fsync the items, then\n"
    "                         delete the messages (not with a pipe on stdout)\n"
    "      --dead-letter FILE append dead items to FILE\n"
    "      --dead-letter-queue Q  send dead items to queue Q\n"
    "      --enqueue          put the item records read on the queue\n"
    "      --max-receives N   dead-letter items received more than N times\n"
    "  -n, --count N          close the window at N messages (default 100)\n"
    "  -o, --output FILE      write to FILE (atomically) instead of stdout\n"
    "  -Q, --queue Q          dir:PATH, -, sqs://REGION/ACCOUNT/NAME or an SQS\n"
    "                         queue URL (default QB_QUEUE)\n"
    "      --receivers N      SQS receive calls in flight (default 4, <= 16)\n"
    "      --retry-delay S    first backoff of a retry outcome (default 30)\n"
    "      --settle           settle the outcome records read\n"
    "      --strict           stop at the first bad line (exit 65)\n"
    "  -t, --timeout S        close the window after S seconds (default 10)\n"
    "      --visibility S     seconds the items stay leased after the window\n"
    "                         closes, for the call and the settle (default 300)\n"
    "      --wait S           long-poll seconds per SQS receive (default 5, <= 20)\n"
    "  -h, -V, -v, -q         help, version, verbose, quiet\n";

enum { OPT_DL = 256, OPT_DLQ, OPT_ENQ, OPT_MAXR, OPT_RDELAY, OPT_RECV, OPT_SETTLE,
    OPT_STRICT, OPT_VIS, OPT_WAIT };

struct opts {
	const char	*queue, *out, *dl, *dlq;
	long		 count, maxr, receivers;
	double		 timeout, vis, wait, rdelay;
	int		 commit, enqueue, settle, strict;
};

struct run {
	const struct opts *o;
	struct queue	*q;
	struct deadletter dead;
	FILE		*out;
	const char	*outname;	/* for messages: the -o file or "standard output" */
	struct afile	 af;
	int		 atomic;
	yajl_gen	 g;
	int		 rc;		/* worst non-fatal status so far */
};

static void
put(struct run *R, FILE *fp)
{
	if (jout_line(R->g, fp) == -1)
		qb_diesys(QB_EX_IOERR, "%s: write error", R->outname);
}

/* The item record for message m into R->g. */
static void
item(struct run *R, const struct qmsg *m, yajl_val v)
{
	static const char *const skip[] = { "id", "queue", "receipt",
	    "receives", NULL };
	const char *id = jtree_str(v, "id");

	jout_open(R->g);
	jout_kstr(R->g, "id", id != NULL ? id : m->id);
	if (YAJL_IS_OBJECT(v))
		jout_members(R->g, v, skip);
	else {
		jout_key(R->g, "body");
		jout_strn(R->g, m->body, m->len);
	}
	jout_kstr(R->g, "queue", R->q->name);
	jout_kstr(R->g, "receipt", m->receipt);
	jout_kint(R->g, "receives", m->receives);
	jout_close(R->g);
}

/* Delete b's messages; report those that fail. */
static void
delete_all(struct run *R, struct qbatch *b)
{
	struct qsettle *s = xcalloc(b->n ? b->n : 1, sizeof(*s));
	size_t i;

	for (i = 0; i < b->n; i++) {
		s[i].receipt = b->m[i].receipt;
		s[i].act = QA_DELETE;
	}
	R->q->settle(R->q, s, b->n);
	for (i = 0; i < b->n; i++)
		if (s[i].rc != 0) {
			qb_warn("%s: message %s not deleted: %s", R->q->name,
			    b->m[i].id, s[i].why);
			R->rc = QB_EX_PARTIAL;
		}
	free(s);
}

/* Close one window: dead-letter, extend, hand on, commit. */
static void
handon(struct run *R, struct qbatch *b)
{
	const struct opts *o = R->o;
	struct qbatch dead = { NULL, 0, 0 };
	char err[160];
	double need = qtime_wall() + o->vis;
	size_t i, k, nlow = 0;
	yajl_val v;

	for (i = k = 0; i < b->n; i++) {
		struct qmsg *m = &b->m[i];

		if (m->receipt == NULL) {	/* stdin: pass the line on */
			if ((v = jtree_parse(m->body, err, sizeof(err))) == NULL ||
			    !YAJL_IS_OBJECT(v)) {
				qb_lwarn("<stdin>", m->lineno, "%s", v == NULL ?
				    err : "not a JSON object");
				if (o->strict)
					exit(QB_EX_DATAERR);
				R->rc = QB_EX_PARTIAL;
			} else {
				jout_raw(R->g, m->body, m->len);
				put(R, R->out);
			}
			yajl_tree_free(v);
			b->m[k++] = *m;
			continue;
		}
		if (o->maxr > 0 && m->receives > o->maxr) {
			v = jtree_parse(m->body, err, sizeof(err));
			item(R, m, v);
			yajl_tree_free(v);
			qb_warn("message %s received %ld times: dead-lettered",
			    m->id, m->receives);
			if (deadletter_put(&R->dead, R->g) == 0) {
				*qbatch_add(&dead) = *m;
				continue;
			}
		}
		if (m->until > 0 && m->until < need)
			nlow++;
		b->m[k++] = *m;
	}
	b->n = k;
	if (dead.n > 0) {
		delete_all(R, &dead);
		qbatch_clear(&dead);
		free(dead.m);
	}
	/* Leases that would end before the call and the settle: extend. */
	if (nlow > 0 && R->q->extend != NULL &&
	    R->q->extend(R->q, b->m, b->n, o->vis) != 0)
		R->rc = QB_EX_PARTIAL;
	for (i = k = 0; i < b->n; i++) {
		struct qmsg *m = &b->m[i];
		const unsigned char *p;
		const char *cid, *why = NULL;
		size_t n;

		if (m->receipt == NULL) {
			b->m[k++] = *m;
			continue;
		}
		v = jtree_parse(m->body, err, sizeof(err));
		if (v == NULL || !YAJL_IS_OBJECT(v))
			qb_warn("message %s: body is not a JSON object; passed "
			    "on as a string", m->id);
		if (!YAJL_IS_OBJECT(v)) {
			yajl_tree_free(v);
			v = NULL;
		}
		item(R, m, v);
		/*
		 * An item the next tools would refuse (an id they do not
		 * take, or longer than their line cap once its members are
		 * added) is not handed on: it stays leased, is not deleted
		 * by --commit, and comes back until --max-receives
		 * dead-letters it.
		 */
		yajl_gen_get_buf(R->g, &p, &n);
		if ((cid = jtree_str(v, "custom_id")) == NULL &&
		    (cid = jtree_str(v, "id")) == NULL)
			cid = m->id;
		if (cid != NULL && (why = id_check(cid, strlen(cid))) != NULL)
			snprintf(err, sizeof(err), "%s", why);
		if (why != NULL ||
		    jsonl_fits((const char *)p, n, err, sizeof(err)) == -1) {
			qb_warn("%s: message %s: %s; not handed on", R->q->name,
			    m->id, err);
			yajl_gen_clear(R->g);
			yajl_gen_reset(R->g, NULL);
			free(m->id);
			free(m->receipt);
			free(m->body);
			yajl_tree_free(v);
			R->rc = QB_EX_PARTIAL;
			continue;
		}
		yajl_tree_free(v);
		put(R, R->out);
		b->m[k++] = *m;
	}
	b->n = k;
	if (fflush(R->out) != 0)
		qb_diesys(QB_EX_IOERR, "%s: write error", R->outname);
	if (o->commit && b->n > 0) {
		if (R->atomic) {
			if (afile_commit(&R->af, NULL) == -1)
				qb_diesys(QB_EX_IOERR, "%s", o->out);
			R->atomic = 0;
			R->out = NULL;
		} else if (fsync(fileno(R->out)) == -1)
			qb_diesys(QB_EX_IOERR, "%s: fsync", R->outname);
		delete_all(R, b);
	}
}

static void
drain(struct run *R)
{
	const struct opts *o = R->o;
	struct qbatch b = { NULL, 0, 0 };
	double deadline, left;
	size_t twice;
	int rc, isstdin = R->q->extend == NULL;

	if (!isstdin && o->timeout + o->vis > SQS_VIS_MAX &&
	    strncmp(R->q->name, "dir:", 4) != 0)
		qb_warn("the window (%.0f s) and --visibility (%.0f s) exceed "
		    "SQS's 12-hour maximum: items may come back before they "
		    "are settled", o->timeout, o->vis);
	do {
		deadline = qtime_mono() + o->timeout;
		while (b.n < (size_t)o->count) {
			/* On stdin a window opens with its first item. */
			if (isstdin && b.n == 0)
				deadline = qtime_mono() + o->timeout;
			if ((left = deadline - qtime_mono()) <= 0)
				break;
			rc = R->q->receive(R->q, &b, (size_t)o->count - b.n,
			    left, left + o->vis);
			if (rc != 0) {
				if (b.n > 0)
					qb_warn("%zu messages stay leased and will "
					    "come back", b.n);
				exit(rc);
			}
			if (R->q->eof)
				break;
		}
		if ((twice = qbatch_dedupe(&b)) > 0)
			qb_note(1, "%zu messages received twice: handed on once",
			    twice);
		qb_note(1, "window: %zu messages", b.n);
		handon(R, &b);
		qbatch_clear(&b);
	} while (isstdin && !R->q->eof);
	free(b.m);
}

/* What enqueue reads with: the run, and the ids seen so far. */
struct enq {
	struct run	*R;
	struct idmap	 ids;		/* an id twice would lose one item later */
	struct idmap	 queued;	/* ids already on a spool, skipped */
	unsigned long	 nskip;
};

/* jsonl_each callback: send one item to the queue. */
static int
enq_line(void *arg, struct jsonl_reader *r, const char *line, size_t len,
    yajl_val v)
{
	struct enq *E = arg;
	struct run *R = E->R;
	const char *id, *why = NULL;
	int rc, isnew;

	if (((id = jtree_str(v, "custom_id")) != NULL ||
	    (id = jtree_str(v, "id")) != NULL) &&
	    (why = id_check(id, strlen(id))) != NULL)
		qb_lwarn(r->name, r->lineno, "%s", why);
	else if (id != NULL &&
	    (idmap_put(&E->ids, id, strlen(id), &isnew), !isnew)) {
		why = "duplicate";
		qb_lwarn(r->name, r->lineno, "duplicate id \"%s\" in this "
		    "run; not enqueued", id);
	} else if (id != NULL &&
	    idmap_get(&E->queued, id, strlen(id)) != (size_t)-1) {
		/* Enqueuing a file again (after a failed run) adds no copy. */
		if (qb_verbose >= 1)
			qb_lwarn(r->name, r->lineno, "id \"%s\" is already "
			    "queued; skipped", id);
		E->nskip++;
		return 0;
	}
	/* qb-drain hands the line on with members added: leave them room. */
	if (why == NULL && len > JSONL_LINE_MAX - QUEUE_ITEM_ROOM) {
		why = "long";
		qb_lwarn(r->name, r->lineno, "line of %zu bytes leaves no room "
		    "for the %d bytes qb-drain adds under the line cap of %zu "
		    "bytes; not enqueued", len, QUEUE_ITEM_ROOM, JSONL_LINE_MAX);
	}
	if (why != NULL) {
		if (R->o->strict)
			exit(QB_EX_DATAERR);
		R->rc = QB_EX_PARTIAL;
		return 0;
	}
	if ((rc = R->q->send(R->q, line, len)) != 0) {
		R->q->discard(R->q);
		exit(rc);
	}
	return 0;
}

/*
 * Enqueue each input all or nothing: its messages are staged (spool: in
 * tmp/; SQS: held) while it is read, and made visible only once it was
 * read to its end. A damaged input (a cut gzip stream) enqueues nothing;
 * the inputs before it stay enqueued. Any exit before the flush drops
 * what was staged (spool: afile_temp_add removes the files).
 */
static void
enqueue(struct run *R, char **files, int nfiles)
{
	struct enq E;
	unsigned long nbad = 0;
	int i, rc;

	memset(&E, 0, sizeof(E));
	E.R = R;
	idmap_init(&E.ids);
	idmap_init(&E.queued);
	if (R->q->queued != NULL && (rc = R->q->queued(R->q, &E.queued)) != 0)
		exit(rc);
	for (i = 0; i < (nfiles ? nfiles : 1); i++) {
		if ((rc = jsonl_each(nfiles ? files[i] : "-", R->o->strict,
		    enq_line, &E, &nbad)) == QB_EX_DATAERR)
			exit(rc);	/* --strict: the stop is said */
		if (rc != 0) {
			R->q->discard(R->q);
			qb_warn("%s: nothing of it enqueued", nfiles ? files[i] :
			    "<stdin>");
			exit(rc);	/* reported */
		}
		if ((rc = R->q->flush(R->q)) != 0)
			exit(rc);
	}
	if (E.nskip > 0)
		qb_note(1, "%lu items already queued: skipped", E.nskip);
	if (nbad > 0)
		R->rc = QB_EX_PARTIAL;
	idmap_free(&E.ids);
	idmap_free(&E.queued);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "commit", no_argument, NULL, 'c' },
		{ "count", required_argument, NULL, 'n' },
		{ "dead-letter", required_argument, NULL, OPT_DL },
		{ "dead-letter-queue", required_argument, NULL, OPT_DLQ },
		{ "enqueue", no_argument, NULL, OPT_ENQ },
		{ "max-receives", required_argument, NULL, OPT_MAXR },
		{ "output", required_argument, NULL, 'o' },
		{ "queue", required_argument, NULL, 'Q' },
		{ "receivers", required_argument, NULL, OPT_RECV },
		{ "retry-delay", required_argument, NULL, OPT_RDELAY },
		{ "settle", no_argument, NULL, OPT_SETTLE },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ "timeout", required_argument, NULL, 't' },
		{ "visibility", required_argument, NULL, OPT_VIS },
		{ "wait", required_argument, NULL, OPT_WAIT },
		QB_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct opts o;
	struct run R;
	struct stat st;
	const char *e = NULL;
	int ch;

	qb_setprog(argv[0]);
	memset(&o, 0, sizeof(o));
	memset(&R, 0, sizeof(R));
	o.count = 100;
	o.timeout = 10;
	o.vis = 300;
	o.wait = 5;
	o.rdelay = 30;
	o.receivers = 4;
	o.queue = getenv("QB_QUEUE");
	while ((ch = getopt_long(argc, argv, "chn:o:Q:qt:Vv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o.commit = 1;
			break;
		case 'n':
			o.count = (long)qb_strtonum(optarg, 1, 10000000, &e);
			break;
		case 'o':
			o.out = optarg;
			break;
		case 'Q':
			o.queue = optarg;
			break;
		case 't':
			o.timeout = qb_parse_seconds(optarg, &e);
			break;
		case OPT_DL:
			o.dl = optarg;
			break;
		case OPT_DLQ:
			o.dlq = optarg;
			break;
		case OPT_ENQ:
			o.enqueue = 1;
			break;
		case OPT_MAXR:
			o.maxr = (long)qb_strtonum(optarg, 1, 1000000, &e);
			break;
		case OPT_RECV:
			o.receivers = (long)qb_strtonum(optarg, 1,
			    SQS_RECEIVERS_MAX, &e);
			break;
		case OPT_RDELAY:
			o.rdelay = qb_parse_seconds(optarg, &e);
			break;
		case OPT_SETTLE:
			o.settle = 1;
			break;
		case OPT_STRICT:
			o.strict = 1;
			break;
		case OPT_VIS:
			o.vis = qb_parse_seconds(optarg, &e);
			if (e == NULL && o.vis > SQS_VIS_MAX)
				e = "more than 43200 (12 hours)";
			break;
		case OPT_WAIT:
			o.wait = qb_parse_seconds(optarg, &e);
			if (e == NULL && o.wait > SQS_WAIT_MAX)
				e = "more than 20";
			break;
		default:
			qb_common_opt(ch, usage, help);
		}
		if (e != NULL) {
			qb_warn("-%c %s: %s", ch < 256 ? ch : '-', optarg, e);
			qb_usage(usage);
		}
	}
	argc -= optind;
	argv += optind;
	if (o.enqueue + o.settle > 1 || (o.commit && (o.enqueue || o.settle)) ||
	    (argc > 0 && !o.enqueue && !o.settle)) {
		qb_warn("--enqueue, --settle and --commit exclude each other; "
		    "only they read files");
		qb_usage(usage);
	}
	if (o.maxr > 0 && o.dl == NULL && o.dlq == NULL) {
		qb_warn("--max-receives needs --dead-letter or --dead-letter-queue");
		qb_usage(usage);
	}
	if (o.queue == NULL && !o.settle) {
		qb_warn("no queue: give -Q or set QB_QUEUE");
		qb_usage(usage);
	}
	if (o.commit && (o.out == NULL || strcmp(o.out, "-") == 0) &&
	    fstat(1, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
		qb_warn("--commit with standard output a pipe: custody must pass "
		    "with --settle once the outcome is known");
		qb_usage(usage);
	}
	if (o.commit && o.queue != NULL && strcmp(o.queue, "-") == 0) {
		qb_warn("--commit needs a queue to delete from");
		qb_usage(usage);
	}
	R.o = &o;
	R.g = jout_new();
	R.out = stdout;
	R.outname = "standard output";
	if (o.out != NULL && strcmp(o.out, "-") != 0 && !o.enqueue) {
		if (afile_open(&R.af, o.out) == -1)
			qb_diesys(QB_EX_IOERR, "%s", o.out);
		R.out = R.af.fp;
		R.outname = o.out;
		R.atomic = 1;
	}
	R.dead.path = o.dl;
	if (o.dl != NULL && (R.dead.fp = fopen(o.dl, "a")) == NULL)
		qb_diesys(QB_EX_IOERR, "%s", o.dl);
	if (o.dlq != NULL)
		R.dead.q = queue_open(o.dlq, 1);
	if (o.queue != NULL) {
		R.q = queue_open(o.queue, o.enqueue);
		R.q->poll = o.wait;
		R.q->receivers = (int)o.receivers;
	}
	if (R.q != NULL && R.q->settle == NULL && (o.settle || o.enqueue))
		qb_die(QB_EX_USAGE, "standard input is not a queue to %s",
		    o.settle ? "settle on" : "put items on");
	if (o.enqueue)
		enqueue(&R, argv, argc);
	else if (o.settle) {
		struct settler st = { R.q, o.queue != NULL, &R.dead, o.rdelay,
		    o.maxr, o.strict, R.g, R.out, 0 };

		settle_files(&st, argv, argc);
		R.q = st.q;
		if (st.rc != 0)
			R.rc = st.rc;
	}
	else
		drain(&R);
	if (R.atomic && afile_commit(&R.af, NULL) == -1)
		qb_diesys(QB_EX_IOERR, "%s", o.out);
	if (R.dead.fp != NULL && fclose(R.dead.fp) != 0)
		qb_diesys(QB_EX_IOERR, "%s", o.dl);
	if (R.dead.q != NULL)
		R.dead.q->close(R.dead.q);
	if (R.q != NULL)
		R.q->close(R.q);
	yajl_gen_free(R.g);
	qb_close_stdout();
	return R.rc;
}
