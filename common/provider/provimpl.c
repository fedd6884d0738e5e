/*
 * provimpl.c: what the batch API implementations share (provimpl.h):
 * answers read as batch objects, ids checked before they go into paths,
 * batch calls, walks through batch lists, and batch times.
 * SPDX-License-Identifier: ISC
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/exits.h"
#include "base/rfc3339.h"
#include "base/xmem.h"
#include "json/jtree.h"
#include "provider/provimpl.h"

yajl_val
provider_answer(struct http *h, const char *what, const struct buf *body,
    const char *need)
{
	yajl_val v = NULL;

	if (body->len > 0)
		v = jtree_parse0(body->p);
	if (!YAJL_IS_OBJECT(v) || jtree_str(v, need) == NULL) {
		snprintf(h->err, sizeof(h->err),
		    "%s: answer is not a JSON object with a \"%s\" string",
		    what, need);
		yajl_tree_free(v);
		return NULL;
	}
	return v;
}

int
provider_safe_id(struct http *h, const char *id)
{
	const char *s;

	for (s = id; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' ||
		    *s == '.'))
			break;
	if (*id == '\0' || *s != '\0' || s - id > 256) {
		snprintf(h->err, sizeof(h->err), "bad id \"%.64s\"", id);
		h->status = 0;
		return -1;
	}
	return 0;
}

int
provider_job_init(yajl_val b, struct provider_job *j, const char *status,
    char *err, size_t errlen)
{
	memset(j, 0, sizeof(*j));
	j->id = jtree_str(b, "id");
	j->status = jtree_str(b, status);
	if (j->id == NULL || j->status == NULL) {
		snprintf(err, errlen, "batch object without \"%s\"",
		    j->id == NULL ? "id" : status);
		return -1;
	}
	return 0;
}

int
provider_json_time(yajl_val b, const char *key, long long *t, char *str, size_t n)
{
	const char *s;
	char *end;

	if (jtree_int(b, key, t) == 0)
		return 0;
	if ((s = jtree_str(b, key)) == NULL || *s == '\0')
		return -1;
	if (*s >= '0' && *s <= '9') {
		*t = strtoll(s, &end, 10);
		if (*end == '\0')
			return 0;
	}
	if (rfc3339_parse(s, t) != 0)
		return -1;
	if (str != NULL && strlen(s) < n)
		snprintf(str, n, "%s", s);
	return 0;
}

void
provider_job_times(yajl_val b, struct provider_job *j,
    const char *const *keys)
{
	long long t;
	char *val;

	for (; *keys != NULL && j->ntime < JOB_TIMES; keys++) {
		val = j->time[j->ntime].val;
		val[0] = '\0';
		if (provider_json_time(b, *keys, &t, val, sizeof(j->time[0].val)) != 0)
			continue;
		/* An RFC 3339 string passes through; numbers become one. */
		if (val[0] == '\0')
			provider_time(t, val, sizeof(j->time[0].val));
		j->time[j->ntime++].key = *keys;
	}
}

int
provider_batch_call(struct http *h, const char *method, const char *collection,
    const char *id, const char *suffix, yajl_val *batch)
{
	struct http_resp r;
	struct buf path = BUF_INIT;
	enum http_class c;
	int rc = 0;

	*batch = NULL;
	if (provider_safe_id(h, id) != 0)
		return QB_EX_DATAERR;
	buf_printf(&path, "%s/%s%s", collection, id, suffix);
	http_resp_init(&r);
	/*
	 * A POST (cancel) is retried only on 429, 5xx or when it surely was
	 * not sent: a 409 says the batch has ended (qb-providers(7), OPENAI
	 * "Status").
	 */
	c = http_json(h, method, path.p, NULL, 0, strcmp(method, "POST") == 0,
	    &r);
	if (c != HTTP_OK)
		rc = http_exitcode(c);
	else if ((*batch = provider_answer(h, path.p, &r.body, "id")) == NULL)
		rc = QB_EX_PROTOCOL;
	http_resp_free(&r);
	buf_free(&path);
	return rc;
}

int
provider_list_page(struct http *h, const char *path, struct http_resp *r,
    yajl_val *page, yajl_val *data, int *more)
{
	enum http_class c;

	if ((c = http_json(h, "GET", path, NULL, 0, 0, r)) != HTTP_OK)
		return http_exitcode(c);
	yajl_tree_free(*page);
	*page = r->body.len > 0 ? jtree_parse0(r->body.p) : NULL;
	*data = jtree_get(*page, "data");
	if (!YAJL_IS_ARRAY(*data)) {
		snprintf(h->err, sizeof(h->err), "GET %s: answer is not a list",
		    path);
		return QB_EX_PROTOCOL;
	}
	*more = jtree_true(*page, "has_more") && (*data)->u.array.len > 0;
	return 0;
}

int
provider_walk(struct http *h, const char *path, const char *cursor,
    const char *q, long long since, int (*visit)(void *arg, yajl_val data,
    size_t i), void *arg)
{
	struct http_resp r;
	struct buf url = BUF_INIT;
	yajl_val page = NULL, data, b;
	const char *id;
	char *after = NULL;
	long long t;
	size_t i;
	int rc = 0, more = 1, pages, stop = 0;

	http_resp_init(&r);
	for (pages = 0; more && !stop && pages < 10000; pages++) {
		buf_reset(&url);
		buf_printf(&url, "%s?limit=%d", path, PROVIDER_LIST_LIMIT);
		if (after != NULL)
			buf_printf(&url, "&%s=%s", cursor, after);
		if (q != NULL && *q != '\0')
			buf_printf(&url, "&%s", q);
		if ((rc = provider_list_page(h, url.p, &r, &page, &data,
		    &more)) != 0)
			break;
		for (i = 0; !stop && i < data->u.array.len; i++) {
			b = data->u.array.values[i];
			if (jtree_str(b, "id") == NULL)
				continue;
			/* Newest first: the first one older ends the walk. */
			if (provider_json_time(b, "created_at", &t, NULL, 0) ==
			    0 && t < since)
				more = 0, stop = 1;
			else
				stop = visit(arg, data, i);
		}
		/* Go on after the last one, unless it is not a usable id. */
		b = data->u.array.len > 0 ?
		    data->u.array.values[data->u.array.len - 1] : NULL;
		id = jtree_str(b, "id");
		if (more && (id == NULL || provider_safe_id(h, id) != 0 ||
		    (after != NULL && strcmp(after, id) == 0)))
			more = 0;
		if (more) {
			free(after);
			after = xstrdup(id);
		}
	}
	yajl_tree_free(page);
	free(after);
	buf_free(&url);
	http_resp_free(&r);
	return rc;
}
