/*
 * qb-pack: item records (or provider-native request lines) in, provider
 * batch input files out, one pack record per file on stdout.
 *
 * Reads: id|custom_id, body|params, endpoint|url, method.
 * Writes files of {"custom_id","method","url","body"} lines (OpenAI) or
 * {"custom_id","params"} lines (Anthropic), one (endpoint, model) each,
 * split at the provider's request and byte caps or smaller ones given.
 * Request bodies are validated and copied through as bytes, never rebuilt,
 * save for CR bytes between their tokens: output is LF only.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/afile.h"
#include "base/buf.h"
#include "base/exits.h"
#include "base/hwrite.h"
#include "base/idmap.h"
#include "base/msg.h"
#include "base/num.h"
#include "base/sha256.h"
#include "base/xmem.h"
#include "json/jout.h"
#include "json/jscan.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "opt.h"
#include "provider/provider.h"
#include "record/item.h"
#include "record/retryset.h"

static const char usage[] =
    "[-hqVv] [--strict] -d dir [-b bytes] [-e endpoint]\n"
    "       [--max-line-bytes bytes] [-n requests] [-p provider] [file ...]";
static const char help[] =
    "  -b, --max-bytes N      split files at N bytes (default: provider cap)\n"
    "  -d, --dir DIR          write batch files into DIR (required)\n"
    "  -e, --endpoint PATH    endpoint for items that name none (default\n"
    "                         /v1/chat/completions; anthropic: /v1/messages)\n"
    "      --max-line-bytes N refuse lines over N bytes (default:\n"
    "                         QB_MAX_LINE_BYTES, else no cap)\n"
    "  -n, --max-requests N   split files at N requests (default: provider cap)\n"
    "  -p, --provider NAME    openai (default), azure or anthropic\n"
    "      --strict           stop at the first bad line (exit 65)\n"
    "  -h, -V, -v, -q         help, version, verbose, quiet\n";

struct opts {
	const char		*dir;
	const char		*endpoint;
	const struct provider	*prov;
	long long		 max_requests;
	long long		 max_bytes;
	long long		 max_line;	/* --max-line-bytes; 0: none */
	long long		 longest;	/* longest line packed, newline not counted */
	int			 strict;
	char			*absdir;	/* dir, named absolutely; owned */
	char			**files;	/* the operands */
	int			 nfile;
};

/*
 * At most this many files are open at once (each has 2 MiB of buffers and
 * a writer thread); past it, the group idle longest is finished early.
 */
#define GROUPS_OPEN_MAX 16

/*
 * One open output file per (endpoint, model, source): the source is the
 * batch a retry outcome came from ("" for any other item), so that the
 * retries of one batch pack into files of their own, the same files each
 * time they are packed, and qb-submit -l knows them by their digest.
 */
struct group {
	char		*endpoint;
	char		*model;
	char		*source;
	size_t		 idx;		/* its place in packer.g */
	struct afile	 af;
	struct hwrite	 hw;		/* hashes and writes af's file */
	int		 open;
	long long	 requests;
	long long	 bytes;
	long long	 inputs;	/* embedding inputs, where the provider caps them */
	long long	 tokens;	/* estimated prompt tokens */
	long long	 retries;	/* requests from retry outcomes */
	unsigned long	 used;		/* packer tick of its last line */
};

struct packer {
	struct opts	*o;
	struct group	**g;		/* each its own allocation: threads hold &g->hw */
	size_t		 ng;
	size_t		 nopen;		/* groups with an open file */
	unsigned long	 tick;
	struct idmap	 ids;
	unsigned long	*firstline;	/* line of each id's first use */
	char		**firstfile;
	struct jscan scan;
	yajl_gen	 gen;		/* batch file lines */
	yajl_gen	 rec;		/* pack records */
	struct buf	 nocr;		/* a body without its CR bytes */
	struct buf	 key;		/* id, newline, source: for pk->ids */
	struct retryset	 rs;		/* retries with a source, held to the end */
	unsigned long	 nfinal;	/* final outcomes read (not packed) */
	unsigned long	 nin, nbad, nfiles, nblank;
};

