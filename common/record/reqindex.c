/*
 * reqindex.c: the request index. A line is scanned once when indexed
 * (jscan_parse, or a yajl tree when the scan cannot record it whole) and
 * read again by offset when an outcome needs it. For a done or dead
 * outcome only the extra members are needed, and reading the whole line
 * again would mean parsing every body twice; so the index also notes two
 * byte ranges of the line, before and after its biggest own member (the
 * body), that cover the extra members, and reads only those.
 * SPDX-License-Identifier: ISC
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/exits.h"
#include "base/msg.h"
#include "base/xmem.h"
#include "json/jout.h"
#include "json/jscan.h"
#include "json/jsonl.h"
#include "json/jtree.h"
#include "record/reqindex.h"

#define REQ_RANGES	4	/* req.x locates the extra members (extras()) */
#if JSCAN_SPANS_MAX > 64
#error "extras() keeps a bit per span in a uint64_t"
#endif

struct rfile {
	char	*name;
	FILE	*spool;		/* the unlinked copy of a .gz or piped input */
	int	 fd;		/* where its lines are re-read */
	dev_t	 dev;
	ino_t	 ino;
};

/* What the index needs from a request line. */
struct facts {
	const char	*id;
	size_t		 idlen;
	const char	*model;
	int		 flags, body;
	uint16_t	 x[4];
};

/* A line refused, and reported: 0, or under strict QB_EX_DATAERR, said. */
static int
reject(struct reqindex *ri)
{
	ri->nbad++;
	if (!ri->strict)
		return 0;
	return qb_fail(QB_EX_DATAERR, "stopped at the first rejected line "
	    "(--strict)");
}

void
reqindex_init(struct reqindex *ri, const char *const *own, int strict)
{
	/* Only the body's members are needed at depth 2 (its "model"): a
	 * "meta" of many members must not push a line off the scan path,
	 * where values are copied as bytes. */
	static const char *const deep[] = { "body", "params", NULL };

	memset(ri, 0, sizeof(*ri));
	ri->scan.deep = deep;
	idmap_init(&ri->ids);
	idmap_init(&ri->models);
	ri->own = own;
	ri->strict = strict;
}

void
reqindex_free(struct reqindex *ri)
{
	size_t i;

	for (i = 0; i < ri->nfiles; i++) {
		if (ri->files[i].spool != NULL)
			fclose(ri->files[i].spool);
		else
			close(ri->files[i].fd);
		free(ri->files[i].name);
	}
	free(ri->files);
	free(ri->req);
	idmap_free(&ri->ids);
	idmap_free(&ri->models);
	buf_free(&ri->scan.strs);
	buf_free(&ri->rl);
	memset(ri, 0, sizeof(*ri));
}

/*
 * Where the extra members of a line scanned whole lie: x[0], x[1] the
 * offset and length of a range holding those before its biggest own
 * member (the body), x[2], x[3] the distance from the end of the line and
 * the length of one holding those after it. A range runs from the first
 * extra member's key to the last one's value, own members between
 * included; length 0: none. Returns 0 if there are no extra members,
 * REQ_EXTRA if a number exceeds 16 bits (the line is then read whole),
 * else REQ_EXTRA | REQ_RANGES.
 */
