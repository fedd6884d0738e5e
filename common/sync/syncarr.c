/*
 * syncarr.c: array input for the synchronous engine (--array N,
 * qb-submit(1) SYNCHRONOUS MODE). Embeddings items with the same endpoint
 * and the same body but for "input" form a group; their inputs (a
 * string, or each element of an array of strings or of token arrays) are
 * packed in input order into requests of at most N inputs and
 * --array-tokens estimated tokens, made when the model's limiter would
 * let one go. The answer's data[] goes back to the items by index, with
 * usage shared by token estimate. A 400 or 413 for a request of more
 * than one input is bisected, down to single inputs: one still refused is
 * dead, and its item ends dead with that error and the vectors of its
 * other inputs. Any other failure for good ends each item it carried with
 * that failure. An item ends when its last input does.
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/msg.h"
#include "base/qtime.h"
#include "base/xmem.h"
#include "json/jout.h"
#include "json/jtree.h"
#include "sync/syncarr.h"
#include "sync/syncint.h"
#include "sync/syncitem.h"
#include "sync/syncout.h"

#define LINGER	0.05	/* s an input may wait for company */

struct sync_group {
	char		*url;		/* owned */
	char		*other;		/* the body's other members, as JSON; owned */
	struct sync_model *m;
	struct sync_list pend;		/* items with inputs not yet packed */
	size_t		 nin;		/* inputs not yet packed */
	long long	 tin;		/* their tokens */
	double		 since;		/* when the oldest of them came */
};

static char *
genbytes(yajl_gen g, size_t *n)
{
	const unsigned char *p;
	size_t len;
	char *r;

	yajl_gen_get_buf(g, &p, &len);
	r = xstrndup((const char *)p, len);
	if (n != NULL)
		*n = len;
	yajl_gen_free(g);
	return r;
}

static char *
valbytes(yajl_val v, size_t *n)
{
	yajl_gen g = jout_new();

	jout_val(g, v);
	return genbytes(g, n);
}

static int
isembed(const char *url)
{
	const char *p = strstr(url, "/embeddings");

	return p != NULL && (p[11] == '\0' || p[11] == '?');
}

static void
addel(struct sync_item *it, yajl_val v, size_t *cap)
{
	struct sync_el *e;

	if (it->nel == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		it->el = xreallocarray(it->el, *cap, sizeof(*it->el));
	}
	e = &it->el[it->nel++];
	memset(e, 0, sizeof(*e));
	e->raw = valbytes(v, &e->len);
	if (YAJL_IS_STRING(v))
		e->tokens = (jscan_string_chars(e->raw, e->len) + 3) / 4;
	else
		e->tokens = YAJL_IS_ARRAY(v) ? (long long)v->u.array.len : 0;
}

/*
 * The inputs of body t as its elements: "input" a string, an array of
 * strings or of token arrays, or one token array. 0, or -1 (no elements
 * made) when "input" is none of these.
 */
static int
inputs(struct sync_item *it, yajl_val t)
{
	yajl_val in, x;
	size_t i, cap = 0, nnum = 0;

	if ((in = jtree_get(t, "input")) == NULL)
		return -1;
	if (YAJL_IS_STRING(in)) {
		addel(it, in, &cap);
		return 0;
	}
	if (!YAJL_IS_ARRAY(in) || in->u.array.len == 0)
		return -1;
	for (i = 0; i < in->u.array.len; i++) {
		x = in->u.array.values[i];
		if (YAJL_IS_NUMBER(x))
			nnum++;
		else if (!YAJL_IS_STRING(x) && !YAJL_IS_ARRAY(x))
			return -1;
	}
	if (nnum == in->u.array.len)
		addel(it, in, &cap);	/* one token array */
	else if (nnum > 0)
		return -1;		/* numbers among strings */
	else
		for (i = 0; i < in->u.array.len; i++)
			addel(it, in->u.array.values[i], &cap);
	return 0;
}