/* Lower-case letters, digits, '.', '-' only: for file names. */
static void
slug(struct buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
		    c == '-')
			buf_putc(b, c);
		else if (c >= 'A' && c <= 'Z')
			buf_putc(b, c - 'A' + 'a');
		else if (b->len > 0 && b->p[b->len - 1] != '-')
			buf_putc(b, '-');
	}
	while (b->len > 0 && b->p[b->len - 1] == '-')
		b->len--;
	b->p[b->len] = '\0';
}

static void
group_start(struct packer *pk, struct group *g)
{
	struct buf path = BUF_INIT;

	buf_printf(&path, "%s/.qb-pack", pk->o->dir);
	if (afile_open(&g->af, path.p) == -1 ||
	    hwrite_open(&g->hw, fileno(g->af.fp)) == -1)
		qb_diesys(QB_EX_IOERR, "%s: cannot create a batch file", pk->o->dir);
	buf_free(&path);
	g->open = 1;
	pk->nopen++;
	g->requests = g->bytes = g->inputs = g->tokens = g->retries = 0;
}

/* Close the group's file: fsync, rename to its content name, print the pack record. */
static void
group_finish(struct packer *pk, struct group *g)
{
	struct buf path = BUF_INIT;
	char hex[65];
	yajl_gen y = pk->rec;

	if (!g->open)
		return;
	if (hwrite_close(&g->hw, hex) == -1)
		qb_diesys(QB_EX_IOERR, "%s: write error", g->af.tmp);
	buf_printf(&path, "%s/%s.", pk->o->dir, pk->o->prov->name);
	slug(&path, g->endpoint[0] == '/' ? g->endpoint + 1 : g->endpoint);
	buf_putc(&path, '.');
	slug(&path, g->model);
	buf_printf(&path, ".%.16s.jsonl", hex);
	if (afile_commit(&g->af, path.p) == -1)
		qb_diesys(QB_EX_IOERR, "%s: cannot write", path.p);
	g->open = 0;
	pk->nopen--;
	pk->nfiles++;
	jout_open(y);
	jout_kstr(y, "file", path.p);
	jout_kstr(y, "provider", pk->o->prov->name);
	jout_kstr(y, "endpoint", g->endpoint);
	jout_kstr(y, "model", g->model);
	jout_kint(y, "requests", g->requests);
	jout_kint(y, "bytes", g->bytes);
	jout_kint(y, "tokens", g->tokens);
	jout_kint(y, "retries", g->retries);
	jout_kstr(y, "sha256", hex);
	jout_close(y);
	/* A pack record is handed on as soon as its file is complete. */
	if (jout_line(y, stdout) == -1 || fflush(stdout) == EOF)
		qb_diesys(QB_EX_IOERR, "write error on standard output");
	qb_note(1, "%s: %lld request%s, %lld bytes", path.p, g->requests,
	    g->requests == 1 ? "" : "s", g->bytes);
	buf_free(&path);
}

/* The open group that took a line longest ago. */
static struct group *
group_lru(struct packer *pk)
{
	struct group *best = NULL;
	size_t i;

	for (i = 0; i < pk->ng; i++)
		if (pk->g[i]->open && (best == NULL || pk->g[i]->used < best->used))
			best = pk->g[i];
	return best;
}

static struct group *
group_get(struct packer *pk, const char *endpoint, const char *model,
    const char *source)
{
	size_t i;
	struct group *g;

	for (i = 0; i < pk->ng; i++)
		if (strcmp(pk->g[i]->endpoint, endpoint) == 0 &&
		    strcmp(pk->g[i]->model, model) == 0 &&
		    strcmp(pk->g[i]->source, source) == 0)
			return pk->g[i];
	pk->g = xreallocarray(pk->g, pk->ng + 1, sizeof(*pk->g));
	g = pk->g[pk->ng] = xcalloc(1, sizeof(*g));
	g->idx = pk->ng++;
	g->endpoint = xstrdup(endpoint);
	g->model = xstrdup(model);
	g->source = xstrdup(source);
	return g;
}