static int
extras(const struct reqindex *ri, const char *line, size_t len, uint16_t x[4])
{
	const struct jscan *s = &ri->scan;
	const struct json_span *sp;
	size_t at, key, big = 0, a[4] = { 0, 0, 0, 0 }, r[4];
	uint64_t own = 0;	/* bit i: span i is an own member */
	int i, h, split = -1;

	for (i = 0; i < s->nspan; i++) {
		if ((sp = &s->span[i])->depth != 1 || !jscan_keyin(sp->key, ri->own))
			continue;
		own |= (uint64_t)1 << i;
		if (sp->len > big) {
			big = sp->len;
			split = i;
		}
	}
	at = (size_t)((const char *)memchr(line, '{', len) - line) + 1;
	for (i = 0; i < s->nspan; i++) {
		if ((sp = &s->span[i])->depth != 1)
			continue;
		key = at;
		while (line[key] != '\0' && strchr(" \t\r\n,", line[key]) != NULL)
			key++;
		at = sp->off + sp->len;
		if (own & (uint64_t)1 << i)
			continue;
		h = i > split ? 2 : 0;
		if (a[h + 1] == 0)
			a[h] = key;
		a[h + 1] = at;
	}
	if (a[1] == 0 && a[3] == 0)
		return 0;
	r[0] = a[0];
	r[1] = a[1] - a[0];
	r[2] = a[3] ? len - a[3] : 0;
	r[3] = a[3] - a[2];
	for (i = 0; i < 4; i++)
		if (r[i] > UINT16_MAX)
			return REQ_EXTRA;
	for (i = 0; i < 4; i++)
		x[i] = (uint16_t)r[i];
	return REQ_EXTRA | REQ_RANGES;
}

/*
 * The facts of a request line. jscan_parse records at most JSCAN_SPANS_MAX
 * members at depths 1 and 2 and no key over 71 bytes; a line beyond that
 * is read as a yajl tree instead, returned in *tree for the caller to free.
 */
static void
facts(const struct reqindex *ri, const char *line, size_t len,
    struct facts *f, yajl_val *tree)
{
	const struct jscan *s = &ri->scan;
	yajl_val v, id, body;
	size_t i;
	int iid, ib;

	memset(f, 0, sizeof(*f));
	*tree = NULL;
	if (jscan_whole(s)) {
		if ((iid = jscan_find(s, -1, "custom_id")) < 0)
			iid = jscan_find(s, -1, "id");
		f->id = jscan_sval(s, iid);
		f->idlen = f->id ? s->span[iid].slen : 0;
		if ((ib = jscan_find(s, -1, "body")) < 0 &&
		    (ib = jscan_find(s, -1, "params")) >= 0)
			f->flags |= REQ_ANTHROPIC;
		f->body = ib >= 0;
		if (ib >= 0)
			f->model = jscan_sval(s, jscan_find(s, ib, "model"));
		f->flags |= extras(ri, line, len, f->x);
		return;
	}
	if ((*tree = v = jtree_parse0(line)) == NULL)
		return;
	if ((id = jtree_get(v, "custom_id")) == NULL)
		id = jtree_get(v, "id");
	f->id = YAJL_IS_STRING(id) ? id->u.string : NULL;
	f->idlen = f->id ? strlen(f->id) : 0;
	if ((body = jtree_get(v, "body")) == NULL &&
	    (body = jtree_get(v, "params")) != NULL)
		f->flags |= REQ_ANTHROPIC;
	f->body = body != NULL;
	f->model = jtree_str(body, "model");
	for (i = 0; i < v->u.object.len; i++)
		if (!jscan_keyin(v->u.object.keys[i], ri->own))
			f->flags |= REQ_EXTRA;
}

static uint16_t
model_index(struct reqindex *ri, const char *model)
{
	int isnew;

	if (model == NULL || ri->models.n >= UINT16_MAX - 1)
		return 0;
	return (uint16_t)(idmap_put(&ri->models, model, strlen(model),
	    &isnew) + 1);
}

/* Add a request for the line of file f at offset off with facts ft. */
static void
add(struct reqindex *ri, size_t idx, const struct facts *ft,
    const struct jsonl_reader *r, size_t len, size_t f, uint64_t off,
    uint32_t tag)
{
	struct req *q;

	if ((idx & (idx - 1)) == 0)
		ri->req = xreallocarray(ri->req, idx ? idx * 2 : 1,
		    sizeof(*ri->req));
	q = &ri->req[idx];
	memset(q, 0, sizeof(*q));
	q->offlo = (uint32_t)off;
	q->offhi = (uint16_t)(off >> 32);
	q->len = (uint32_t)len;
	q->line = (uint32_t)r->lineno;
	q->tag = tag;
	q->file = (uint16_t)f;
	q->flags = (uint8_t)ft->flags;
	q->model = model_index(ri, ft->model);
	memcpy(q->x, ft->x, sizeof(q->x));
}

