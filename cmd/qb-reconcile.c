/*
 * qb-reconcile: join results to their requests by custom_id and write one
 * outcome record per request: done, retry (a valid item again) or dead.
 *
 * Reads request files (-r): OpenAI batch lines, Anthropic lines or qb
 * items; and from the operands job records ("file", "results", "status",
 * "ended", "errors") and result lines of any provider (result.h).
 * Writes outcome records: "id", "outcome", the result members, "cost_usd",
 * and the item's own members (meta, queue, receipt, receives ...); a retry
 * also gets "endpoint" and "body" ("params" too for Anthropic lines),
 * copied as bytes. Requests are indexed as id -> (file, offset, length)
 * and re-read when an outcome needs them: memory does not grow with the
 * request bodies, and nothing is kept per result but a state byte.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "exits.h"
#include "idmap.h"
#include "jout.h"
#include "json.h"
#include "jsonl.h"
#include "msg.h"
#include "opt.h"
#include "result.h"
#include "xmem.h"

static const char usage[] =
    "[-hquVv] [--strict] [-r file]... [--prices file] [file ...]";
static const char help[] =
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
	int		  strict, unbuffered;
};

#define R_ANTHROPIC	1	/* an Anthropic line: "params", no "body" */
#define R_EXTRA		2	/* members a done or dead outcome carries */

/* One request. state: 0 until its outcome is written, then 1 + outcome. */
struct req {
	uint64_t	off;		/* of its line in the file (or spool) */
	uint32_t	len, line;
	uint32_t	job;		/* 1 + the last job naming its file, or 0 */
	uint16_t	file, model;	/* model: 1 + index in models, or 0 */
	uint8_t		state, flags;
};

struct rfile {
	char	*name;
	FILE	*spool;		/* the unlinked copy of a .gz or piped input */
	int	 fd;		/* where its lines are re-read */
	dev_t	 dev;
	ino_t	 ino;
};

/* A job record; miss is the status of its requests that got no result. */
struct job {
	char			*batch_id;
	int			 ended, unread;
	enum result_status	 miss;
	char			*ecode, *emsg;
};

struct price {
	char	*model;
	double	 in, out;	/* USD per million tokens */
};

struct rec {
	struct opts		*o;
	struct idmap		 ids;
	struct req		*req;
	struct rfile		*files;
	size_t			 nfiles;
	struct job		*jobs;
	size_t			 njobs;
	struct idmap		 models;
	int			*mprice;	/* price of each model; -2 not looked up */
	struct price		*prices;
	size_t			 nprices;
	struct json_scan	 scan;		/* request lines */
	struct result_parser	 rp;
	struct buf		 rl;		/* a request line read again */
	yajl_gen		 g;
	unsigned long		 nout[3], npending, nunknown, ndup, nbad;
	unsigned long long	 tin, tout;
	double			 cost;
	int			 ioerr, unread;
};

/* Keys an outcome sets itself, or that a request carries only as its id,
 * wire format or body: never copied from the request. */
static const char *const ownkeys[] = { "id", "custom_id", "method", "url",
	"body", "params", "outcome", "status", "http_status", "error", "usage",
	"request_id", "batch_id", "response", "cost_usd", NULL };