/* Report why the line at r is refused; returns -1. */
static int
bad(struct jsonl_reader *r, const char *fmt, const char *a, const char *b)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, a, b);
	qb_lwarn(r->name, r->lineno, "%s", msg);
	return -1;
}

/* Forget the batch line being built. */
static void
gen_reset(struct packer *pk)
{
	yajl_gen_clear(pk->gen);
	yajl_gen_reset(pk->gen, NULL);
}

/*
 * Write the batch line out (n bytes, no newline) into group g's file,
 * first finishing the file it would take past a cap: a request of
 * ninputs embedding inputs and about tokens prompt tokens, from a retry
 * outcome if retry.
 */
static void
put(struct packer *pk, struct group *g, const char *out, size_t n,
    long ninputs, long long tokens, int retry)
{
	const struct provider *pv = pk->o->prov;
	/*
	 * The retries of one batch fitted in its file: split only at the
	 * provider's caps, so that they never go into files that part of
	 * them makes again differently once some have their answers.
	 */
	long long maxr = *g->source ? pv->max_requests : pk->o->max_requests;
	long long maxb = *g->source ? pv->max_bytes : pk->o->max_bytes;

	if (g->open && (g->requests + 1 > maxr ||
	    g->bytes + (long long)n + 1 > maxb ||
	    g->inputs + ninputs > pv->max_inputs))
		group_finish(pk, g);
	if (!g->open) {
		if (pk->nopen == GROUPS_OPEN_MAX)
			group_finish(pk, group_lru(pk));
		group_start(pk, g);
	}
	g->used = ++pk->tick;
	if (hwrite_put(&g->hw, out, n) == -1 || hwrite_put(&g->hw, "\n", 1) == -1)
		qb_diesys(QB_EX_IOERR, "%s: write error", g->af.tmp);
	g->requests++;
	g->bytes += (long long)n + 1;
	g->inputs += ninputs;
	g->tokens += tokens;
	/* A retry outcome of qb-reconcile, packed again (qb-submit reads it). */
	g->retries += retry;
}

/* retryset_each callback: a held retry goes into its group's file. */
static int
put_retry(void *arg, size_t group, const char *line, size_t len, long ninputs,
    long long tokens)
{
	struct packer *pk = arg;

	put(pk, pk->g[group], line, len, ninputs, tokens, 1);
	return 0;
}

/* Only the request body's own members matter below the top level. */
static const char *const bodykeys[] = { "body", "params", NULL };

/*
 * A final outcome (done or dead) is not an item: it is skipped, and
 * keeps its id's retries from being packed again (retryset.h). Returns 1
 * if the line scanned in pk->scan is one, else 0.
 */
static int
final_outcome(struct packer *pk, const struct item *item)
{
	const struct jscan *s = &pk->scan;
	int iout;

	if (item->outcome == NULL || (strcmp(item->outcome, "done") != 0 &&
	    strcmp(item->outcome, "dead") != 0) ||
	    (iout = jscan_find(s, -1, "id")) < 0 || jscan_sval(s, iout) == NULL)
		return 0;
	retryset_final(&pk->rs, jscan_sval(s, iout), s->span[iout].slen);
	pk->nfinal++;
	return 1;
}

/*
 * The embedding inputs of item (of line, at r) to endpoint, where the
 * provider caps them per file, else 0; -1 past the cap, reported.
 */