/*
 * Index one line of file f at offset off. *kept is 1 if the line is now
 * in the index (a spool must keep it), else 0. Returns 0, or reject's
 * status.
 */
static int
index_line(struct reqindex *ri, struct jsonl_reader *r, const char *line,
    size_t len, size_t f, uint64_t off, uint32_t tag, int *kept)
{
	struct facts ft;
	yajl_val tree = NULL;
	struct req *q;
	char err[256];
	int isnew, rc = 0;
	size_t idx;

	*kept = 0;
	/*
	 * Lines past what jscan_parse records are read as trees: bound them,
	 * by the limits qb-pack and qb-submit --sync check too.
	 */
	if (jscan_parse(&ri->scan, line, len, err, sizeof(err)) == -1 ||
	    jsonl_fits(line, len, err, sizeof(err)) == -1) {
		qb_lwarn(r->name, r->lineno, "%s", err);
		return reject(ri);
	}
	facts(ri, line, len, &ft, &tree);
	if (ft.id == NULL || ft.idlen == 0 || memchr(ft.id, '\0', ft.idlen)) {
		qb_lwarn(r->name, r->lineno, "no string \"custom_id\" or \"id\"");
		rc = reject(ri);
	} else if (!ft.body) {
		qb_lwarn(r->name, r->lineno, "no \"body\" or \"params\" for id \"%s\"",
		    ft.id);
		rc = reject(ri);
	} else if (idx = idmap_put(&ri->ids, ft.id, ft.idlen, &isnew), !isnew) {
		q = &ri->req[idx];
		if (tag != 0 && q->file != f)
			q->tag = tag;
		else {
			qb_lwarn(r->name, r->lineno, "duplicate id \"%s\" (first at "
			    "%s:%lu)", ft.id, ri->files[q->file].name,
			    (unsigned long)q->line);
			rc = reject(ri);
		}
	} else {
		add(ri, idx, &ft, r, len, f, off, tag);
		*kept = 1;
	}
	yajl_tree_free(tree);
	return rc;
}

/*
 * File f of the index for path, read by r: where its lines are read
 * again, a plain regular file in place, other input from an unlinked copy
 * in TMPDIR (rf->spool). Returns 0, or QB_EX_OSERR, reported.
 */
static int
rfile_open(struct reqindex *ri, const char *path, const struct jsonl_reader *r)
{
	struct rfile *rf;
	struct stat st;
	struct buf tpath = BUF_INIT;
	unsigned char magic[2];
	const char *tmp = getenv("TMPDIR");
	int fd = -1, rc = 0;

	ri->files = xreallocarray(ri->files, ri->nfiles + 1, sizeof(*ri->files));
	rf = &ri->files[ri->nfiles];
	memset(rf, 0, sizeof(*rf));
	rf->name = xstrdup(r->name);
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
		buf_printf(&tpath, "%s/%s.XXXXXX", tmp != NULL && *tmp != '\0' ?
		    tmp : "/tmp", qb_prog());
		if ((fd = mkstemp(tpath.p)) == -1 ||
		    (rf->spool = fdopen(fd, "w+")) == NULL) {
			rc = qb_failsys(QB_EX_OSERR, "%s: cannot create a temporary "
			    "file", tpath.p);
			if (fd != -1) {
				unlink(tpath.p);
				close(fd);
			}
			free(rf->name);
			buf_free(&tpath);
			return rc;
		}
		unlink(tpath.p);
		buf_free(&tpath);
	}
	rf->fd = fd;
	ri->nfiles++;
	return 0;
}