/* The members of body t but "input", as JSON without its braces: what
 * items must have alike to share requests. The caller owns it. */
static char *
others(yajl_val t)
{
	static const char *const skip[] = { "input", NULL };
	yajl_gen g;
	char *other;
	size_t n;

	g = jout_new();
	jout_open(g);
	jout_members(g, t, skip);
	jout_close(g);
	other = genbytes(g, &n);
	memmove(other, other + 1, n - 2);
	other[n - 2] = '\0';
	return other;
}

/* The group of items like it, whose other members are other (taken
 * over); a new one if none is. */
static struct sync_group *
group(struct sync *s, const struct sync_item *it, char *other)
{
	struct sync_group *gr;
	size_t i;

	for (i = 0; i < s->ngroups; i++) {
		gr = s->groups[i];
		if (gr->m == it->m && strcmp(gr->url, it->url) == 0 &&
		    strcmp(gr->other, other) == 0) {
			free(other);
			return gr;
		}
	}
	gr = xcalloc(1, sizeof(*gr));
	gr->url = xstrdup(it->url);
	gr->other = other;
	gr->m = it->m;
	s->groups = xreallocarray(s->groups, s->ngroups + 1,
	    sizeof(*s->groups));
	s->groups[s->ngroups++] = gr;
	return gr;
}

int
syncarr_take(struct sync *s, struct sync_item *it)
{
	struct sync_group *gr;
	yajl_val t;
	char *body;
	size_t i;

	if (s->o->array <= 1 || !isembed(it->url))
		return 0;
	body = xstrndup(it->line + it->boff, it->blen);
	t = jtree_parse0(body);
	free(body);
	if (t == NULL || !YAJL_IS_OBJECT(t) || inputs(it, t) == -1) {
		yajl_tree_free(t);
		return 0;
	}
	gr = it->grp = group(s, it, others(t));
	yajl_tree_free(t);
	it->nleft = it->nel;
	if (gr->nin == 0)
		gr->since = qtime_mono();
	for (i = 0; i < it->nel; i++) {
		gr->nin++;
		gr->tin += it->el[i].tokens;
	}
	syncitem_add(&gr->pend, it, 0);
	s->npool++;
	s->nopen++;
	return 1;
}

/* A request of the n parts at p of group gr, into the waiting list. */
static struct sync_item *
mkreq(struct sync *s, struct sync_group *gr, const struct sync_part *p,
    size_t n, int front)
{
	struct sync_item *r = xcalloc(1, sizeof(*r));
	struct sync_item *own = p[0].own;
	struct buf b = BUF_INIT;
	size_t i;

	buf_putc(&b, '{');
	if (gr->other[0] != '\0') {
		buf_puts(&b, gr->other);
		buf_putc(&b, ',');
	}
	buf_puts(&b, "\"input\":[");
	for (i = 0; i < n; i++) {
		if (i > 0)
			buf_putc(&b, ',');
		buf_append(&b, p[i].own->el[p[i].i].raw, p[i].own->el[p[i].i].len);
		r->tokens += p[i].own->el[p[i].i].tokens;
		if (p[i].own->deadline > 0 && (r->deadline == 0 ||
		    p[i].own->deadline < r->deadline))
			r->deadline = p[i].own->deadline;
	}
	buf_puts(&b, "]}");
	r->line = b.p;
	r->len = r->blen = b.len;
	r->boff = 0;
	memset(&b, 0, sizeof(b));
	buf_printf(&b, "%s (array of %zu input%s)", own->id, n, n == 1 ? "" : "s");
	r->id = b.p;
	r->url = xstrdup(gr->url);
	r->m = gr->m;
	r->grp = gr;
	r->file = own->file;
	r->lineno = own->lineno;
	r->should_retry = -1;
	r->parts = xreallocarray(NULL, n, sizeof(*r->parts));
	memcpy(r->parts, p, n * sizeof(*p));
	r->nparts = n;
	syncitem_add(&s->wait, r, front);
	s->narrays++;
	return r;
}