static long
inputs(struct packer *pk, struct jsonl_reader *r, const char *line,
    const struct item *item, const char *endpoint)
{
	const struct jscan *s = &pk->scan;
	const struct provider *pv = pk->o->prov;
	char num[32];
	long n = 1;
	int iin;

	if (pv->max_inputs <= 0 || strcmp(endpoint, pv->inputs_endpoint) != 0)
		return 0;
	iin = jscan_find(s, item->ibody, "input");
	if (iin >= 0 && s->span[iin].type == JT_ARRAY)
		n = jscan_array_len(line + s->span[iin].off, s->span[iin].len);
	if (n > pv->max_inputs) {
		snprintf(num, sizeof(num), "%ld", n);
		return bad(r, "%s embedding inputs exceed the per-file cap for "
		    "id \"%s\"", num, item->id);
	}
	return n;
}

/*
 * The line of item (line, at r) as it goes into the batch file, built
 * in pk->gen: its body copied as bytes. Returns 0, or -1 after reporting
 * a byte the providers do not take.
 */
static int
batch_line(struct packer *pk, struct jsonl_reader *r, const char *line,
    const struct item *item, const char *endpoint)
{
	const struct json_span *sp = &pk->scan.span[item->ibody];
	const char *body = line + sp->off;
	char at[32];
	size_t n = sp->len, k;

	jout_open(pk->gen);
	jout_kstr(pk->gen, "custom_id", item->id);
	if (pk->o->prov->line_format == PROVIDER_LINE_OPENAI) {
		jout_kstr(pk->gen, "method", "POST");
		jout_kstr(pk->gen, "url", endpoint);
		jout_key(pk->gen, "body");
	} else
		jout_key(pk->gen, "params");
	/*
	 * The scan refused raw control bytes inside strings, so a CR in the
	 * body is whitespace between tokens: dropping it keeps the meaning,
	 * and hosts that require LF endings get no CR at all. yajl also
	 * takes VT and FF there, which RFC 8259 does not, nor do the
	 * providers' parsers: one such line would fail the whole batch.
	 * (The line has no NUL: strcspn stops at the body's end or soon
	 * after it.)
	 */
	if (strcspn(body, "\r\v\f") < n) {
		buf_reset(&pk->nocr);
		for (k = 0; k < n; k++)
			if (body[k] == '\v' || body[k] == '\f') {
				snprintf(at, sizeof(at), "%zu", (size_t)(body - line) + k + 1);
				return bad(r, "byte %s: %s is not JSON whitespace", at,
				    body[k] == '\v' ? "a vertical tab" : "a form feed");
			} else if (body[k] != '\r')
				buf_putc(&pk->nocr, body[k]);
		body = pk->nocr.p;
		n = pk->nocr.len;
	}
	jout_raw(pk->gen, body, n);
	jout_close(pk->gen);
	return 0;
}

/*
 * The batch line of id (n bytes at out) within the caps: as qb-reconcile
 * will index it (it may be longer than the item was: a "url" added from
 * -e), and within --max-line-bytes and the file's byte cap. Returns 0, or
 * -1 after reporting.
 */
static int
line_fits(struct packer *pk, struct jsonl_reader *r, const unsigned char *out,
    size_t n, const char *id)
{
	char err[256];

	if (jsonl_fits((const char *)out, n, err, sizeof(err)) == -1)
		return bad(r, "batch line: %s for id \"%s\"", err, id);
	/* One test for both caps; which one it was matters only here. */
	if ((long long)n <= pk->o->longest)
		return 0;
	if (pk->o->max_line > 0 && (long long)n > pk->o->max_line) {
		snprintf(err, sizeof(err), "line of %zu bytes exceeds the line "
		    "cap of %lld bytes", n, pk->o->max_line);
		return bad(r, "%s for id \"%s\"", err, id);
	}
	snprintf(err, sizeof(err), "%zu bytes with its newline) exceeds the "
	    "per-file byte cap (-b) of %lld", n + 1, pk->o->max_bytes);
	return bad(r, "line (%s bytes for id \"%s\"", err, id);
}

/*
 * Refuse a duplicate only once the line is otherwise good. An id may come
 * back once from each batch it was retried from (source, else ""): those
 * go to files of their own (struct group). Notes where the id came first;
 * returns 0, or -1 after reporting.
 */