/* Index every line of r as file f (rfile_open's); returns 0 or a status. */
static int
index_lines(struct reqindex *ri, struct jsonl_reader *r, size_t f,
    uint32_t tag)
{
	struct rfile *rf = &ri->files[f];
	struct jsonl_rec rec;
	uint64_t off, soff = 0;
	int ch, kept, rc;

	while ((ch = jsonl_read(r, &rec)) != JSONL_EOF) {
		if (ch == JSONL_IOERR)
			return qb_fail(QB_EX_IOERR, "%s: cannot index the requests",
			    r->name);
		if (ch == JSONL_BAD) {
			if ((rc = reject(ri)) != 0)
				return rc;
			continue;
		}
		if ((off = rf->spool ? soff : r->off) >> 48 != 0)
			return qb_fail(QB_EX_SOFTWARE, "%s: over 256 TB", r->name);
		if ((rc = index_line(ri, r, rec.line, rec.len, f, off, tag,
		    &kept)) != 0)
			return rc;
		if (!kept || rf->spool == NULL)
			continue;
		if (fwrite(rec.line, 1, rec.len, rf->spool) != rec.len ||
		    putc('\n', rf->spool) == EOF)
			return qb_failsys(QB_EX_IOERR, "%s: cannot write a "
			    "temporary copy", r->name);
		soff += rec.len + 1;
	}
	if (rf->spool != NULL && fflush(rf->spool) == EOF)
		return qb_failsys(QB_EX_IOERR, "%s: cannot write a temporary copy",
		    r->name);
	return 0;
}

int
reqindex_file(struct reqindex *ri, const char *path, uint32_t tag)
{
	struct jsonl_reader r;
	size_t f = ri->nfiles;
	int rc;

	if (f >= UINT16_MAX)
		return qb_fail(QB_EX_SOFTWARE, "%s: more than %d request files",
		    path, UINT16_MAX - 1);
	if (jsonl_open(&r, path) == -1)
		return -1;
	if ((rc = rfile_open(ri, path, &r)) == 0 &&
	    (rc = index_lines(ri, &r, f, tag)) == 0)
		qb_note(1, "%s: %lu lines read, %zu requests known", r.name,
		    r.lineno, ri->ids.n);
	jsonl_close(&r);
	return rc;
}

size_t
reqindex_same(const struct reqindex *ri, const char *path)
{
	struct stat st;
	size_t f;

	if (stat(path, &st) == 0)
		for (f = 0; f < ri->nfiles; f++)
			if (ri->files[f].ino == st.st_ino &&
			    ri->files[f].dev == st.st_dev)
				return f;
	return (size_t)-1;
}

/* A wanted line and its place in the caller's arrays, for sorting. */
struct wanted {
	uint32_t	line;
	size_t		k;
};

static int
wanted_cmp(const void *a, const void *b)
{
	const struct wanted *x = a, *y = b;

	return (x->line > y->line) - (x->line < y->line);
}

int
reqindex_lines(struct reqindex *ri, const char *path, const uint32_t *line,
    size_t n, size_t *idx)
{
	struct jsonl_reader r;
	struct jsonl_rec rec;
	struct facts ft;
	struct wanted *w;
	yajl_val tree;
	uint32_t *first;
	char err[256];
	size_t i, k, at = 0;
	int ch, rc = 0;

	for (k = 0; k < n; k++)
		idx[k] = (size_t)-1;
	if (jsonl_open(&r, path) == -1)
		return -1;
	w = xreallocarray(NULL, n + 1, sizeof(*w));
	for (k = 0; k < n; k++) {
		w[k].line = line[k];
		w[k].k = k;
	}
	qsort(w, n, sizeof(*w), wanted_cmp);
	/* The first line of path with each id: a later one is a duplicate,
	 * which the index did not take. */
	first = xcalloc(ri->ids.n + 1, sizeof(*first));
	while (at < n && (ch = jsonl_read(&r, &rec)) != JSONL_EOF) {
		for (; at < n && w[at].line < r.lineno; at++)
			;
		if (ch == JSONL_IOERR) {
			rc = qb_fail(QB_EX_IOERR, "%s: cannot read the requests "
			    "again", r.name);
			break;
		}
		if (ch == JSONL_BAD || jscan_parse(&ri->scan, rec.line, rec.len,
		    err, sizeof(err)) == -1 || jsonl_fits(rec.line, rec.len, err,
		    sizeof(err)) == -1)
			continue;
		facts(ri, rec.line, rec.len, &ft, &tree);
		i = ft.id != NULL && ft.body ? idmap_get(&ri->ids, ft.id,
		    ft.idlen) : (size_t)-1;
		yajl_tree_free(tree);
		if (i == (size_t)-1 || first[i] != 0)
			continue;
		first[i] = (uint32_t)r.lineno;
		for (k = at; k < n && w[k].line == r.lineno; k++)
			idx[w[k].k] = i;
	}
	free(first);
	free(w);
	jsonl_close(&r);
	return rc;
}

