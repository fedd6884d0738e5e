/*
 * jscan.c: the span scanner (jscan.h).
 *
 * jscan_parse runs yajl's event parser over a line and uses
 * yajl_get_bytes_consumed() in each callback to learn where a value ends;
 * a value starts after the ':' that follows its key. yajl validates the
 * whole text (syntax and UTF-8), so a span can be copied out verbatim.
 * SPDX-License-Identifier: ISC
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "json/jscan.h"
#include "json/jtree.h"

/* Scanner state for one jscan_parse call. */
struct scanctx {
	yajl_handle	 h;
	struct jscan *s;
	const char	*text;
	size_t		 len;
	int		 level;		/* containers open */
	int		 pending;	/* span whose value comes next, or -1 */
	int		 cont[4];	/* span of the container open at level 1..3, or -1 */
	int		 notobj;
};

static size_t
here(struct scanctx *c)
{
	return yajl_get_bytes_consumed(c->h);
}

/* A scalar or container value starts: close the pending key. */
static int
value(struct scanctx *c, enum json_type t, const char *str, size_t slen)
{
	struct json_span *sp;

	if (c->level == 0) {
		c->notobj = 1;
		return 0;
	}
	if (c->pending < 0)
		return 1;
	sp = &c->s->span[c->pending];
	sp->type = t;
	if (t == JT_MAP || t == JT_ARRAY)
		return 1;
	sp->len = here(c) - sp->off;
	if (t == JT_STRING) {
		sp->soff = c->s->strs.len;
		sp->slen = slen;
		buf_append(&c->s->strs, str, slen);
		buf_putc(&c->s->strs, '\0');
	}
	c->pending = -1;
	return 1;
}

static int
cb_null(void *ctx)
{
	return value(ctx, JT_NULL, NULL, 0);
}

static int
cb_bool(void *ctx, int b)
{
	(void)b;
	return value(ctx, JT_BOOL, NULL, 0);
}

static int
cb_number(void *ctx, const char *s, size_t l)
{
	(void)s;
	(void)l;
	return value(ctx, JT_NUMBER, NULL, 0);
}

static int
cb_string(void *ctx, const unsigned char *s, size_t l)
{
	return value(ctx, JT_STRING, (const char *)s, l);
}

static int
cb_start(struct scanctx *c, enum json_type t)
{
	int sp = -1;

	if (c->level == 0 && t != JT_MAP) {
		c->notobj = 1;
		return 0;
	}
	if (c->level > 0) {
		sp = c->pending;
		value(c, t, NULL, 0);
		c->pending = -1;
	}
	c->level++;
	if (c->level <= 3)
		c->cont[c->level] = sp;
	return 1;
}

static int
cb_end(struct scanctx *c)
{
	int sp;

	if (c->level <= 3) {
		sp = c->cont[c->level];
		if (sp >= 0)
			c->s->span[sp].len = here(c) - c->s->span[sp].off;
	}
	c->level--;
	return 1;
}

static int
cb_start_map(void *ctx)
{
	return cb_start(ctx, JT_MAP);
}

static int
cb_start_array(void *ctx)
{
	return cb_start(ctx, JT_ARRAY);
}

static int
cb_end_any(void *ctx)
{
	return cb_end(ctx);
}

static int
cb_key(void *ctx, const unsigned char *k, size_t l)
{
	struct scanctx *c = ctx;
	struct jscan *s = c->s;
	struct json_span *sp;
	size_t at;
	int parent;

	if (c->level == 1)
		parent = -1;
	else if (c->level == 2 && c->cont[2] >= 0)
		parent = c->cont[2];
	else
		return 1;
	if (parent >= 0 && s->deep != NULL) {
		const char *const *d;

		for (d = s->deep; *d != NULL; d++)
			if (strcmp(*d, s->span[parent].key) == 0)
				break;
		if (*d == NULL)
			return 1;
	}
	if (s->nspan == JSCAN_SPANS_MAX)
		return 1;
	sp = &s->span[s->nspan];
	memset(sp, 0, sizeof(*sp));
	if (l < sizeof(sp->key)) {
		memcpy(sp->key, k, l);
		sp->key[l] = '\0';
	} else
		memcpy(sp->key, "\x01", 2);	/* never matches */
	sp->depth = c->level;
	sp->parent = parent;
	/* The value begins after optional space, the ':' and optional space. */
	at = here(c);
	while (at < c->len && c->text[at] != ':')
		at++;
	at++;
	while (at < c->len && (c->text[at] == ' ' || c->text[at] == '\t' ||
	    c->text[at] == '\r' || c->text[at] == '\n'))
		at++;
	sp->off = at;
	c->pending = s->nspan++;
	return 1;
}