static int
first_use(struct packer *pk, struct jsonl_reader *r, const struct item *item,
    const char *source)
{
	char at[256];
	size_t idx;
	int isnew;

	buf_reset(&pk->key);
	buf_append(&pk->key, item->id, item->idlen);
	buf_putc(&pk->key, '\n');	/* no id holds one */
	buf_append(&pk->key, source, strlen(source));
	idx = idmap_put(&pk->ids, pk->key.p, pk->key.len, &isnew);
	if (!isnew) {
		snprintf(at, sizeof(at), "%s:%lu", pk->firstfile[idx],
		    pk->firstline[idx]);
		return bad(r, "duplicate custom_id \"%s\" (first at %s)",
		    item->id, at);
	}
	if ((idx & (idx - 1)) == 0) {
		pk->firstline = xreallocarray(pk->firstline, idx ? idx * 2 : 1,
		    sizeof(*pk->firstline));
		pk->firstfile = xreallocarray(pk->firstfile, idx ? idx * 2 : 1,
		    sizeof(*pk->firstfile));
	}
	pk->firstline[idx] = r->lineno;
	pk->firstfile[idx] = r->name;
	return 0;
}

/* Pack one line; returns 0, or -1 after reporting why it was refused. */
static int
pack_line(struct packer *pk, struct jsonl_reader *r, const char *line,
    size_t len)
{
	const struct jscan *s = &pk->scan;
	const struct json_span *b;
	const unsigned char *out;
	struct item item;
	const char *endpoint, *source;
	char err[256];
	struct group *g;
	long long tokens;
	long ninputs;
	size_t n;
	int retry, rc = -1;

	if (item_check(&pk->scan, line, len, pk->o->prov, &item, err,
	    sizeof(err)) == -1)
		return final_outcome(pk, &item) ? 0 : bad(r, "%s", err, NULL);
	endpoint = item.endpoint != NULL ? item.endpoint : pk->o->endpoint;
	if ((ninputs = inputs(pk, r, line, &item, endpoint)) < 0)
		return -1;
	retry = item.outcome != NULL && strcmp(item.outcome, "retry") == 0;
	source = retry ? jscan_sval(s, jscan_find(s, -1, "batch_id")) : NULL;
	if (source == NULL)
		source = "";
	if (batch_line(pk, r, line, &item, endpoint) == -1)
		goto out;
	yajl_gen_get_buf(pk->gen, &out, &n);
	if (line_fits(pk, r, out, n, item.id) == -1 ||
	    first_use(pk, r, &item, source) == -1)
		goto out;
	g = group_get(pk, endpoint, item.model, source);
	b = &s->span[item.ibody];
	tokens = (jscan_string_chars(line + b->off, b->len) + 3) / 4;
	if (*source == '\0')
		put(pk, g, (const char *)out, n, ninputs, tokens, retry);
	/* Sorted and sifted once the whole input is read. */
	else if (retryset_add(&pk->rs, g->idx, item.id, item.idlen,
	    (const char *)out, n, ninputs, tokens) == -1)
		qb_diesys(QB_EX_IOERR, "cannot hold retries in a temporary file");
	rc = 0;
out:
	gen_reset(pk);
	return rc;
}

static void
abort_all(struct packer *pk)
{
	char hex[65];
	size_t i;

	for (i = 0; i < pk->ng; i++)
		if (pk->g[i]->open) {
			hwrite_close(&pk->g[i]->hw, hex);
			afile_abort(&pk->g[i]->af);
		}
}

/*
 * The caps each file and line is split and checked at, from the
 * provider's and the options; and the directory, named absolutely.
 * Returns 0 or the status to exit with.
 */
