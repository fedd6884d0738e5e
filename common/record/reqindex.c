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

static void
reject(struct reqindex *ri)
{
	ri->nbad++;
	if (ri->strict)
		qb_die(QB_EX_DATAERR, "stopped at the first rejected line (--strict)");
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

/* Did jscan_parse record every member at depth 1 under its own key? (A
 * long key in the body does not matter: only "model" is looked up.) */
static int
scan_whole(const struct jscan *s)
{
	int i;

	if (s->nspan == JSCAN_SPANS_MAX)
		return 0;
	for (i = 0; i < s->nspan; i++)
		if (s->span[i].depth == 1 && s->span[i].key[0] == '\x01')
			return 0;
	return 1;
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
	if (scan_whole(s)) {
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

/*
 * Index one line of file f at offset off. Returns 1 if the line is now
 * in the index (a spool must keep it), 0 if not.
 */
static int
index_line(struct reqindex *ri, struct jsonl_reader *r, const char *line,
    size_t len, size_t f, uint64_t off, uint32_t tag)
{
	struct facts ft;
	yajl_val tree = NULL;
	struct req *q;
	char err[256];
	int isnew, rv = 0;
	size_t idx;

	if (jscan_parse(&ri->scan, line, len, err, sizeof(err)) == -1) {
		qb_lwarn(r->name, r->lineno, "%s", err);
		reject(ri);
		return 0;
	}
	/*
	 * Lines past what jscan_parse records are read as trees: bound them,
	 * by the limits qb-pack and qb-submit --sync check too.
	 */
	if (jsonl_fits(line, len, err, sizeof(err)) == -1) {
		qb_lwarn(r->name, r->lineno, "%s", err);
		reject(ri);
		return 0;
	}
	facts(ri, line, len, &ft, &tree);
	if (ft.id == NULL || ft.idlen == 0 || memchr(ft.id, '\0', ft.idlen)) {
		qb_lwarn(r->name, r->lineno, "no string \"custom_id\" or \"id\"");
		reject(ri);
	} else if (!ft.body) {
		qb_lwarn(r->name, r->lineno, "no \"body\" or \"params\" for id \"%s\"",
		    ft.id);
		reject(ri);
	} else if (idx = idmap_put(&ri->ids, ft.id, ft.idlen, &isnew), !isnew) {
		q = &ri->req[idx];
		if (tag != 0 && q->file != f)
			q->tag = tag;
		else {
			qb_lwarn(r->name, r->lineno, "duplicate id \"%s\" (first at "
			    "%s:%lu)", ft.id, ri->files[q->file].name,
			    (unsigned long)q->line);
			reject(ri);
		}
	} else {
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
		q->flags = (uint8_t)ft.flags;
		q->model = model_index(ri, ft.model);
		memcpy(q->x, ft.x, sizeof(q->x));
		rv = 1;
	}
	yajl_tree_free(tree);
	return rv;
}

int
reqindex_file(struct reqindex *ri, const char *path, uint32_t tag)
{
	struct jsonl_reader r;
	struct rfile *rf;
	struct stat st;
	struct buf tpath = BUF_INIT;
	unsigned char magic[2];
	const char *tmp = getenv("TMPDIR");
	char *line;
	size_t len, f = ri->nfiles;
	uint64_t off, soff = 0;
	int fd = -1, ch;

	if (f >= UINT16_MAX)
		qb_die(QB_EX_SOFTWARE, "%s: more than %d request files", path,
		    UINT16_MAX - 1);
	if (jsonl_open(&r, path) == -1)
		return -1;
	ri->files = xreallocarray(ri->files, f + 1, sizeof(*ri->files));
	rf = &ri->files[f];
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
		buf_printf(&tpath, "%s/%s.XXXXXX", tmp != NULL && *tmp != '\0' ?
		    tmp : "/tmp", qb_prog());
		if ((fd = mkstemp(tpath.p)) == -1 ||
		    (rf->spool = fdopen(fd, "w+")) == NULL)
			qb_diesys(QB_EX_OSERR, "%s: cannot create a temporary file",
			    tpath.p);
		unlink(tpath.p);
		buf_free(&tpath);
	}
	rf->fd = fd;
	ri->nfiles++;
	while ((ch = jsonl_next(&r, &line, &len)) != JSONL_EOF) {
		if (ch == JSONL_IOERR)
			qb_die(QB_EX_IOERR, "%s: cannot index the requests", r.name);
		if (ch == JSONL_BAD) {
			reject(ri);
			continue;
		}
		if ((off = rf->spool ? soff : r.off) >> 48 != 0)
			qb_die(QB_EX_SOFTWARE, "%s: over 256 TB", r.name);
		if (!index_line(ri, &r, line, len, f, off, tag) || rf->spool == NULL)
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
	    ri->ids.n);
	jsonl_close(&r);
	return 0;
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
	struct facts ft;
	struct wanted *w;
	yajl_val tree;
	uint32_t *first;
	char *p, err[256];
	size_t len, i, k, at = 0;
	int ch;

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
	while (at < n && (ch = jsonl_next(&r, &p, &len)) != JSONL_EOF) {
		for (; at < n && w[at].line < r.lineno; at++)
			;
		if (ch == JSONL_IOERR)
			qb_die(QB_EX_IOERR, "%s: cannot read the requests again",
			    r.name);
		if (ch == JSONL_BAD || jscan_parse(&ri->scan, p, len, err,
		    sizeof(err)) == -1 || jsonl_fits(p, len, err, sizeof(err)) == -1)
			continue;
		facts(ri, p, len, &ft, &tree);
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
	return 0;
}

/* Read n bytes at offset at of request q's line into p. */
static void
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
			qb_diesys(QB_EX_IOERR, "%s:%lu: cannot read the request "
			    "again", rf->name, (unsigned long)q->line);
		}
}

const char *
reqindex_line(struct reqindex *ri, size_t i)
{
	const struct req *q = &ri->req[i];

	buf_reset(&ri->rl);
	buf_grow(&ri->rl, q->len);
	readat(ri, q, 0, q->len, ri->rl.p);
	ri->rl.len = q->len;
	ri->rl.p[q->len] = '\0';
	return ri->rl.p;
}

static void __attribute__((noreturn))
changed(const struct reqindex *ri, const struct req *q, const char *err)
{
	qb_die(QB_EX_IOERR, "%s:%lu: the request changed since it was read%s%s",
	    ri->files[q->file].name, (unsigned long)q->line, err ? ": " : "",
	    err ? err : "");
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
 * range "}" and scanned. */
static void
emit_ranges(struct reqindex *ri, const struct req *q, yajl_gen g)
{
	struct buf *b = &ri->rl;
	char err[256];
	int w[3];

	buf_reset(b);
	buf_grow(b, (size_t)q->x[1] + q->x[3] + 3);
	b->p[b->len++] = '{';
	readat(ri, q, q->x[0], q->x[1], b->p + b->len);
	b->len += q->x[1];
	if (q->x[1] > 0 && q->x[3] > 0)
		b->p[b->len++] = ',';
	readat(ri, q, (size_t)q->len - q->x[2] - q->x[3], q->x[3], b->p + b->len);
	b->len += q->x[3];
	b->p[b->len++] = '}';
	b->p[b->len] = '\0';
	if (jscan_parse(&ri->scan, b->p, b->len, err, sizeof(err)) == -1)
		changed(ri, q, err);
	members(ri, b->p, g, w);
}

/* The whole line of q as a yajl tree: for lines jscan_parse cannot record
 * whole. */
static void
emit_tree(struct reqindex *ri, const struct req *q, const char *line,
    yajl_gen g, int item)
{
	yajl_val v, body = NULL, url = NULL;
	const char *key;
	size_t i;
	int haveep = 0;

	if ((v = jtree_parse0(line)) == NULL)
		changed(ri, q, NULL);
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
}

void
reqindex_emit(struct reqindex *ri, size_t idx, yajl_gen g, int item)
{
	const struct jscan *s = &ri->scan;
	const struct req *q = &ri->req[idx];
	const char *line, *id;
	char err[256];
	int w[3];

	if (!item && !(q->flags & REQ_EXTRA))
		return;
	if (!item && (q->flags & REQ_RANGES)) {
		emit_ranges(ri, q, g);
		return;
	}
	line = reqindex_line(ri, idx);
	if (jscan_parse(&ri->scan, line, q->len, err, sizeof(err)) == -1)
		changed(ri, q, err);
	if (!scan_whole(s)) {
		emit_tree(ri, q, line, g, item);
		return;
	}
	if ((w[0] = jscan_find(s, -1, "custom_id")) < 0)
		w[0] = jscan_find(s, -1, "id");
	if ((id = jscan_sval(s, w[0])) == NULL ||
	    strcmp(id, idmap_key(&ri->ids, idx)) != 0)
		changed(ri, q, NULL);
	members(ri, line, g, w);
	if (!item || w[0] < 0)
		return;
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
}
