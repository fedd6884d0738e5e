/*
 * members.c: the members a record carries on. qb-submit --sync copies
 * an item's members (meta, queue, receipt, body ...) into its result;
 * qb-reconcile copies a result's members into the outcome when the
 * result carries its own request. Values are copied as bytes, so a body
 * or a meta stays byte for byte as it came.
 * SPDX-License-Identifier: ISC
 */
#include <string.h>

#include "json/jout.h"
#include "json/jscan.h"
#include "json/jtree.h"
#include "record/members.h"

/* members_write from a yajl tree, for lines the scan cannot record whole. */
static void
members_tree(yajl_gen g, const char *line, const char *const *skip, int item)
{
	yajl_val v, body = NULL, params = NULL, url = NULL;
	const char *k;
	size_t i;
	int haveep = 0;

	if ((v = jtree_parse0(line)) == NULL)
		return;		/* the caller validated it: cannot happen */
	for (i = 0; i < v->u.object.len; i++) {
		k = v->u.object.keys[i];
		if (strcmp(k, "body") == 0 && body == NULL)
			body = v->u.object.values[i];
		else if (strcmp(k, "params") == 0 && params == NULL)
			params = v->u.object.values[i];
		else if (strcmp(k, "url") == 0 && url == NULL)
			url = v->u.object.values[i];
		if (jscan_keyin(k, skip))
			continue;
		haveep |= strcmp(k, "endpoint") == 0;
		jout_kval(g, k, v->u.object.values[i]);
	}
	if (item && (body != NULL || params != NULL)) {
		if (!haveep && url != NULL)
			jout_kval(g, "endpoint", url);
		else if (!haveep && body == NULL)
			jout_kstr(g, "endpoint", "/v1/messages");
		jout_kval(g, "body", body != NULL ? body : params);
		if (body == NULL)
			jout_kval(g, "params", params);
	}
	yajl_tree_free(v);
}

void
members_write(const struct jscan *s, yajl_gen g, const char *line,
    size_t len, const char *const *skip, int item)
{
	const struct json_span *sp;
	int i, ib = -1, ip = -1, iu = -1, haveep = 0;

	if (!jscan_whole(s)) {
		members_tree(g, line, skip, item);
		return;
	}
	for (i = 0; i < s->nspan; i++) {
		if ((sp = &s->span[i])->depth != 1)
			continue;
		if (strcmp(sp->key, "body") == 0 && ib < 0)
			ib = i;
		else if (strcmp(sp->key, "params") == 0 && ip < 0)
			ip = i;
		else if (strcmp(sp->key, "url") == 0 && iu < 0)
			iu = i;
		if (jscan_keyin(sp->key, skip))
			continue;
		haveep |= strcmp(sp->key, "endpoint") == 0;
		jout_key(g, sp->key);
		jout_raw(g, line + sp->off, sp->len);
	}
	if (!item || (ib < 0 && ip < 0))
		return;
	if (!haveep && iu >= 0) {
		jout_key(g, "endpoint");
		jout_raw(g, line + s->span[iu].off, s->span[iu].len);
	} else if (!haveep && ib < 0)
		jout_kstr(g, "endpoint", "/v1/messages");
	sp = &s->span[ib >= 0 ? ib : ip];
	jout_key(g, "body");
	jout_raw(g, line + sp->off, sp->len);
	if (ib < 0) {
		jout_key(g, "params");
		jout_raw(g, line + sp->off, sp->len);
	}
}

void
members_copy(struct jscan *s, yajl_gen g, const char *line, size_t len,
    const char *const *skip, int item)
{
	static const char *const none[] = { NULL };
	const char *const *deep = s->deep;
	char err[256];
	int ok;

	s->deep = none;		/* depth 1 alone: nothing below is copied apart */
	ok = jscan_parse(s, line, len, err, sizeof(err)) == 0;
	s->deep = deep;
	if (!ok) {
		members_tree(g, line, skip, item);
		return;
	}
	members_write(s, g, line, len, skip, item);
}