/* One request of what gr holds. */
static void
pack1(struct sync *s, struct sync_group *gr)
{
	size_t max = (size_t)s->o->array, n = 0, cap = 0, k;
	long long T = s->o->array_tokens, t = 0, it_t;
	struct sync_part *p = NULL;
	struct sync_item *it;

	while ((it = gr->pend.head) != NULL && n < max) {
		if (it->packed == 0 && n > 0) {
			/* An item that fits a request of its own is not cut. */
			for (k = 0, it_t = 0; k < it->nel; k++)
				it_t += it->el[k].tokens;
			if ((n + it->nel > max || t + it_t > T) &&
			    it->nel <= max && it_t <= T)
				break;
		}
		if (n > 0 && t + it->el[it->packed].tokens > T)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			p = xreallocarray(p, cap, sizeof(*p));
		}
		p[n].own = it;
		p[n].i = it->packed;
		t += it->el[it->packed].tokens;
		gr->nin--;
		gr->tin -= it->el[it->packed].tokens;
		n++;
		if (++it->packed == it->nel) {
			syncitem_del(&gr->pend, it);
			s->npool--;
		}
	}
	mkreq(s, gr, p, n, 0);
	free(p);
}

double
syncarr_pack(struct sync *s, double now, int over)
{
	struct sync_group *gr;
	double wake = now + 1;
	long long want;
	size_t i;
	int ready;

	for (i = 0; i < s->ngroups; i++) {
		gr = s->groups[i];
		while (gr->nin > 0 && !s->stop) {
			ready = over || s->halt ||
			    gr->nin >= (size_t)s->o->array ||
			    gr->tin >= s->o->array_tokens ||
			    now - gr->since >= LINGER;
			if (!ready) {
				if (gr->since + LINGER < wake)
					wake = gr->since + LINGER;
				break;
			}
			want = gr->tin < s->o->array_tokens ? gr->tin :
			    s->o->array_tokens;
			if (ratelim_wait(gr->m->rl, want, now) != 0)
				break;	/* more may join while it waits */
			pack1(s, gr);
			/* One request a round, unless a full one is waiting. */
			if (gr->nin < (size_t)s->o->array &&
			    gr->tin < s->o->array_tokens && !over)
				break;
		}
	}
	return wake;
}

static char *
dupn(const char *p)
{
	return p != NULL ? xstrdup(p) : NULL;
}

/* "input[k]" of the request in s, as "input[i]" of the item. */
static char *
renum(const char *s, size_t k, size_t i)
{
	struct buf b = BUF_INIT;
	char from[48], to[48];
	const char *q;
	size_t n;

	if (s == NULL)
		return NULL;
	snprintf(from, sizeof(from), "input[%zu]", k);
	snprintf(to, sizeof(to), "input[%zu]", i);
	n = strlen(from);
	buf_puts(&b, "");
	while ((q = strstr(s, from)) != NULL) {
		buf_append(&b, s, (size_t)(q - s));
		buf_puts(&b, to);
		s = q + n;
	}
	buf_puts(&b, s);
	return b.p;
}