static const yajl_callbacks scan_callbacks = {
	cb_null, cb_bool, NULL, NULL, cb_number, cb_string,
	cb_start_map, cb_key, cb_end_any, cb_start_array, cb_end_any
};

int
jscan_parse(struct jscan *s, const char *p, size_t len, char *err,
    size_t errlen)
{
	struct scanctx c;
	yajl_status st;
	long bad;
	int rc = 0, atend = 0;

	s->nspan = 0;
	buf_reset(&s->strs);
	memset(&c, 0, sizeof(c));
	c.s = s;
	c.text = p;
	c.len = len;
	c.pending = -1;
	c.cont[0] = c.cont[1] = c.cont[2] = c.cont[3] = -1;
	c.h = yajl_alloc(&scan_callbacks, NULL, &c);
	if (c.h == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	st = yajl_parse(c.h, (const unsigned char *)p, len);
	if (st == yajl_status_ok) {
		atend = 1;
		st = yajl_complete_parse(c.h);
	}
	if (c.notobj || (st == yajl_status_ok && c.level != 0)) {
		snprintf(err, errlen, "not a JSON object");
		rc = -1;
	} else if (st != yajl_status_ok) {
		jtree_yajl_error(c.h, p, len, atend, err, errlen);
		rc = -1;
	} else if ((bad = jtree_unclosed(p, len)) >= 0) {
		snprintf(err, errlen, "parse error: trailing garbage at byte %ld",
		    bad + 1);
		rc = -1;
	}
	yajl_free(c.h);
	return rc;
}

int
jscan_keyin(const char *key, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(key, *list) == 0)
			return 1;
	return 0;
}

int
jscan_dupkey(const struct jscan *s, int parent, const char *key)
{
	int i, n = 0;

	for (i = 0; i < s->nspan; i++)
		if (s->span[i].parent == parent &&
		    strcmp(s->span[i].key, key) == 0)
			n++;
	return n > 1;
}

int
jscan_find(const struct jscan *s, int parent, const char *key)
{
	int i;

	for (i = 0; i < s->nspan; i++)
		if (s->span[i].parent == parent &&
		    strcmp(s->span[i].key, key) == 0)
			return i;
	return -1;
}

const char *
jscan_sval(const struct jscan *s, int i)
{
	if (i < 0 || s->span[i].type != JT_STRING)
		return NULL;
	return s->strs.p + s->span[i].soff;
}

int
jscan_whole(const struct jscan *s)
{
	int i;

	if (s->nspan == JSCAN_SPANS_MAX)
		return 0;
	for (i = 0; i < s->nspan; i++)
		if (s->span[i].depth == 1 && s->span[i].key[0] == '\x01')
			return 0;
	return 1;
}

yajl_val
jscan_tree(const struct jscan *s, const char *text, size_t len,
    const char *const *keys, char *err, size_t errlen)
{
	struct buf b = BUF_INIT;
	const struct json_span *sp;
	yajl_val v;
	int i;

	if (!jscan_whole(s))
		return jtree_parse(text, err, errlen);
	if (jtree_depth(text, len) > JTREE_DEPTH_MAX) {
		snprintf(err, errlen, "nested deeper than %d levels",
		    JTREE_DEPTH_MAX);
		return NULL;
	}
	buf_putc(&b, '{');
	for (; *keys != NULL; keys++) {
		if ((i = jscan_find(s, -1, *keys)) < 0)
			continue;
		sp = &s->span[i];
		buf_printf(&b, "%s\"%s\":", b.len > 1 ? "," : "", *keys);
		buf_append(&b, text + sp->off, sp->len);
	}
	buf_putc(&b, '}');
	v = jtree_parse(b.p, err, errlen);
	buf_free(&b);
	return v;
}