static int
inlist(const char *s, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/* A rejected line: already reported; --strict stops here. */
static void
reject(struct rec *rc)
{
	rc->nbad++;
	if (rc->o->strict)
		qb_die(QB_EX_DATAERR, "stopped at the first rejected line (--strict)");
}

static const char *
tmpdir(void)
{
	const char *t = getenv("TMPDIR");

	return t != NULL && *t != '\0' ? t : "/tmp";
}

/* What the index needs from a request line. */
struct facts {
	const char	*id;
	size_t		 idlen;
	const char	*model;
	int		 flags, body;
};

/* Did json_scan record every member at depth 1 under its own key? */
static int
scan_whole(const struct json_scan *s)
{
	int i;

	if (s->nspan == JSON_SPANS_MAX)
		return 0;
	for (i = 0; i < s->nspan; i++)
		if (s->span[i].key[0] == '\x01')
			return 0;
	return 1;
}

/*
 * The facts of a request line. json_scan records at most JSON_SPANS_MAX
 * members at depths 1 and 2 and no key over 71 bytes; a line beyond that
 * is read as a yajl tree instead, returned in *tree for the caller to free.
 */
static void
facts(const struct json_scan *s, const char *line, struct facts *f,
    yajl_val *tree)
{
	yajl_val v, id, body;
	size_t i;
	int iid, ib;

	memset(f, 0, sizeof(*f));
	*tree = NULL;
	if (scan_whole(s)) {
		if ((iid = json_find(s, -1, "custom_id")) < 0)
			iid = json_find(s, -1, "id");
		f->id = json_sval(s, iid);
		f->idlen = f->id ? s->span[iid].slen : 0;
		if ((ib = json_find(s, -1, "body")) < 0 &&
		    (ib = json_find(s, -1, "params")) >= 0)
			f->flags |= R_ANTHROPIC;
		f->body = ib >= 0;
		if (ib >= 0)
			f->model = json_sval(s, json_find(s, ib, "model"));
		for (i = 0; i < (size_t)s->nspan; i++)
			if (s->span[i].depth == 1 && !inlist(s->span[i].key, ownkeys))
				f->flags |= R_EXTRA;
		return;
	}
	if ((*tree = v = yajl_tree_parse(line, NULL, 0)) == NULL)
		return;
	if ((id = json_get(v, "custom_id")) == NULL)
		id = json_get(v, "id");
	f->id = YAJL_IS_STRING(id) ? id->u.string : NULL;
	f->idlen = f->id ? strlen(f->id) : 0;
	if ((body = json_get(v, "body")) == NULL &&
	    (body = json_get(v, "params")) != NULL)
		f->flags |= R_ANTHROPIC;
	f->body = body != NULL;
	f->model = json_str(body, "model");
	for (i = 0; i < v->u.object.len; i++)
		if (!inlist(v->u.object.keys[i], ownkeys))
			f->flags |= R_EXTRA;
}

static int
model_index(struct rec *rc, const char *model)
{
	size_t i;
	int isnew;

	if (model == NULL || rc->models.n >= UINT16_MAX - 1)
		return 0;
	i = idmap_put(&rc->models, model, strlen(model), &isnew);
	if (isnew) {
		rc->mprice = xreallocarray(rc->mprice, i + 1, sizeof(*rc->mprice));
		rc->mprice[i] = -2;
	}
	return (int)i + 1;
}

/*
 * Index one request line of file f at offset off. job is 1 + the job whose
 * file this is, or 0 for a -r file: an id already known from another file
 * is then no duplicate, only claimed by that job. Returns 1 if the line is
 * now in the index (a spool must keep it), 0 if not.
 */
static int
index_line(struct rec *rc, struct jsonl_reader *r, const char *line,
    size_t len, size_t f, uint64_t off, uint32_t job)
{
	struct facts ft;
	yajl_val tree = NULL;
	struct req *q;
	char err[256];
	int isnew, rv = 0;
	size_t idx;

	if (json_scan(&rc->scan, line, len, err, sizeof(err)) == -1) {
		qb_lwarn(r->name, r->lineno, "%s", err);
		reject(rc);
		return 0;
	}
	facts(&rc->scan, line, &ft, &tree);
	if (ft.id == NULL || ft.idlen == 0 || memchr(ft.id, '\0', ft.idlen)) {
		qb_lwarn(r->name, r->lineno, "no string \"custom_id\" or \"id\"");
		reject(rc);
	} else if (!ft.body) {
		qb_lwarn(r->name, r->lineno, "no \"body\" or \"params\" for id \"%s\"",
		    ft.id);
		reject(rc);
	} else if (idx = idmap_put(&rc->ids, ft.id, ft.idlen, &isnew), !isnew) {
		q = &rc->req[idx];
		if (job != 0 && q->file != f)
			q->job = job;
		else {
			qb_lwarn(r->name, r->lineno, "duplicate id \"%s\" (first at "
			    "%s:%lu)", ft.id, rc->files[q->file].name,
			    (unsigned long)q->line);
			reject(rc);
		}
	} else {
		if ((idx & (idx - 1)) == 0)
			rc->req = xreallocarray(rc->req, idx ? idx * 2 : 1,
			    sizeof(*rc->req));
		q = &rc->req[idx];
		memset(q, 0, sizeof(*q));
		q->off = off;
		q->len = (uint32_t)len;
		q->line = (uint32_t)r->lineno;
		q->job = job;
		q->file = (uint16_t)f;
		q->flags = (uint8_t)ft.flags;
		q->model = (uint16_t)model_index(rc, ft.model);
		rv = 1;
	}
	yajl_tree_free(tree);
	return rv;
}

/*
 * Index the request file path ("-" for stdin) as file number nfiles.
 * A plain regular file is re-read in place; gzip or piped input is first
 * copied, line by line as it is indexed, to an unlinked temporary file.
 * Returns 0, or -1 with errno set when path cannot be opened.
 */
static int
index_file(struct rec *rc, const char *path, uint32_t job)
{
	struct jsonl_reader r;
	struct rfile *rf;
	struct stat st;
	struct buf tpath = BUF_INIT;
	unsigned char magic[2];
	char *line;
	size_t len, f = rc->nfiles;
	uint64_t soff = 0;
	int fd = -1, ch;

	if (f >= UINT16_MAX)
		qb_die(QB_EX_SOFTWARE, "%s: more than %d request files", path,
		    UINT16_MAX - 1);
	if (jsonl_open(&r, path) == -1)
		return -1;
	rc->files = xreallocarray(rc->files, f + 1, sizeof(*rc->files));
	rf = &rc->files[f];
	memset(rf, 0, sizeof(*rf));
	rf->name = xstrdup(r.name);
	if (strcmp(path, "-") != 0 && (fd = open(path, O_RDONLY)) != -1 &&
	    fstat(fd, &st) == 0) {
		rf->dev = st.st_dev;
		rf->ino = st.st_ino;
		if (!S_ISREG(st.st_mode) || (pread(fd, magic, 2, 0) == 2 &&
		    magic[0] == 0x1f && magic[1] == 0x8b)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd == -1) {
		buf_printf(&tpath, "%s/qb-reconcile.XXXXXX", tmpdir());
		if ((fd = mkstemp(tpath.p)) == -1 ||
		    (rf->spool = fdopen(fd, "w+")) == NULL)
			qb_diesys(QB_EX_OSERR, "%s: cannot create a temporary file",
			    tpath.p);
		unlink(tpath.p);
		buf_free(&tpath);
	}
	rf->fd = fd;
	rc->nfiles++;
	while ((ch = jsonl_next(&r, &line, &len)) != JSONL_EOF) {
		if (ch == JSONL_IOERR)
			qb_die(QB_EX_IOERR, "%s: cannot index the requests", r.name);
		if (ch == JSONL_BAD) {
			reject(rc);
			continue;
		}
		if (!index_line(rc, &r, line, len, f, rf->spool ? soff : r.off, job) ||
		    rf->spool == NULL)
			continue;
		if (fwrite(line, 1, len, rf->spool) != len ||
		    putc('\n', rf->spool) == EOF)
			qb_diesys(QB_EX_IOERR, "%s: cannot write a temporary copy",
			    r.name);
		soff += len + 1;
	}
	if (rf->spool != NULL && fflush(rf->spool) == EOF)
		qb_diesys(QB_EX_IOERR, "%s: cannot write a temporary copy", r.name);
	qb_note(1, "%s: %lu lines read, %zu requests known", r.name, r.lineno,
	    rc->ids.n);
	jsonl_close(&r);
	return 0;
}

/* Read request q's line again into rc->rl. */
static const char *
reread(struct rec *rc, const struct req *q)
{
	const struct rfile *rf = &rc->files[q->file];
	size_t got = 0;
	ssize_t n;

	buf_reset(&rc->rl);
	buf_grow(&rc->rl, q->len);
	while (got < q->len) {
		n = pread(rf->fd, rc->rl.p + got, q->len - got,
		    (off_t)(q->off + got));
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			qb_diesys(QB_EX_IOERR, "%s:%lu: cannot read the request "
			    "again", rf->name, (unsigned long)q->line);
		}
		got += (size_t)n;
	}
	rc->rl.p[q->len] = '\0';
	return rc->rl.p;
}

/*
 * The request's own members, after the result's: every member but the
 * id, the wire format and the body (ownkeys); for a retry, the endpoint
 * ("url" of an OpenAI line, /v1/messages for an Anthropic one) and the
 * body as well, so that the outcome is an item again. Values are copied
 * as bytes, except from lines json_scan cannot record whole (facts()).
 */
static void
emit_request(struct rec *rc, const struct req *q, const char *id, int retry)
{
	struct json_scan *s = &rc->scan;
	yajl_gen g = rc->g;
	const char *line = reread(rc, q), *key;
	char err[256];
	yajl_val v, body = NULL, url = NULL;
	size_t i;
	int ib = -1, iurl = -1, haveep = 0;

	if (json_scan(s, line, q->len, err, sizeof(err)) == -1)
		qb_die(QB_EX_IOERR, "%s:%lu: the request changed since it was "
		    "read: %s", rc->files[q->file].name, (unsigned long)q->line, err);
	if (scan_whole(s)) {
		if ((ib = json_find(s, -1, "custom_id")) < 0)
			ib = json_find(s, -1, "id");
		if ((key = json_sval(s, ib)) == NULL || strcmp(key, id) != 0)
			qb_die(QB_EX_IOERR, "%s:%lu: the request changed since it "
			    "was read", rc->files[q->file].name, (unsigned long)q->line);
		ib = -1;
		for (i = 0; i < (size_t)s->nspan; i++) {
			if (s->span[i].depth != 1)
				continue;
			key = s->span[i].key;
			if (strcmp(key, "body") == 0 ||
			    (ib < 0 && strcmp(key, "params") == 0))
				ib = (int)i;
			else if (strcmp(key, "url") == 0)
				iurl = (int)i;
			if (inlist(key, ownkeys))
				continue;
			haveep |= strcmp(key, "endpoint") == 0;
			jout_key(g, key);
			jout_raw(g, line + s->span[i].off, s->span[i].len);
		}
		if (!retry || ib < 0)
			return;
		if (!haveep && iurl >= 0) {
			jout_key(g, "endpoint");
			jout_raw(g, line + s->span[iurl].off, s->span[iurl].len);
		} else if (!haveep && (q->flags & R_ANTHROPIC))
			jout_kstr(g, "endpoint", "/v1/messages");
		jout_key(g, "body");
		jout_raw(g, line + s->span[ib].off, s->span[ib].len);
		if (q->flags & R_ANTHROPIC) {
			jout_key(g, "params");
			jout_raw(g, line + s->span[ib].off, s->span[ib].len);
		}
		return;
	}
	if ((v = yajl_tree_parse(line, NULL, 0)) == NULL)
		qb_die(QB_EX_IOERR, "%s:%lu: the request changed since it was "
		    "read", rc->files[q->file].name, (unsigned long)q->line);
	for (i = 0; i < v->u.object.len; i++) {
		key = v->u.object.keys[i];
		if (strcmp(key, "body") == 0 ||
		    (body == NULL && strcmp(key, "params") == 0))
			body = v->u.object.values[i];
		else if (strcmp(key, "url") == 0)
			url = v->u.object.values[i];
		if (inlist(key, ownkeys))
			continue;
		haveep |= strcmp(key, "endpoint") == 0;
		jout_kval(g, key, v->u.object.values[i]);
	}
	if (retry && body != NULL) {
		if (!haveep && url != NULL)
			jout_kval(g, "endpoint", url);
		else if (!haveep && (q->flags & R_ANTHROPIC))
			jout_kstr(g, "endpoint", "/v1/messages");
		jout_kval(g, "body", body);
		if (q->flags & R_ANTHROPIC)
			jout_kval(g, "params", body);
	}
	yajl_tree_free(v);
}

/* Index of the price for model: exact, else the longest priced name that
 * model starts with, followed by '-' (gpt-4o-2024-08-06 -> gpt-4o). */
static int
price_find(const struct rec *rc, const char *model)
{
	size_t i, n, best = 0;
	int at = -1;

	if (model == NULL)
		return -1;
	for (i = 0; i < rc->nprices; i++)
		if (strcmp(rc->prices[i].model, model) == 0)
			return (int)i;
	for (i = 0; i < rc->nprices; i++) {
		n = strlen(rc->prices[i].model);
		if (n > best && strncmp(rc->prices[i].model, model, n) == 0 &&
		    model[n] == '-') {
			best = n;
			at = (int)i;
		}
	}
	return at;
}

/* The cost of r in USD, or -1 when its usage or price is unknown: the
 * price of the requested model, else that of the model that answered. */
static double
cost(struct rec *rc, const struct req *q, const struct result *r)
{
	int p = -1;

	if (rc->nprices == 0 || r->in_tok < 0)
		return -1;
	if (q != NULL && q->model > 0) {
		if (rc->mprice[q->model - 1] == -2)
			rc->mprice[q->model - 1] = price_find(rc,
			    idmap_key(&rc->models, q->model - 1));
		p = rc->mprice[q->model - 1];
	}
	if (p < 0 && (p = price_find(rc, r->model)) < 0)
		return -1;
	return ((double)r->in_tok * rc->prices[p].in +
	    (double)r->out_tok * rc->prices[p].out) / 1e6;
}

/* Write the outcome of request idx from result r. */
static void
emit(struct rec *rc, size_t idx, const struct result *r, const char *batch_id)
{
	struct req *q = &rc->req[idx];
	yajl_gen g = rc->g;
	const char *id = idmap_key(&rc->ids, idx);
	char num[64];
	double c;

	q->state = (uint8_t)(1 + r->outcome);
	rc->nout[r->outcome]++;
	jout_open(g);
	jout_kstr(g, "id", id);
	jout_kstr(g, "outcome", result_outcome_word(r->outcome));
	jout_key(g, "cost_usd");
	if ((c = cost(rc, q, r)) >= 0) {
		rc->cost += c;
		snprintf(num, sizeof(num), "%.10g", c);
		jout_raw(g, num, strlen(num));
	} else
		jout_str(g, NULL);
	result_emit(g, r, batch_id);
	if (r->in_tok >= 0) {
		rc->tin += (unsigned long long)r->in_tok;
		rc->tout += (unsigned long long)r->out_tok;
	}
	if (r->outcome == OUTCOME_RETRY || (q->flags & R_EXTRA))
		emit_request(rc, q, id, r->outcome == OUTCOME_RETRY);
	jout_close(g);
	if (jout_line(g, stdout) == -1 ||
	    (rc->o->unbuffered && fflush(stdout) == EOF))
		qb_diesys(QB_EX_IOERR, "write error on standard output");
}

/* Result res from reader r; job is 1 + the job whose results file r is. */
static void
take_result(struct rec *rc, const struct jsonl_reader *r,
    const struct result *res, uint32_t job)
{
	size_t idx = idmap_get(&rc->ids, res->id, res->idlen);
	const struct req *q;

	if (idx == (size_t)-1) {
		qb_lwarn(r->name, r->lineno, "result for unknown id \"%s\"", res->id);
		rc->nunknown++;
		reject(rc);
		return;
	}
	q = &rc->req[idx];
	if (q->state != 0) {
		qb_lwarn(r->name, r->lineno, "duplicate result for id \"%s\"; "
		    "the first one (%s) stands", res->id,
		    result_outcome_word((enum result_outcome)(q->state - 1)));
		rc->ndup++;
		reject(rc);
		return;
	}
	emit(rc, idx, res, job ? rc->jobs[job - 1].batch_id : NULL);
}

/* Read the result lines of path, a results file of job 1 + job - 1. */
static int
read_results(struct rec *rc, const char *path, uint32_t job)
{
	struct jsonl_reader r;
	struct result res;
	char *line, err[256];
	size_t len;
	int ch, rv;

	if (jsonl_open(&r, path) == -1)
		return -1;
	while ((ch = jsonl_next(&r, &line, &len)) != JSONL_EOF) {
		if (ch == JSONL_IOERR) {
			/* What was not read stays pending, never retried. */
			rc->ioerr = rc->jobs[job - 1].unread = 1;
			break;
		}
		if (ch == JSONL_BAD) {
			reject(rc);
			continue;
		}
		rv = result_parse(&rc->rp, line, len, &res, err, sizeof(err));
		if (rv == 0)
			take_result(rc, &r, &res, job);
		else {
			qb_lwarn(r.name, r.lineno, "%s", rv < 0 ? err :
			    "not a result line");
			reject(rc);
		}
	}
	jsonl_close(&r);
	return 0;
}

/*
 * What the requests of a job's file that got no result become: retry,
 * with the batch's own error (errors[0], or errors.data[0] as OpenAI
 * nests it) when it gave one; status expired or canceled when the batch
 * expired or was cancelled (PROVIDERS.md §1.9), missing otherwise.
 */
static void
job_reason(struct job *j, yajl_val v, const char *status)
{
	static const char *const cancelled[] = { "cancelled", "canceled",
	    "cancelling", "canceling", NULL };
	yajl_val e = json_get(v, "errors"), first = NULL;
	const char *code = "missing_result", *msg = "no result for this id";

	if (status != NULL && strcmp(status, "expired") == 0) {
		j->miss = RESULT_EXPIRED;
		code = "batch_expired";
		msg = "the batch expired before this request ran";
	} else if (status != NULL && inlist(status, cancelled)) {
		j->miss = RESULT_CANCELED;
		code = "batch_cancelled";
		msg = "the batch was cancelled before this request ran";
	} else
		j->miss = RESULT_MISSING;
	if (YAJL_IS_OBJECT(e))
		e = json_get(e, "data");
	if (YAJL_IS_ARRAY(e) && e->u.array.len > 0)
		first = e->u.array.values[0];
	else if (YAJL_IS_OBJECT(json_get(v, "error")))
		first = json_get(v, "error");
	if (json_str(first, "code") != NULL)
		code = json_str(first, "code");
	if (json_str(first, "message") != NULL)
		msg = json_str(first, "message");
	j->ecode = xstrdup(code);
	j->emsg = xstrdup(msg);
}

/*
 * A job record: its file's requests are claimed by it (the file is
 * indexed first when no -r file is the same file), then its results
 * files are read. "ended" false (or absent with a status that can still
 * change) leaves the requests without results pending.
 */
static void
take_job(struct rec *rc, const struct jsonl_reader *r, const char *line)
{
	static const char *const final[] = { "completed", "failed", "expired",
	    "cancelled", "canceled", "ended", NULL };
	yajl_val v = yajl_tree_parse(line, NULL, 0), res, ended;
	const char *file, *status;
	struct job *j;
	struct stat st;
	size_t i, f;
	uint32_t jn;

	res = json_get(v, "results");
	file = json_str(v, "file");
	if ((res != NULL && !YAJL_IS_NULL(res) && !YAJL_IS_ARRAY(res)) ||
	    (file == NULL && json_get(v, "file") != NULL &&
	    !YAJL_IS_NULL(json_get(v, "file")))) {
		qb_lwarn(r->name, r->lineno, "job record: \"file\" is not a string "
		    "or \"results\" not an array");
		yajl_tree_free(v);
		reject(rc);
		return;
	}
	rc->jobs = xreallocarray(rc->jobs, rc->njobs + 1, sizeof(*rc->jobs));
	j = &rc->jobs[rc->njobs++];
	jn = (uint32_t)rc->njobs;
	memset(j, 0, sizeof(*j));
	j->batch_id = xstrdup(json_str(v, "batch_id"));
	status = json_str(v, "status");
	ended = json_get(v, "ended");
	if (YAJL_IS_TRUE(ended) || YAJL_IS_FALSE(ended))
		j->ended = YAJL_IS_TRUE(ended);
	else
		j->ended = status != NULL && inlist(status, final);
	job_reason(j, v, status);
	qb_note(1, "job %s: %s, %s", j->batch_id, status ? status : "no status",
	    j->ended ? "ended" : "not ended");
	if (file != NULL) {
		f = rc->nfiles;
		if (stat(file, &st) == 0)
			for (f = 0; f < rc->nfiles; f++)
				if (rc->files[f].ino == st.st_ino &&
				    rc->files[f].dev == st.st_dev)
					break;
		if (f < rc->nfiles) {
			for (i = 0; i < rc->ids.n; i++)
				if (rc->req[i].file == f)
					rc->req[i].job = jn;
		} else if (index_file(rc, file, jn) == -1) {
			qb_lwarn(r->name, r->lineno, "job %s: %s: %s", j->batch_id,
			    file, strerror(errno));
			rc->jobs[jn - 1].unread = rc->unread = 1;
		}
	}
	for (i = 0; YAJL_IS_ARRAY(res) && i < res->u.array.len; i++) {
		file = YAJL_IS_STRING(res->u.array.values[i]) ?
		    res->u.array.values[i]->u.string : NULL;
		if (file == NULL || read_results(rc, file, jn) == -1) {
			qb_lwarn(r->name, r->lineno, "job %s: results %s: %s; its "
			    "requests stay pending", rc->jobs[jn - 1].batch_id,
			    file ? file : "(not a string)",
			    file ? strerror(errno) : "skipped");
			rc->jobs[jn - 1].unread = rc->unread = 1;
		}
	}
	yajl_tree_free(v);
}

/* One line of an operand: a result or a job record. */
static void
take_line(struct rec *rc, struct jsonl_reader *r, const char *line, size_t len)
{
	const struct json_scan *s = &rc->rp.line;
	struct result res;
	char err[256];
	int rv;

	if ((rv = result_parse(&rc->rp, line, len, &res, err, sizeof(err))) == 0) {
		take_result(rc, r, &res, 0);
		return;
	}
	if (rv == 1 && json_sval(s, json_find(s, -1, "batch_id")) != NULL &&
	    json_find(s, -1, "id") < 0) {
		take_job(rc, r, line);
		return;
	}
	if (rv == 1 && (json_find(s, -1, "body") >= 0 ||
	    json_find(s, -1, "params") >= 0))
		snprintf(err, sizeof(err), "a request, not a result (requests "
		    "go with -r)");
	else if (rv == 1)
		snprintf(err, sizeof(err), "neither a result nor a job record");
	qb_lwarn(r->name, r->lineno, "%s", err);
	reject(rc);
}

/* At the end: retry for each request without a result, in request order,
 * unless its job has not ended or its results could not be read. */
static void
finish(struct rec *rc)
{
	struct result m;
	const struct job *j;
	size_t i;

	for (i = 0; i < rc->ids.n; i++) {
		if (rc->req[i].state != 0)
			continue;
		j = rc->req[i].job ? &rc->jobs[rc->req[i].job - 1] : NULL;
		if (j != NULL && (!j->ended || j->unread)) {
			rc->npending++;
			continue;
		}
		memset(&m, 0, sizeof(m));
		m.kind = RESULT_QB;
		m.status = j ? j->miss : RESULT_MISSING;
		m.outcome = OUTCOME_RETRY;
		m.http_status = m.in_tok = m.out_tok = -1;
		m.ecode = j ? j->ecode : "missing_result";
		m.emsg = j ? j->emsg : "no result for this id";
		emit(rc, i, &m, j ? j->batch_id : NULL);
	}
}

static void
load_prices(struct rec *rc, const char *path)
{
	struct jsonl_reader r;
	struct price *p;
	yajl_val v, in, out;
	const char *model;
	char *line;
	size_t len;
	int ch;

	if (jsonl_open(&r, path) == -1)
		qb_diesys(QB_EX_NOINPUT, "%s", path);
	while ((ch = jsonl_next(&r, &line, &len)) != JSONL_EOF) {
		if (ch == JSONL_IOERR)
			qb_die(QB_EX_IOERR, "%s: cannot read the prices", r.name);
		if (ch == JSONL_BAD || (v = jsonl_tree(&r, line, len)) == NULL) {
			reject(rc);
			continue;
		}
		model = json_str(v, "model");
		in = json_get(v, "input_per_mtok");
		out = json_get(v, "output_per_mtok");
		if (model == NULL || !YAJL_IS_DOUBLE(in) || !YAJL_IS_DOUBLE(out) ||
		    YAJL_GET_DOUBLE(in) < 0 || YAJL_GET_DOUBLE(out) < 0) {
			qb_lwarn(r.name, r.lineno, "expected \"model\" and numbers "
			    "\"input_per_mtok\", \"output_per_mtok\" >= 0");
			reject(rc);
		} else if (price_find(rc, model) >= 0 &&
		    strcmp(rc->prices[price_find(rc, model)].model, model) == 0) {
			qb_lwarn(r.name, r.lineno, "second price for model \"%s\"; "
			    "the first one stands", model);
			reject(rc);
		} else {
			rc->prices = xreallocarray(rc->prices, rc->nprices + 1,
			    sizeof(*rc->prices));
			p = &rc->prices[rc->nprices++];
			p->model = xstrdup(model);
			p->in = YAJL_GET_DOUBLE(in);
			p->out = YAJL_GET_DOUBLE(out);
		}
		yajl_tree_free(v);
	}
	jsonl_close(&r);
}

static void
summary(const struct rec *rc)
{
	char c[64] = "";
	size_t n;

	if (rc->nprices > 0) {
		n = (size_t)snprintf(c, sizeof(c), "; cost $%.8f", rc->cost);
		while (n > 0 && c[n - 1] == '0' && c[n - 3] != '.')
			c[--n] = '\0';
	}
	qb_warn("%zu requests: %lu done, %lu retry, %lu dead, %lu pending; "
	    "%lu unknown, %lu duplicate; tokens in %llu out %llu%s", rc->ids.n,
	    rc->nout[OUTCOME_DONE], rc->nout[OUTCOME_RETRY],
	    rc->nout[OUTCOME_DEAD], rc->npending, rc->nunknown, rc->ndup,
	    rc->tin, rc->tout, c);
}

/* Free what rc holds, so that leak checkers see none at exit. */
static void
rec_free(struct rec *rc)
{
	size_t i;

	for (i = 0; i < rc->nfiles; i++) {
		if (rc->files[i].spool != NULL)
			fclose(rc->files[i].spool);
		else
			close(rc->files[i].fd);
		free(rc->files[i].name);
	}
	for (i = 0; i < rc->njobs; i++) {
		free(rc->jobs[i].batch_id);
		free(rc->jobs[i].ecode);
		free(rc->jobs[i].emsg);
	}
	for (i = 0; i < rc->nprices; i++)
		free(rc->prices[i].model);
	free(rc->files);
	free(rc->jobs);
	free(rc->prices);
	free(rc->req);
	free(rc->mprice);
	free(rc->o->req);
	idmap_free(&rc->ids);
	idmap_free(&rc->models);
	buf_free(&rc->scan.strs);
	buf_free(&rc->rl);
	result_parser_free(&rc->rp);
	yajl_gen_free(rc->g);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "prices", required_argument, NULL, 'P' },
		{ "requests", required_argument, NULL, 'r' },
		{ "strict", no_argument, NULL, 'S' },
		{ "unbuffered", no_argument, NULL, 'u' },
		QB_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	static char *stdin_only[] = { "-" };
	struct opts o;
	struct rec rc;
	struct jsonl_reader r;
	struct rlimit rl;
	char *line, **files;
	size_t len;
	int ch, k, nfile, nstdin = 0, noinput = 0;

	qb_setprog(argv[0]);
	memset(&o, 0, sizeof(o));
	while ((ch = getopt_long(argc, argv, "hqr:uVv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'P':
			o.prices = optarg;
			break;
		case 'r':
			o.req = xreallocarray(o.req, (size_t)o.nreq + 1,
			    sizeof(*o.req));
			o.req[o.nreq++] = optarg;
			nstdin += strcmp(optarg, "-") == 0;
			break;
		case 'S':
			o.strict = 1;
			break;
		case 'u':
			o.unbuffered = 1;
			break;
		default:
			qb_common_opt(ch, usage, help);
		}
	}
	files = argc > optind ? argv + optind : stdin_only;
	nfile = argc > optind ? argc - optind : 1;
	for (k = 0; k < nfile; k++) {
		if (strcmp(files[k], "-") == 0)
			nstdin++;
		else if (access(files[k], R_OK) == -1)
			qb_diesys(QB_EX_NOINPUT, "%s", files[k]);
	}
	if (nstdin > 1)
		qb_die(QB_EX_USAGE, "standard input can be read only once "
		    "(name files for the results when -r - is given)");
	/* One descriptor per request file stays open until the end. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	memset(&rc, 0, sizeof(rc));
	rc.o = &o;
	rc.g = jout_new();
	idmap_init(&rc.ids);
	idmap_init(&rc.models);
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (o.prices != NULL)
		load_prices(&rc, o.prices);
	for (k = 0; k < o.nreq; k++)
		if (index_file(&rc, o.req[k], 0) == -1)
			qb_diesys(QB_EX_NOINPUT, "%s", o.req[k]);
	for (k = 0; k < nfile; k++) {
		if (jsonl_open(&r, files[k]) == -1) {
			qb_warnsys("%s", files[k]);
			noinput = 1;
			continue;
		}
		while ((ch = jsonl_next(&r, &line, &len)) != JSONL_EOF) {
			if (ch == JSONL_IOERR) {
				rc.ioerr = 1;
				break;
			}
			if (ch == JSONL_BAD)
				reject(&rc);
			else
				take_line(&rc, &r, line, len);
		}
		jsonl_close(&r);
	}
	finish(&rc);
	summary(&rc);
	qb_close_stdout();
	if (rc.ioerr)
		k = QB_EX_IOERR;
	else if (noinput)
		k = QB_EX_NOINPUT;
	else if (rc.nbad > 0 || rc.unread || rc.nout[OUTCOME_RETRY] > 0 ||
	    rc.nout[OUTCOME_DEAD] > 0)
		k = QB_EX_PARTIAL;
	else
		k = QB_EX_OK;
	rec_free(&rc);
	return k;
}