/* Read n bytes at offset at of request q's line into p: 0, or
 * QB_EX_IOERR, reported. */
static int
readat(const struct reqindex *ri, const struct req *q, size_t at, size_t n,
    char *p)
{
	const struct rfile *rf = &ri->files[q->file];
	uint64_t off = ((uint64_t)q->offhi << 32 | q->offlo) + at;
	ssize_t k;

	for (; n > 0; n -= (size_t)k, p += k, off += (uint64_t)k)
		if ((k = pread(rf->fd, p, n, (off_t)off)) <= 0) {
			if (k == 0)
				errno = EIO;
			return qb_failsys(QB_EX_IOERR, "%s:%lu: cannot read the "
			    "request again", rf->name, (unsigned long)q->line);
		}
	return 0;
}

const char *
reqindex_line(struct reqindex *ri, size_t i)
{
	const struct req *q = &ri->req[i];

	buf_reset(&ri->rl);
	buf_grow(&ri->rl, q->len);
	if (readat(ri, q, 0, q->len, ri->rl.p) != 0)
		return NULL;
	ri->rl.len = q->len;
	ri->rl.p[q->len] = '\0';
	return ri->rl.p;
}

/* Request q's line is not what was indexed: QB_EX_IOERR, reported. */
static int
changed(const struct reqindex *ri, const struct req *q, const char *err)
{
	return qb_fail(QB_EX_IOERR, "%s:%lu: the request changed since it was "
	    "read%s%s", ri->files[q->file].name, (unsigned long)q->line,
	    err ? ": " : "", err ? err : "");
}

/*
 * Write the depth-1 members of text p, scanned in ri->scan, that are not
 * in own. w gets the span of the body ("body", else the first "params"),
 * of "url", and of an "endpoint" written, or -1 for each.
 */
static void
members(struct reqindex *ri, const char *p, yajl_gen g, int w[3])
{
	const struct json_span *sp;
	int i;

	w[0] = w[1] = w[2] = -1;
	for (i = 0; i < ri->scan.nspan; i++) {
		if ((sp = &ri->scan.span[i])->depth != 1)
			continue;
		if (strcmp(sp->key, "body") == 0 ||
		    (w[0] < 0 && strcmp(sp->key, "params") == 0))
			w[0] = i;
		else if (strcmp(sp->key, "url") == 0)
			w[1] = i;
		if (jscan_keyin(sp->key, ri->own))
			continue;
		if (strcmp(sp->key, "endpoint") == 0)
			w[2] = i;
		jout_key(g, sp->key);
		jout_raw(g, p + sp->off, sp->len);
	}
}

/* The extra members of q alone: its ranges, read into "{" range ","
 * range "}" and scanned. Returns 0 or QB_EX_IOERR, reported. */