/* An item's last input ended: its result. */
static void
finish(struct sync *s, struct sync_item *it, const char *rid)
{
	struct result r;
	struct buf resp = BUF_INIT;
	yajl_gen g;
	long long use = 0;
	size_t i, n;
	char *txt = NULL;

	s->nopen--;
	if (it->fail != NULL && it->dead == NULL) {
		r = *it->fail;
		syncout_settle(s, it, &r, it->say);
		return;
	}
	g = jout_new();
	jout_open(g);
	jout_kstr(g, "object", it->aobj != NULL ? it->aobj : "list");
	jout_key(g, "data");
	yajl_gen_array_open(g);
	for (i = 0; i < it->nel; i++) {
		if (it->el[i].state != SYNC_E_OK)
			continue;
		use += it->el[i].share;
		jout_open(g);
		jout_kstr(g, "object", "embedding");
		jout_kint(g, "index", (long long)i);
		jout_key(g, "embedding");
		jout_raw(g, it->el[i].vec, strlen(it->el[i].vec));
		jout_close(g);
	}
	yajl_gen_array_close(g);
	if (it->amodel != NULL)
		jout_kstr(g, "model", it->amodel);
	jout_key(g, "usage");
	jout_open(g);
	jout_kint(g, "prompt_tokens", use);
	jout_kint(g, "total_tokens", use);
	jout_close(g);
	jout_close(g);
	txt = genbytes(g, &n);
	if (it->dead != NULL)
		r = *it->dead;
	else {
		memset(&r, 0, sizeof(r));
		r.kind = RESULT_QB;
		r.status = RESULT_SUCCEEDED;
		r.outcome = OUTCOME_DONE;
		r.http_status = 200;
	}
	r.text = txt;
	r.resp_off = 0;
	r.resp_len = n;
	r.in_tok = use;
	r.out_tok = 0;
	r.request_id = it->dead != NULL ? it->dead->request_id : rid;
	syncout_settle(s, it, &r, it->dead != NULL ? it->say : NULL);
	free(txt);
	buf_free(&resp);
}

/* Input p ends as state st. */
static void
endel(struct sync *s, const struct sync_part *p, int st, const char *rid)
{
	struct sync_item *it = p->own;

	it->el[p->i].state = st;
	if (--it->nleft == 0)
		finish(s, it, rid);
}

/* The vectors of answer t back to the inputs of req by their index;
 * got[k] is set for each part k that has one. */
static void
vectors(struct sync_item *req, yajl_val t, int *got)
{
	yajl_val data, d, v, ix;
	struct sync_el *e;
	long long idx;
	size_t i;

	data = t != NULL ? jtree_get(t, "data") : NULL;
	for (i = 0; data != NULL && YAJL_IS_ARRAY(data) &&
	    i < data->u.array.len; i++) {
		d = data->u.array.values[i];
		if ((ix = jtree_get(d, "index")) == NULL || !YAJL_IS_INTEGER(ix) ||
		    (idx = YAJL_GET_INTEGER(ix)) < 0 ||
		    (size_t)idx >= req->nparts || got[idx] ||
		    (v = jtree_get(d, "embedding")) == NULL)
			continue;
		got[idx] = 1;
		e = &req->parts[idx].own->el[req->parts[idx].i];
		free(e->vec);
		e->vec = valbytes(v, NULL);
	}
}

/* The request's P prompt tokens shared by the inputs that got a vector,
 * by token estimate, summing to P exactly; none if none got one. */
static void
shares(struct sync_item *req, const int *got, long long P)
{
	struct sync_el *e;
	long long T = 0, sum = 0;
	size_t k, n = 0;

	for (k = 0; k < req->nparts; k++)
		if (got[k]) {
			T += req->parts[k].own->el[req->parts[k].i].tokens;
			n++;
		}
	if (n == 0)
		return;		/* else the rounding below would never end */
	for (k = 0; k < req->nparts; k++) {
		if (!got[k])
			continue;
		e = &req->parts[k].own->el[req->parts[k].i];
		e->share = T > 0 ? P * e->tokens / T : 0;
		sum += e->share;
	}
	for (k = 0; sum < P && k < req->nparts; k = (k + 1) % req->nparts)
		if (got[k]) {
			req->parts[k].own->el[req->parts[k].i].share++;
			sum++;
		}
}