static int
caps(struct opts *o)
{
	int rc;

	if (o->endpoint == NULL)
		o->endpoint = o->prov->endpoint;
	/* The provider's caps bound what the user may ask for. */
	if (o->max_requests == 0 || o->max_requests > o->prov->max_requests)
		o->max_requests = o->prov->max_requests;
	if (o->max_bytes == 0 || o->max_bytes > o->prov->max_bytes)
		o->max_bytes = o->prov->max_bytes;
	/* A line must also fit, with its newline, in an empty file. */
	o->longest = o->max_bytes - 1;
	if (o->max_line > 0 && o->max_line < o->longest)
		o->longest = o->max_line;
	if ((rc = afile_need_dir(o->dir)) != 0)
		return rc;
	/* Records name files absolutely: cron runs the next tool elsewhere. */
	if ((o->absdir = realpath(o->dir, NULL)) == NULL)
		qb_diesys(QB_EX_OSERR, "%s", o->dir);
	o->dir = o->absdir;
	return 0;
}

/* The options into *o, checked; returns 0 or the status to exit with. */
static int
options(struct opts *o, int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "endpoint", required_argument, NULL, 'e' },
		{ "max-bytes", required_argument, NULL, 'b' },
		{ "max-line-bytes", required_argument, NULL, 'L' },
		{ "max-requests", required_argument, NULL, 'n' },
		{ "provider", required_argument, NULL, 'p' },
		{ "strict", no_argument, NULL, 'S' },
		QB_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	static char *stdin_only[] = { "-" };
	const char *errstr, *env, *pname = "openai";
	int ch;

	memset(o, 0, sizeof(*o));
	if ((env = getenv("QB_MAX_LINE_BYTES")) != NULL && *env != '\0') {
		o->max_line = num_bytes(env, 1LL << 50, &errstr);
		if (errstr != NULL)
			qb_die(QB_EX_CONFIG, "QB_MAX_LINE_BYTES \"%s\" is %s", env,
			    errstr);
	}
	while ((ch = getopt_long(argc, argv, "b:d:e:hn:p:qVv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'b':
			o->max_bytes = num_bytes(optarg, 1LL << 50, &errstr);
			if (errstr != NULL)
				qb_die(QB_EX_USAGE, "--max-bytes %s: %s", optarg, errstr);
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'e':
			o->endpoint = optarg;
			if (optarg[0] != '/')
				qb_die(QB_EX_USAGE, "--endpoint %s: not a path such as "
				    "/v1/chat/completions", optarg);
			break;
		case 'L':
			o->max_line = num_bytes(optarg, 1LL << 50, &errstr);
			if (errstr != NULL)
				qb_die(QB_EX_USAGE, "--max-line-bytes %s: %s", optarg,
				    errstr);
			break;
		case 'n':
			o->max_requests = num_strtonum(optarg, 1, 1LL << 40,
			    &errstr);
			if (errstr != NULL)
				qb_die(QB_EX_USAGE, "--max-requests %s: %s", optarg, errstr);
			break;
		case 'p':
			pname = optarg;
			break;
		case 'S':
			o->strict = 1;
			break;
		default:
			opt_common(ch, usage, help);
		}
	}
	if (o->dir == NULL)
		opt_usage(usage);
	if ((o->prov = provider_find(pname)) == NULL)
		qb_die(QB_EX_USAGE, "unknown provider \"%s\"", pname);
	o->files = argc > optind ? argv + optind : stdin_only;
	o->nfile = argc > optind ? argc - optind : 1;
	return caps(o);
}

/*
 * Pack the lines of path. The reader's name is handed on in *name (the
 * duplicate reports cite it). Returns 0; QB_EX_NOINPUT, reported, when
 * path cannot be opened (the other files go on); or, after removing the
 * files not yet complete, QB_EX_IOERR for a damaged input (a cut gzip
 * stream, a read error: it must not pass for a short one) or
 * QB_EX_DATAERR at the first bad line under --strict.
 */