static int
emit_ranges(struct reqindex *ri, const struct req *q, yajl_gen g)
{
	struct buf *b = &ri->rl;
	char err[256];
	int w[3];

	buf_reset(b);
	buf_grow(b, (size_t)q->x[1] + q->x[3] + 3);
	b->p[b->len++] = '{';
	if (readat(ri, q, q->x[0], q->x[1], b->p + b->len) != 0)
		return QB_EX_IOERR;
	b->len += q->x[1];
	if (q->x[1] > 0 && q->x[3] > 0)
		b->p[b->len++] = ',';
	if (readat(ri, q, (size_t)q->len - q->x[2] - q->x[3], q->x[3],
	    b->p + b->len) != 0)
		return QB_EX_IOERR;
	b->len += q->x[3];
	b->p[b->len++] = '}';
	b->p[b->len] = '\0';
	if (jscan_parse(&ri->scan, b->p, b->len, err, sizeof(err)) == -1)
		return changed(ri, q, err);
	members(ri, b->p, g, w);
	return 0;
}

/* The whole line of q as a yajl tree: for lines jscan_parse cannot record
 * whole. Returns 0 or QB_EX_IOERR, reported. */
static int
emit_tree(struct reqindex *ri, const struct req *q, const char *line,
    yajl_gen g, int item)
{
	yajl_val v, body = NULL, url = NULL;
	const char *key;
	size_t i;
	int haveep = 0;

	if ((v = jtree_parse0(line)) == NULL)
		return changed(ri, q, NULL);
	for (i = 0; i < v->u.object.len; i++) {
		key = v->u.object.keys[i];
		if (strcmp(key, "body") == 0 ||
		    (body == NULL && strcmp(key, "params") == 0))
			body = v->u.object.values[i];
		else if (strcmp(key, "url") == 0)
			url = v->u.object.values[i];
		if (jscan_keyin(key, ri->own))
			continue;
		haveep |= strcmp(key, "endpoint") == 0;
		jout_kval(g, key, v->u.object.values[i]);
	}
	if (item && body != NULL) {
		if (!haveep && url != NULL)
			jout_kval(g, "endpoint", url);
		else if (!haveep && (q->flags & REQ_ANTHROPIC))
			jout_kstr(g, "endpoint", "/v1/messages");
		jout_kval(g, "body", body);
		if (q->flags & REQ_ANTHROPIC)
			jout_kval(g, "params", body);
	}
	yajl_tree_free(v);
	return 0;
}

int
reqindex_emit(struct reqindex *ri, size_t idx, yajl_gen g, int item)
{
	const struct jscan *s = &ri->scan;
	const struct req *q = &ri->req[idx];
	const char *line, *id;
	char err[256];
	int w[3];

	if (!item && !(q->flags & REQ_EXTRA))
		return 0;
	if (!item && (q->flags & REQ_RANGES))
		return emit_ranges(ri, q, g);
	if ((line = reqindex_line(ri, idx)) == NULL)
		return QB_EX_IOERR;
	if (jscan_parse(&ri->scan, line, q->len, err, sizeof(err)) == -1)
		return changed(ri, q, err);
	if (!jscan_whole(s))
		return emit_tree(ri, q, line, g, item);
	if ((w[0] = jscan_find(s, -1, "custom_id")) < 0)
		w[0] = jscan_find(s, -1, "id");
	if ((id = jscan_sval(s, w[0])) == NULL ||
	    strcmp(id, idmap_key(&ri->ids, idx)) != 0)
		return changed(ri, q, NULL);
	members(ri, line, g, w);
	if (!item || w[0] < 0)
		return 0;
	if (w[2] < 0 && w[1] >= 0) {
		jout_key(g, "endpoint");
		jout_raw(g, line + s->span[w[1]].off, s->span[w[1]].len);
	} else if (w[2] < 0 && (q->flags & REQ_ANTHROPIC))
		jout_kstr(g, "endpoint", "/v1/messages");
	jout_key(g, "body");
	jout_raw(g, line + s->span[w[0]].off, s->span[w[0]].len);
	if (q->flags & REQ_ANTHROPIC) {
		jout_key(g, "params");
		jout_raw(g, line + s->span[w[0]].off, s->span[w[0]].len);
	}
	return 0;
}