/* Split the request's answer back to its items. */
static void
answer(struct sync *s, struct sync_item *req, const struct result *r)
{
	struct sync_part *p;
	struct result f;
	yajl_val t;
	size_t k;
	char *body, *rid = dupn(r->request_id);
	int *got = xcalloc(req->nparts, sizeof(*got));

	body = xstrndup(req->resp.p, req->resp.len);
	t = jtree_parse0(body);
	free(body);
	vectors(req, t, got);
	shares(req, got, r->in_tok > 0 ? r->in_tok : 0);
	for (k = 0; k < req->nparts; k++) {
		p = &req->parts[k];
		if (t != NULL && p->own->aobj == NULL)
			p->own->aobj = dupn(jtree_str(t, "object"));
		if (t != NULL && p->own->amodel == NULL)
			p->own->amodel = dupn(jtree_str(t, "model"));
	}
	for (k = 0; k < req->nparts; k++) {
		p = &req->parts[k];
		if (got[k]) {
			endel(s, p, SYNC_E_OK, rid);
			continue;
		}
		syncout_noanswer(&f, RESULT_ERRORED, "api_error",
		    "missing_result", "the answer holds no vector for this input");
		f.http_status = r->http_status;
		if (p->own->fail == NULL) {
			p->own->fail = syncitem_keep(&f);
			p->own->say = xstrdup(f.emsg);
		}
		endel(s, p, SYNC_E_FAIL, rid);
	}
	if (t != NULL)
		yajl_tree_free(t);
	free(got);
	free(rid);
}

void
syncarr_end(struct sync *s, struct sync_item *req, const struct result *r,
    const char *say)
{
	struct sync_part *p;
	struct result *c;
	size_t k, h;

	if (r->status == RESULT_SUCCEEDED && r->outcome == OUTCOME_DONE) {
		answer(s, req, r);
		return;
	}
	if ((r->http_status == 400 || r->http_status == 413) && !r->account &&
	    !s->stop) {
		if (req->nparts > 1) {
			h = req->nparts / 2;
			qb_note(1, "id \"%s\": HTTP %lld: bisected into %zu and "
			    "%zu inputs", req->id, r->http_status, h,
			    req->nparts - h);
			mkreq(s, req->grp, req->parts + h, req->nparts - h, 1);
			mkreq(s, req->grp, req->parts, h, 1);
			s->nbisect += 2;
			return;
		}
		/* One input, still refused: it is dead
		 * (tests/3410-qb-submit-sync-array.t). */
		p = &req->parts[0];
		if (p->own->dead == NULL) {
			c = syncitem_keep(r);
			c->status = RESULT_ERRORED;
			c->outcome = OUTCOME_DEAD;
			if (r->eparam != NULL) {
				free((char *)c->eparam);
				c->eparam = renum(r->eparam, 0, p->i);
			} else {
				free((char *)c->eparam);
				c->eparam = renum("input[0]", 0, p->i);
			}
			free((char *)c->emsg);
			c->emsg = renum(r->emsg, 0, p->i);
			p->own->dead = c;
			p->own->deadi = p->i;
			free(p->own->say);
			p->own->say = say != NULL ? renum(say, 0, p->i) : NULL;
		}
		endel(s, p, SYNC_E_DEAD, r->request_id);
		return;
	}
	/* Failed for good otherwise: each item gets that failure. */
	for (k = 0; k < req->nparts; k++) {
		p = &req->parts[k];
		if (p->own->fail == NULL) {
			p->own->fail = syncitem_keep(r);
			p->own->say = say != NULL ? xstrdup(say) : NULL;
		}
		endel(s, p, SYNC_E_FAIL, r->request_id);
	}
}

void
syncarr_free(struct sync *s)
{
	struct sync_item *it;
	size_t i;

	for (i = 0; i < s->ngroups; i++) {
		while ((it = s->groups[i]->pend.head) != NULL) {
			syncitem_del(&s->groups[i]->pend, it);
			syncitem_free(it);
		}
		free(s->groups[i]->url);
		free(s->groups[i]->other);
		free(s->groups[i]);
	}
	free(s->groups);
}