static int
pack_file(struct packer *pk, const char *path, char **name)
{
	struct jsonl_reader r;
	struct jsonl_rec rec;
	int ch, rc = 0;

	if (jsonl_open(&r, path) == -1) {
		qb_warnsys("%s", path);
		return QB_EX_NOINPUT;
	}
	r.strict = pk->o->strict;
	while ((ch = jsonl_read(&r, &rec)) != JSONL_EOF) {
		if (ch == JSONL_IOERR) {
			abort_all(pk);
			rc = qb_fail(QB_EX_IOERR, "%s: input damaged; files not "
			    "yet complete were removed", r.name);
			break;
		}
		pk->nin++;
		if (ch == JSONL_LINE && pack_line(pk, &r, rec.line, rec.len) == -1)
			ch = jsonl_reject(&r);
		if (ch == JSONL_STOP) {
			abort_all(pk);
			rc = QB_EX_DATAERR;
			break;
		}
	}
	pk->nbad += r.nbad;
	pk->nblank += r.blank;
	if (r.blank > 0)
		qb_note(1, "%s: %lu blank lines skipped", r.name, r.blank);
	*name = r.name;
	r.name = NULL;
	jsonl_close(&r);
	return rc;
}

/* The held retries into their files, then every file finished. Returns
 * 0, or QB_EX_IOERR after removing the files not yet complete. */
static int
finish(struct packer *pk)
{
	size_t i;

	if (retryset_each(&pk->rs, put_retry, pk) == -1) {
		abort_all(pk);
		return qb_failsys(QB_EX_IOERR, "cannot read back the retries held");
	}
	for (i = 0; i < pk->ng; i++)
		group_finish(pk, pk->g[i]);
	return 0;
}

static void
summary(const struct packer *pk)
{
	qb_note(1, "%lu lines, %lu packed into %lu file%s, %lu rejected, "
	    "%lu final outcomes and %lu blank lines skipped", pk->nin,
	    pk->nin - pk->nbad - pk->nfinal, pk->nfiles, pk->nfiles == 1 ?
	    "" : "s", pk->nbad, pk->nfinal, pk->nblank);
}

static void
packer_init(struct packer *pk, struct opts *o)
{
	memset(pk, 0, sizeof(*pk));
	pk->o = o;
	pk->gen = jout_new();
	pk->rec = jout_new();
	pk->scan.deep = bodykeys;
	idmap_init(&pk->ids);
	retryset_init(&pk->rs);
}

static void
packer_free(struct packer *pk)
{
	size_t i;

	for (i = 0; i < pk->ng; i++) {
		free(pk->g[i]->endpoint);
		free(pk->g[i]->model);
		free(pk->g[i]->source);
		free(pk->g[i]);
	}
	free(pk->g);
	free(pk->firstline);
	free(pk->firstfile);
	idmap_free(&pk->ids);
	buf_free(&pk->scan.strs);
	buf_free(&pk->nocr);
	buf_free(&pk->key);
	retryset_free(&pk->rs);
	yajl_gen_free(pk->gen);
	yajl_gen_free(pk->rec);
}

int
main(int argc, char *argv[])
{
	struct opts o;
	struct packer pk;
	char **names;
	int k, rc, st = 0;

	qb_setprog(argv[0]);
	if ((rc = options(&o, argc, argv)) != 0)
		return rc;
	packer_init(&pk, &o);
	names = xcalloc((size_t)o.nfile, sizeof(*names));
	for (k = 0; k < o.nfile; k++) {
		st = pack_file(&pk, o.files[k], &names[k]);
		if (st == QB_EX_IOERR || st == QB_EX_DATAERR)
			break;
		if (st != 0)
			rc = st;	/* a file not opened; the others go on */
	}
	if (st != QB_EX_IOERR && st != QB_EX_DATAERR &&
	    (st = finish(&pk)) == 0) {
		summary(&pk);
		if (rc == QB_EX_OK && pk.nbad > 0)
			rc = QB_EX_PARTIAL;
	}
	packer_free(&pk);
	for (k = 0; k < o.nfile; k++)
		free(names[k]);
	free(names);
	free(o.absdir);
	if (st != 0) {
		fflush(stdout);		/* the pack records of files complete stand */
		return st;
	}
	opt_close_stdout();
	return rc;
}
