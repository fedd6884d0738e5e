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
 * that doubles with each receive (common/queue/settle.c).
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

/*
 * Every step below returns 0, or after reporting it the status that ends
 * the run; main decides. Messages leased when a run ends that way stay
 * leased and come back when their leases end; --enqueue's staged
 * messages are dropped.
 */

static int
put(struct run *R)
{
	if (jout_line(R->g, R->out) == -1)
		return qb_failsys(QB_EX_IOERR, "%s: write error", R->outname);
	return 0;
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

/*
 * Standard input: pass each line of b on as it was written. A line that
 * is not a JSON object is reported and skipped; under --strict it stops
 * the run (QB_EX_DATAERR).
 */
static int
pass_lines(struct run *R, struct qbatch *b)
{
	char err[160];
	yajl_val v;
	size_t i;
	int rc = 0;

	for (i = 0; i < b->n && rc == 0; i++) {
		if ((v = jtree_parse(b->m[i].body, err, sizeof(err))) == NULL ||
		    !YAJL_IS_OBJECT(v)) {
			qb_lwarn("<stdin>", b->m[i].lineno, "%s", v == NULL ?
			    err : "not a JSON object");
			if (R->o->strict)
				rc = QB_EX_DATAERR;
			R->rc = QB_EX_PARTIAL;
		} else {
			jout_raw(R->g, b->m[i].body, b->m[i].len);
			rc = put(R);
		}
		yajl_tree_free(v);
	}
	return rc;
}

/*
 * Dead-letter and delete the messages of b received more than
 * --max-receives times (one whose dead letter could not be written
 * stays). Returns how many of the others have leases that end before
 * the call and the settle would (now + --visibility).
 */
static size_t
retire(struct run *R, struct qbatch *b)
{
	struct qbatch dead = { NULL, 0, 0 };
	double need = qtime_wall() + R->o->vis;
	struct qmsg *m;
	char err[160];
	size_t i, k, nlow = 0;
	yajl_val v;

	for (i = k = 0; i < b->n; i++) {
		m = &b->m[i];
		if (R->o->maxr > 0 && m->receives > R->o->maxr) {
			v = jtree_parse(m->body, err, sizeof(err));
			item(R, m, v);
			yajl_tree_free(v);
			qb_warn("message %s received %ld times: dead-lettered",
			    m->id, m->receives);
			if (settle_deadletter(&R->dead, R->g) == 0) {
				*qmsg_add(&dead) = *m;
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
		qmsg_clear(&dead);
		free(dead.m);
	}
	return nlow;
}

/*
 * Hand message m on as an item. One the next tools would refuse (an id
 * they do not take, or longer than their line cap once its members are
 * added) is not handed on: it stays leased, is not deleted by --commit,
 * and comes back until --max-receives dead-letters it. Returns 0 when
 * handed on, -1 when not (m is freed), or a write error's status.
 */
static int
handone(struct run *R, struct qmsg *m)
{
	const unsigned char *p;
	const char *cid, *why = NULL;
	char err[160];
	yajl_val v;
	size_t n;

	v = jtree_parse(m->body, err, sizeof(err));
	if (v == NULL || !YAJL_IS_OBJECT(v))
		qb_warn("message %s: body is not a JSON object; passed "
		    "on as a string", m->id);
	if (!YAJL_IS_OBJECT(v)) {
		yajl_tree_free(v);
		v = NULL;
	}
	item(R, m, v);
	yajl_gen_get_buf(R->g, &p, &n);
	if ((cid = jtree_str(v, "custom_id")) == NULL &&
	    (cid = jtree_str(v, "id")) == NULL)
		cid = m->id;
	if (cid != NULL && (why = idmap_check_id(cid, strlen(cid))) != NULL)
		snprintf(err, sizeof(err), "%s", why);
	yajl_tree_free(v);
	if (why != NULL ||
	    jsonl_fits((const char *)p, n, err, sizeof(err)) == -1) {
		qb_warn("%s: message %s: %s; not handed on", R->q->name,
		    m->id, err);
		yajl_gen_clear(R->g);
		yajl_gen_reset(R->g, NULL);
		qmsg_free(m);
		R->rc = QB_EX_PARTIAL;
		return -1;
	}
	return put(R);
}

/*
 * Leased messages: dead-letter, extend the leases that would end too
 * soon, hand the rest on; b keeps those handed on.
 */
static int
hand_items(struct run *R, struct qbatch *b)
{
	size_t i, k;
	int rc = 0;

	if (retire(R, b) > 0 && R->q->extend(R->q, b->m, b->n, R->o->vis) != 0)
		R->rc = QB_EX_PARTIAL;
	for (i = k = 0; i < b->n && rc <= 0; i++)
		if ((rc = handone(R, &b->m[i])) != -1)
			b->m[k++] = b->m[i];
	while (i < b->n)	/* stopped: b still owns the rest */
		b->m[k++] = b->m[i++];
	b->n = k;
	return rc > 0 ? rc : 0;
}

/*
 * --commit: custody passes to the output, written and fsynced (for -o,
 * renamed into place), and then b's messages are deleted.
 */
static int
commit(struct run *R, struct qbatch *b)
{
	if (R->atomic) {
		R->atomic = 0;
		if (afile_commit(&R->af, NULL) == -1)
			return qb_failsys(QB_EX_IOERR, "%s", R->o->out);
		R->out = NULL;
	} else if (fsync(fileno(R->out)) == -1)
		return qb_failsys(QB_EX_IOERR, "%s: fsync", R->outname);
	delete_all(R, b);
	return 0;
}

/* Close one window: dead-letter, extend, hand on, commit. */
static int
handon(struct run *R, struct qbatch *b)
{
	int rc;

	if (R->q->extend == NULL)
		rc = pass_lines(R, b);
	else
		rc = hand_items(R, b);
	if (rc == 0 && fflush(R->out) != 0)
		rc = qb_failsys(QB_EX_IOERR, "%s: write error", R->outname);
	if (rc == 0 && R->o->commit && b->n > 0)
		rc = commit(R, b);
	return rc;
}

/* Fill one window b: receive until it holds -n or -t seconds passed. */
static int
fill(struct run *R, struct qbatch *b, int isstdin)
{
	const struct opts *o = R->o;
	double deadline = qtime_mono() + o->timeout, left;
	int rc;

	while (b->n < (size_t)o->count) {
		/* On stdin a window opens with its first item. */
		if (isstdin && b->n == 0)
			deadline = qtime_mono() + o->timeout;
		if ((left = deadline - qtime_mono()) <= 0)
			break;
		rc = R->q->receive(R->q, b, (size_t)o->count - b->n, left,
		    left + o->vis);
		if (rc != 0) {
			if (b->n > 0)
				qb_warn("%zu messages stay leased and will "
				    "come back", b->n);
			return rc;
		}
		if (R->q->eof)
			break;
	}
	return 0;
}

static int
drain(struct run *R)
{
	const struct opts *o = R->o;
	struct qbatch b = { NULL, 0, 0 };
	size_t twice;
	int rc, isstdin = R->q->extend == NULL;

	if (!isstdin && o->timeout + o->vis > SQS_VIS_MAX &&
	    strncmp(R->q->name, "dir:", 4) != 0)
		qb_warn("the window (%.0f s) and --visibility (%.0f s) exceed "
		    "SQS's 12-hour maximum: items may come back before they "
		    "are settled", o->timeout, o->vis);
	do {
		if ((rc = fill(R, &b, isstdin)) != 0)
			break;
		if ((twice = qmsg_dedupe(&b)) > 0)
			qb_note(1, "%zu messages received twice: handed on once",
			    twice);
		qb_note(1, "window: %zu messages", b.n);
		rc = handon(R, &b);
		qmsg_clear(&b);
	} while (rc == 0 && isstdin && !R->q->eof);
	qmsg_clear(&b);
	free(b.m);
	return rc;
}

/* What enqueue reads with: the run, and the ids seen so far. */
struct enq {
	struct run	*R;
	struct idmap	 ids;		/* an id twice would lose one item later */
	struct idmap	 queued;	/* ids already on a spool, skipped */
	unsigned long	 nskip;
	int		 rc;		/* the status that stopped the input */
};

/*
 * Why the item at r's line, whose id is id (or NULL), is not enqueued
 * (reported), or NULL. Sets *skip for one already queued.
 */
static const char *
refuse(struct enq *E, struct jsonl_reader *r, const char *id, size_t len,
    int *skip)
{
	const char *why = NULL;
	int isnew;

	*skip = 0;
	if (id != NULL && (why = idmap_check_id(id, strlen(id))) != NULL)
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
		*skip = 1;
		return NULL;
	}
	/* qb-drain hands the line on with members added: leave them room. */
	if (why == NULL && len > JSONL_LINE_MAX - QUEUE_ITEM_ROOM) {
		why = "long";
		qb_lwarn(r->name, r->lineno, "line of %zu bytes leaves no room "
		    "for the %d bytes qb-drain adds under the line cap of %zu "
		    "bytes; not enqueued", len, QUEUE_ITEM_ROOM, JSONL_LINE_MAX);
	}
	return why;
}

/*
 * Send the item v (len bytes at line, read from r) to the queue. Returns
 * 0 (sent, skipped as already queued, or refused and reported), or the
 * status that stops the input: QB_EX_DATAERR for a refusal under
 * --strict, or the queue's failure (reported).
 */
static int
enq_line(struct enq *E, struct jsonl_reader *r, const char *line, size_t len,
    yajl_val v)
{
	struct run *R = E->R;
	const char *id;
	int skip;

	if ((id = jtree_str(v, "custom_id")) == NULL)
		id = jtree_str(v, "id");
	if (refuse(E, r, id, len, &skip) != NULL) {
		if (R->o->strict)
			return QB_EX_DATAERR;
		R->rc = QB_EX_PARTIAL;
		return 0;
	}
	if (skip) {
		E->nskip++;
		return 0;
	}
	return R->q->send(R->q, line, len);
}

/*
 * The items of path to the queue, staged. Returns 0 once read to its end,
 * or the status that stopped it: QB_EX_NOINPUT, QB_EX_IOERR, QB_EX_DATAERR
 * (--strict), said; or a send's failure, in E->rc, said.
 */
static int
enq_file(struct enq *E, const char *path, unsigned long *nbad)
{
	struct jsonl_reader r;
	struct jsonl_rec rec;
	int ch, rc;

	if ((rc = jsonl_start(&r, path, JSONL_TREE, E->R->o->strict)) != 0)
		return rc;
	while ((ch = jsonl_read(&r, &rec)) != JSONL_EOF) {
		if (ch == JSONL_BAD)
			continue;
		if (ch != JSONL_LINE)
			break;
		if ((rc = enq_line(E, &r, rec.line, rec.len, rec.tree)) != 0) {
			if (rc != QB_EX_DATAERR)
				E->rc = rc;
			break;
		}
	}
	*nbad += r.nbad;
	jsonl_close(&r);
	return rc != 0 ? rc : jsonl_status(ch);
}

/*
 * Enqueue each input all or nothing: its messages are staged (spool: in
 * tmp/; SQS: held) while it is read, and made visible only once it was
 * read to its end. A damaged input (a cut gzip stream) enqueues nothing;
 * the inputs before it stay enqueued. Any end before the flush drops
 * what was staged (spool: afile_temp_add removes the files).
 */
static int
enqueue(struct run *R, char **files, int nfiles)
{
	struct enq E;
	unsigned long nbad = 0;
	const char *path;
	int i, rc = 0;

	memset(&E, 0, sizeof(E));
	E.R = R;
	idmap_init(&E.ids);
	idmap_init(&E.queued);
	if (R->q->queued != NULL)
		rc = R->q->queued(R->q, &E.queued);
	for (i = 0; i < (nfiles ? nfiles : 1) && rc == 0; i++) {
		path = nfiles ? files[i] : "-";
		if ((rc = enq_file(&E, path, &nbad)) == 0) {
			rc = R->q->flush(R->q);
			continue;
		}
		R->q->discard(R->q);
		/* A --strict stop, or a failed send, said why already. */
		if (rc != QB_EX_DATAERR && E.rc == 0)
			qb_warn("%s: nothing of it enqueued", nfiles ? path :
			    "<stdin>");
	}
	if (rc == 0 && E.nskip > 0)
		qb_note(1, "%lu items already queued: skipped", E.nskip);
	if (nbad > 0)
		R->rc = QB_EX_PARTIAL;
	idmap_free(&E.ids);
	idmap_free(&E.queued);
	return rc;
}

/* --settle: the outcome records of files (none: standard input). */
static int
settle(struct run *R, char **files, int nfiles)
{
	struct settler st = { R->q, R->o->queue != NULL, &R->dead,
	    R->o->rdelay, R->o->maxr, R->o->strict, R->g, R->out, 0 };
	int rc;

	rc = settle_files(&st, files, nfiles);
	R->q = st.q;
	if (rc == QB_EX_PARTIAL) {
		R->rc = rc;
		rc = 0;
	}
	return rc;
}

/* Parse the options into o; returns optind. */
static int
options(struct opts *o, int argc, char *argv[])
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
	const char *e = NULL;
	int ch;

	memset(o, 0, sizeof(*o));
	o->count = 100;
	o->timeout = 10;
	o->vis = 300;
	o->wait = 5;
	o->rdelay = 30;
	o->receivers = 4;
	o->queue = getenv("QB_QUEUE");
	while ((ch = getopt_long(argc, argv, "chn:o:Q:qt:Vv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o->commit = 1;
			break;
		case 'n':
			o->count = (long)num_strtonum(optarg, 1, 10000000, &e);
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'Q':
			o->queue = optarg;
			break;
		case 't':
			o->timeout = num_seconds(optarg, &e);
			break;
		case OPT_DL:
			o->dl = optarg;
			break;
		case OPT_DLQ:
			o->dlq = optarg;
			break;
		case OPT_ENQ:
			o->enqueue = 1;
			break;
		case OPT_MAXR:
			o->maxr = (long)num_strtonum(optarg, 1, 1000000, &e);
			break;
		case OPT_RECV:
			o->receivers = (long)num_strtonum(optarg, 1,
			    SQS_RECEIVERS_MAX, &e);
			break;
		case OPT_RDELAY:
			o->rdelay = num_seconds(optarg, &e);
			break;
		case OPT_SETTLE:
			o->settle = 1;
			break;
		case OPT_STRICT:
			o->strict = 1;
			break;
		case OPT_VIS:
			o->vis = num_seconds(optarg, &e);
			if (e == NULL && o->vis > SQS_VIS_MAX)
				e = "more than 43200 (12 hours)";
			break;
		case OPT_WAIT:
			o->wait = num_seconds(optarg, &e);
			if (e == NULL && o->wait > SQS_WAIT_MAX)
				e = "more than 20";
			break;
		default:
			opt_common(ch, usage, help);
		}
		if (e != NULL) {
			qb_warn("-%c %s: %s", ch < 256 ? ch : '-', optarg, e);
			opt_usage(usage);
		}
	}
	return optind;
}

/* The options that exclude or need each other; nfiles operands. */
static void
check(const struct opts *o, int nfiles)
{
	struct stat st;

	if (o->enqueue + o->settle > 1 || (o->commit && (o->enqueue || o->settle)) ||
	    (nfiles > 0 && !o->enqueue && !o->settle)) {
		qb_warn("--enqueue, --settle and --commit exclude each other; "
		    "only they read files");
		opt_usage(usage);
	}
	if (o->maxr > 0 && o->dl == NULL && o->dlq == NULL) {
		qb_warn("--max-receives needs --dead-letter or --dead-letter-queue");
		opt_usage(usage);
	}
	if (o->queue == NULL && !o->settle) {
		qb_warn("no queue: give -Q or set QB_QUEUE");
		opt_usage(usage);
	}
	if (o->commit && (o->out == NULL || strcmp(o->out, "-") == 0) &&
	    fstat(1, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
		qb_warn("--commit with standard output a pipe: custody must pass "
		    "with --settle once the outcome is known");
		opt_usage(usage);
	}
	if (o->commit && o->queue != NULL && strcmp(o->queue, "-") == 0) {
		qb_warn("--commit needs a queue to delete from");
		opt_usage(usage);
	}
}

/* Open what the run writes to and reads from: output, dead letters, queue. */
static int
begin(struct run *R, const struct opts *o)
{
	int rc;

	memset(R, 0, sizeof(*R));
	R->o = o;
	R->g = jout_new();
	R->out = stdout;
	R->outname = "standard output";
	if (o->out != NULL && strcmp(o->out, "-") != 0 && !o->enqueue) {
		if (afile_open(&R->af, o->out) == -1)
			return qb_failsys(QB_EX_IOERR, "%s", o->out);
		R->out = R->af.fp;
		R->outname = o->out;
		R->atomic = 1;
	}
	R->dead.path = o->dl;
	if (o->dl != NULL && (R->dead.fp = fopen(o->dl, "a")) == NULL)
		return qb_failsys(QB_EX_IOERR, "%s", o->dl);
	if (o->dlq != NULL && (rc = queue_open(&R->dead.q, o->dlq, 1)) != 0)
		return rc;
	if (o->queue != NULL) {
		if ((rc = queue_open(&R->q, o->queue, o->enqueue)) != 0)
			return rc;
		R->q->poll = o->wait;
		R->q->receivers = (int)o->receivers;
	}
	if (R->q != NULL && R->q->settle == NULL && (o->settle || o->enqueue))
		return qb_fail(QB_EX_USAGE, "standard input is not a queue to %s",
		    o->settle ? "settle on" : "put items on");
	return 0;
}

/*
 * The end: unless the run was stopped (rc), the output is committed and
 * checked; everything is closed. Returns the exit status.
 */
static int
finish(struct run *R, int rc)
{
	if (R->atomic) {
		R->atomic = 0;
		if (rc != 0)
			afile_abort(&R->af);
		else if (afile_commit(&R->af, NULL) == -1)
			rc = qb_failsys(QB_EX_IOERR, "%s", R->o->out);
	}
	if (R->dead.fp != NULL && fclose(R->dead.fp) != 0 && rc == 0)
		rc = qb_failsys(QB_EX_IOERR, "%s", R->o->dl);
	if (R->dead.q != NULL)
		R->dead.q->close(R->dead.q);
	if (R->q != NULL)
		R->q->close(R->q);
	yajl_gen_free(R->g);
	if (rc != 0)
		return rc;
	opt_close_stdout();
	return R->rc;
}

int
main(int argc, char *argv[])
{
	struct opts o;
	struct run R;
	int n, rc;

	qb_setprog(argv[0]);
	n = options(&o, argc, argv);
	argc -= n;
	argv += n;
	check(&o, argc);
	if ((rc = begin(&R, &o)) == 0) {
		if (o.enqueue)
			rc = enqueue(&R, argv, argc);
		else if (o.settle)
			rc = settle(&R, argv, argc);
		else
			rc = drain(&R);
	}
	return finish(&R, rc);
}