/* Counting state for jscan_array_len: depth and elements at depth 1. */
struct countctx {
	int	depth;
	long	n;
};

static int
cnt_value(void *ctx)
{
	struct countctx *c = ctx;

	if (c->depth == 1)
		c->n++;
	return 1;
}

static int
cnt_null(void *ctx)
{
	return cnt_value(ctx);
}

static int
cnt_bool(void *ctx, int b)
{
	(void)b;
	return cnt_value(ctx);
}

static int
cnt_number(void *ctx, const char *s, size_t l)
{
	(void)s;
	(void)l;
	return cnt_value(ctx);
}

static int
cnt_string(void *ctx, const unsigned char *s, size_t l)
{
	(void)s;
	(void)l;
	return cnt_value(ctx);
}

static int
cnt_open(void *ctx)
{
	struct countctx *c = ctx;

	cnt_value(ctx);
	c->depth++;
	return 1;
}

static int
cnt_close(void *ctx)
{
	((struct countctx *)ctx)->depth--;
	return 1;
}

static int
cnt_key(void *ctx, const unsigned char *k, size_t l)
{
	(void)ctx;
	(void)k;
	(void)l;
	return 1;
}

static const yajl_callbacks count_callbacks = {
	cnt_null, cnt_bool, NULL, NULL, cnt_number, cnt_string,
	cnt_open, cnt_key, cnt_close, cnt_open, cnt_close
};

long
jscan_array_len(const char *p, size_t len)
{
	struct countctx c = { 0, 0 };
	yajl_handle h;
	yajl_status st;

	if (len == 0 || p[0] != '[')
		return -1;
	if ((h = yajl_alloc(&count_callbacks, NULL, &c)) == NULL)
		return -1;
	st = yajl_parse(h, (const unsigned char *)p, len);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	yajl_free(h);
	return st == yajl_status_ok ? c.n : -1;
}

/* The end of the run of plain string bytes at s: the next '"' or '\\'. */
static const unsigned char *
span_end(const unsigned char *s, const unsigned char *e)
{
	const unsigned char *q = memchr(s, '"', (size_t)(e - s)), *b;

	if (q == NULL)
		q = e;
	b = memchr(s, '\\', (size_t)(q - s));
	return b != NULL ? b : q;
}

/* Characters in the UTF-8 bytes [s, e): all bytes but continuations
 * (10xxxxxx), counted eight at a time. */
static long long
utf8_chars(const unsigned char *s, const unsigned char *e)
{
	const uint64_t hi = 0x8080808080808080ULL;
	long long n = e - s;
	uint64_t w;

	for (; e - s >= 8; s += 8) {
		memcpy(&w, s, 8);
		n -= __builtin_popcountll(w & ~(w << 1) & hi);
	}
	for (; s < e; s++)
		n -= (*s & 0xc0) == 0x80;
	return n;
}

long long
jscan_string_chars(const char *p, size_t len)
{
	const unsigned char *s = (const unsigned char *)p, *e = s + len, *q;
	long long c = 0, n;
	int hi;

	while (s < e) {
		if (*s++ != '"')
			continue;
		for (n = 0, hi = 0; s < e && *s != '"'; ) {
			if (*s != '\\') {
				q = span_end(s, e);
				n += utf8_chars(s, q);
				s = q;
				hi = 0;
				continue;
			}
			n++;
			if (s + 5 < e && s[1] == 'u') {
				/* \uDC00-\uDFFF after a high half: one character */
				if (hi && (s[2] | 0x20) == 'd' &&
				    strchr("cdefCDEF", s[3]) != NULL)
					n--;
				hi = (s[2] | 0x20) == 'd' &&
				    strchr("89abAB", s[3]) != NULL;
				s += 6;
			} else {
				hi = 0;
				s += 2;
			}
		}
		s++;			/* the closing quote */
		for (q = s; q < e && (*q == ' ' || *q == '\t' || *q == '\n' ||
		    *q == '\r'); q++)
			;
		if (q >= e || *q != ':')
			c += n;
	}
	return c;
}
